#!/usr/bin/env node
// envoy-api-gen: writes pkg/envoy/api/envoy.ts, the TypeScript types of the
// Envoy messages skein emits, from the protos the encoder loads
// (docs/design.md, "Typed Envoy messages"). Run after a change to
// protos/envoy-protos.txt, TypeUrl, AnyType or the @grpc/grpc-js-xds version:
//
//   npx tsc -p tsconfig.json && node dist/cmd/envoy-api-gen/main.js
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ENVOY_API_PATH, skeinEnvoyApi } from '../../pkg/envoy/api/skein.js';

// dist/cmd/envoy-api-gen → the repository root.
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const target = path.join(repo, ENVOY_API_PATH);
writeFileSync(target, skeinEnvoyApi());
process.stdout.write(`wrote ${target}\n`);
