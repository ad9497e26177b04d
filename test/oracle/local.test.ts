// The convergence oracle in local mode (manifest files): see oracle.ts and
// docs/design.md. Short by default; SKEIN_ORACLE_LONG=1 (make oracle) runs
// thousands of steps, SKEIN_ORACLE_SEED replays a failure.
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { LocalBackend } from './backends.js';
import { OracleFailure, oracleSettings, runOracle } from './oracle.js';

const { seed, steps } = oracleSettings(200, 2);

test(`local mode: every proxy converges on what a fresh controller serves (seed ${seed}, ${steps} steps)`, {
  timeout: 60_000 + steps * 2_000,
}, async (t) => {
  const result = await runOracle(new LocalBackend(), { seed, steps, convergeMs: 30_000 });
  t.diagnostic(JSON.stringify({ seed, ...result }));
});

test('negative control: a change the live controller never saw is reported, with the seed', async () => {
  // The fresh controller alone loses a Service every sidecar of the mesh has a cluster for.
  const backend = new LocalBackend({
    alterFresh: (dir) => rm(path.join(dir, 'service.shop.web.yaml'), { force: true }),
  });
  await assert.rejects(runOracle(backend, { seed: 11, steps: 20, convergeMs: 5_000 }), (err: unknown) => {
    assert.ok(err instanceof OracleFailure);
    assert.match(err.message, /seed 11, 20 steps; rerun with SKEIN_ORACLE_SEED=11/);
    assert.match(err.message, /Cluster shop\/web\|\d+: only the live controller serves it/);
    return true;
  });
});
