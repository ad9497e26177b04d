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

// Two replicas: the proxies spread over both, and when one is SIGKILLed those it held complete
// again on the survivor, which was never restarted.
test('with two replicas, the proxies of a killed one complete again on the survivor', async () => {
  const r = await runSmallBench({ replicas: 2 });
  assert.equal(r.initial.incomplete, 0);
  const f = r.failover;
  assert.ok(f, 'a failover was measured instead of the storm');
  assert.equal(r.storm, undefined);
  assert.ok(f.moved > 0 && f.moved < 16, `the killed replica held ${f.moved} of 16`);
  assert.equal(f.incomplete, 0);
  assert.ok(f.fromKillMs > 0);
  assert.ok(f.streamEnds >= f.moved, `${f.streamEnds} stream ends for ${f.moved} moved proxies`);
  assert.ok(f.bytes > 0, 'the survivor sent the moved proxies their configuration');
});
