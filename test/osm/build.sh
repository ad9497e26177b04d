#!/usr/bin/env bash
# Builds test/osm/bin/osm-controller: the unmodified Open Service Mesh controller at
# the version go.mod pins, from the Go module proxy, as a peer for the benchmark
# (`make bench-peer`). The module is downloaded into the Go module cache, copied out
# of it (the cache is read-only) into a temporary directory and built there with
# OSM's own go.mod and go.sum. Nothing fetched is committed; `make osm-bin` calls
# this only when the binary is missing or the pin (go.mod, go.sum) changed.
set -euo pipefail
cd "$(dirname "$0")"

version="$(sed -n 's/^require github.com\/openservicemesh\/osm \(v[^ ]*\)$/\1/p' go.mod)"
[ -n "$version" ] || { echo "test/osm/go.mod: no github.com/openservicemesh/osm version" >&2; exit 1; }

export GOFLAGS="${GOFLAGS:-} -mod=mod"
# OSM's release builds are static (its Makefile: CGO_ENABLED=0).
export CGO_ENABLED=0
mkdir -p bin
echo "building osm-controller ($version)" >&2
# go.sum here pins the module's hash: a changed download fails.
src="$(go mod download -json "github.com/openservicemesh/osm@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
[ -d "$src" ] || { echo "go mod download gave no directory for osm $version" >&2; exit 1; }
work="$(mktemp -d)"
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
cp -r "$src/." "$work/"
chmod -R u+w "$work"
# Two cores on the dev machines and CI: one package at a time per core.
(cd "$work" && go build -p 2 -trimpath \
  -ldflags "-s -w -X github.com/openservicemesh/osm/pkg/version.Version=$version" \
  -o "$OLDPWD/bin/osm-controller" ./cmd/osm-controller)
# go build leaves an up-to-date output untouched; make compares mtimes.
touch bin/osm-controller
