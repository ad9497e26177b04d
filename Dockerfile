# The skein controller image (the chart's images.controller), for people who have Docker:
#   docker build -t skein/controller:$(node -p 'require("./package.json").version') .
# `make image` builds the same image without Docker (cmd/skein-image: Debian and npm
# packages, docs/design.md "Images"); test/image/dockerfile.test.ts checks that this
# file's final stage (ENTRYPOINT, USER, WORKDIR, ENV, EXPOSE, COPY destinations, the
# apt packages) and that builder describe the same image.
FROM node:20-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY cmd ./cmd
COPY pkg ./pkg
COPY test ./test
# The web view is bundled at build time (esbuild, a dev dependency) before dev dependencies go.
RUN npx tsc -p tsconfig.json && node dist/pkg/ui/bundle.js && npm prune --omit=dev --no-audit --no-fund

FROM node:20-slim
# iptables: the same image is the sidecar injector's init container (chart images.init).
RUN apt-get update && apt-get install -y --no-install-recommends iptables && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist/cmd ./dist/cmd
COPY --from=build /src/dist/pkg ./dist/pkg
# Read at run time: .proto files for xDS, the CRD schemas for validation (pkg/schema).
COPY protos ./protos
COPY charts/skein/crds ./charts/skein/crds
# The base image's unprivileged `node` user (UID/GID 1000), as the chart's securityContext expects;
# the chart mounts writable emptyDirs on /var/lib/skein (--state-dir) and /tmp.
USER 1000:1000
EXPOSE 15128 9090 9091 15127
ENTRYPOINT ["/usr/local/bin/node", "--max-semi-space-size=4", "/app/dist/cmd/skein-controller/main.js"]
