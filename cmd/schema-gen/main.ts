#!/usr/bin/env node
// schema-gen: writes pkg/schema/generated/ (the validators of every type skein reads,
// precompiled; pkg/schema/codegen.ts) from pkg/schema/core.ts and charts/skein/crds.
// Run after changing either (pkg/schema/generated.test.ts fails until then):
//
//   npx tsc -p tsconfig.json && node dist/cmd/schema-gen/main.js
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { GENERATED_DIR, generateValidators } from '../../pkg/schema/codegen.js';
import { loadCrdVersions } from '../../pkg/schema/crds.js';
import { typeEntries } from '../../pkg/schema/table.js';

// dist/cmd/schema-gen → the repository root.
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const dir = path.join(repo, GENERATED_DIR);
mkdirSync(dir, { recursive: true });
const files = generateValidators(
  typeEntries(loadCrdVersions(path.join(repo, 'charts', 'skein', 'crds')), (f) => path.relative(repo, f)),
);
for (const [name, text] of Object.entries(files)) {
  writeFileSync(path.join(dir, name), text);
  process.stdout.write(`wrote ${path.join(GENERATED_DIR, name)} (${text.length} bytes)\n`);
}
