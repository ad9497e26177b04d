// The convergence oracle in local mode (manifest files): see oracle.ts and
// docs/design.md. Short by default; SKEIN_ORACLE_LONG=1 (make oracle) runs
// thousands of steps, SKEIN_ORACLE_SEED replays a failure.
import { test } from 'node:test';
import { LocalBackend } from './backends.js';
import { oracleSettings, runOracle } from './oracle.js';

const { seed, steps } = oracleSettings(200);

test(`local mode: every proxy converges on what a fresh controller serves (seed ${seed}, ${steps} steps)`, {
  timeout: 60_000 + steps * 2_000,
}, async (t) => {
  const result = await runOracle(new LocalBackend(), { seed, steps, convergeMs: 30_000 });
  t.diagnostic(JSON.stringify({ seed, ...result }));
});
