import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertSmallBenchHealthy, runSmallBench } from './small-bench.js';

// A miniature run of the whole benchmark: real controller process, real mTLS
// ADS clients in a worker process, every change kind once, and the restart.
test('a small benchmark run converges, sees every change and survives the restart', async () => {
  const r = await runSmallBench();
  assertSmallBenchHealthy(r);
  assert.ok(r.initial.convergenceMs > 0);
  assert.ok((r.storm?.fromKillMs ?? 0) > 0);
});
