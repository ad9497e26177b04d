#!/usr/bin/env bash
# Builds test/envoyvalidate/bin/envoyvalidate, Envoy's validation rules from
# go-control-plane at the version go.mod pins. `make envoyvalidate-bin` calls
# this only when the binary is missing or go.mod/go.sum/*.go changed; the Go
# build cache makes a rebuild cheap.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p bin
echo "building envoyvalidate (go-control-plane/envoy $(go list -m -f '{{.Version}}' github.com/envoyproxy/go-control-plane/envoy))" >&2
go build -p 2 -trimpath -ldflags "-s -w" -o bin/envoyvalidate .
# go build leaves an up-to-date output untouched; make compares mtimes.
touch bin/envoyvalidate
