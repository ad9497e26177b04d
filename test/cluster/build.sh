#!/usr/bin/env bash
# Builds the test cluster's binaries into test/cluster/bin/: kube-apiserver,
# kube-controller-manager, and for the test node (test/support/node.ts) kubelet,
# kube-proxy and kube-scheduler, from k8s.io/kubernetes, and an embedded etcd, at
# the versions go.mod pins. `make cluster-bin` calls this only when bin/ is missing
# or go.mod/go.sum/cmd changed; the Go build cache makes a rebuild cheap.
set -euo pipefail
cd "$(dirname "$0")"

# Two cores on the dev machines and CI: one package at a time per core.
export GOFLAGS="${GOFLAGS:-} -mod=mod"
version="$(go list -m -f '{{.Version}}' k8s.io/kubernetes)" # e.g. v1.36.3
minor="$(cut -d. -f2 <<<"$version")"

# Without these, /version reports v0.0.0-master (both packages feed it).
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done

mkdir -p bin
cmds=(etcd kube-apiserver kube-controller-manager kubelet kube-proxy kube-scheduler)
for cmd in "${cmds[@]}"; do
  echo "building $cmd ($version)" >&2
  go build -p 2 -trimpath -ldflags "$ldflags" -o "bin/$cmd" "./cmd/$cmd"
done
# go build leaves an up-to-date output untouched; make compares mtimes.
(cd bin && touch "${cmds[@]}")
