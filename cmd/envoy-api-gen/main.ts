#!/usr/bin/env node
// envoy-api-gen: writes pkg/envoy/api/envoy.ts, the TypeScript types of the
// Envoy messages skein emits, and protos/envoy-descriptor.json, the pruned
// descriptor the encoder loads, both from the Envoy protos (docs/design.md,
// "Typed Envoy messages"). Run after a change to
// protos/envoy-protos.txt, TypeUrl, AnyType or the @grpc/grpc-js-xds version:
//
//   npx tsc -p tsconfig.json && node dist/cmd/envoy-api-gen/main.js
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  DESCRIPTOR_PATH,
  ENVOY_API_PATH,
  skeinDescriptor,
  skeinEnvoyApi,
} from '../../pkg/envoy/api/skein.js';

// dist/cmd/envoy-api-gen → the repository root.
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
for (const [file, text] of [
  [ENVOY_API_PATH, skeinEnvoyApi()],
  [DESCRIPTOR_PATH, skeinDescriptor()],
] as const) {
  const target = path.join(repo, file);
  writeFileSync(target, text);
  process.stdout.write(`wrote ${target}\n`);
}
