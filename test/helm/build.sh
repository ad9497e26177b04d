#!/usr/bin/env bash
# Installs helm into test/helm/bin/helm for the chart tests (test/kube/helm.test.ts)
# at the pinned version, from Go modules: `make helm-bin` calls this only when the
# binary is missing or this script changed; the Go module and build caches make a
# rebuild cheap.
set -euo pipefail
cd "$(dirname "$0")"

HELM_VERSION=v3.22.0

# -mod=mod: `go install pkg@version` ignores any go.mod here and resolves helm's own.
export GOFLAGS="${GOFLAGS:-} -mod=mod"
export GOBIN="$PWD/bin"
mkdir -p bin
echo "building helm ($HELM_VERSION)" >&2
# Two cores on the dev machines and CI: one package at a time per core.
go install -p 2 -trimpath -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" \
  "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
# go install leaves an up-to-date output untouched; make compares mtimes.
touch bin/helm
