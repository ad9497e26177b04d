import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { GENERATED_DIR, generateValidators } from './codegen.js';
import { crdDirectory, loadCrdVersions } from './crds.js';
import { typeEntries } from './table.js';

test('pkg/schema/generated matches core.ts and the chart CRDs (else run cmd/schema-gen)', () => {
  const crds = crdDirectory();
  const repo = path.resolve(crds, '..', '..', '..');
  const files = generateValidators(typeEntries(loadCrdVersions(crds), (f) => path.relative(repo, f)));
  assert.deepEqual(Object.keys(files).sort(), ['prune.ts', 'reject.ts', 'types.ts']);
  for (const [name, text] of Object.entries(files)) {
    const committed = readFileSync(path.join(repo, GENERATED_DIR, name), 'utf8');
    assert.ok(
      committed === text,
      `${GENERATED_DIR}/${name} is stale: npx tsc -p tsconfig.json && node dist/cmd/schema-gen/main.js`,
    );
  }
});

test('the generated table lists each CRD kind with its validator in both modes', async () => {
  const { TYPES } = await import('./generated/types.js');
  const prune: Record<string, unknown> = await import('./generated/prune.js');
  const reject: Record<string, unknown> = await import('./generated/reject.js');
  for (const t of TYPES) {
    assert.equal(typeof prune[t.validator], 'function', `${t.kind}: pruning validator`);
    assert.equal(
      typeof reject[t.validator],
      t.alwaysPrune ? 'undefined' : 'function',
      `${t.kind}: rejecting`,
    );
  }
  assert.ok(TYPES.some((t) => t.kind === 'TrafficTarget' && t.source.startsWith('charts/skein/crds/')));
});
