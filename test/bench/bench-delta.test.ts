import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CHANGE_KINDS } from './changes.js';
import { runBench } from './run.js';

// The miniature run again with Delta ADS clients: initial convergence, every
// change kind, and the restart, where proxies reconnect with
// initial_resource_versions and must count as complete again.
test('a small benchmark run over Delta ADS converges, sees every change and survives the restart', async () => {
  process.env['SKEIN_BENCH_QUIET'] = '1';
  const r = await runBench({
    proxies: 16,
    services: 8,
    mode: 'smi',
    changes: 1,
    workers: 1,
    quietMs: 200,
    idleMs: 300,
    skipStorm: false,
    skipTick: true,
    keep: false,
    delta: true,
  });
  assert.equal(r.initial.incomplete, 0);
  assert.ok(r.initial.responses >= 16 * 5, `responses ${r.initial.responses}`);
  assert.equal(r.idle.pushes, 0);
  for (const kind of CHANGE_KINDS) {
    const k = r.changes[kind];
    assert.ok(k, kind);
    assert.equal(k.noPush, 0, `${kind} reached no proxy`);
    assert.ok(k.proxies.mean > 0 && k.proxies.mean < 16, `${kind}: SMI scoping limits who hears of it`);
  }
  const add = r.changeSamples.find((s) => s.kind === 'endpoint-add');
  assert.ok(add?.reflecting !== undefined && add.reflecting > 0, 'some EDS carried the new pod IP');
  assert.equal(r.storm?.incomplete, 0);
});
