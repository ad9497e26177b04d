import { test } from 'node:test';
import { assertSmallBenchHealthy, runSmallBench } from './small-bench.js';

// The miniature run again with Delta ADS clients: initial convergence, every
// change kind, and the restart, where proxies reconnect with
// initial_resource_versions and must count as complete again.
test('a small benchmark run over Delta ADS converges, sees every change and survives the restart', async () => {
  assertSmallBenchHealthy(await runSmallBench({ delta: true }));
});
