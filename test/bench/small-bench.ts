// The miniature benchmark run the bench tests share: 16 proxies, 8 services,
// SMI mode, every change kind once and the restart, with the checks that hold
// for SotW and Delta ADS clients alike.
import assert from 'node:assert/strict';
import type { BenchOptions } from './args.js';
import { CHANGE_KINDS } from './changes.js';
import type { BenchResult } from './report.js';
import { runBench } from './run.js';

export const SMALL_BENCH_PROXIES = 16;

export function runSmallBench(extra: Partial<BenchOptions> = {}): Promise<BenchResult> {
  process.env['SKEIN_BENCH_QUIET'] = '1';
  return runBench({
    proxies: SMALL_BENCH_PROXIES,
    services: 8,
    mode: 'smi',
    changes: 1,
    workers: 1,
    fleetTransport: 'h2',
    quietMs: 200,
    idleMs: 300,
    skipStorm: false,
    skipTick: true,
    keep: false,
    timeoutS: 120,
    ...extra,
  });
}

/** Converged, quiet when idle, every change heard by some (not all) proxies, complete after the restart. */
export function assertSmallBenchHealthy(r: BenchResult): void {
  const n = SMALL_BENCH_PROXIES;
  assert.equal(r.initial.incomplete, 0);
  // Five types per proxy at least, every one ACKed.
  assert.ok(r.initial.responses >= n * 5, `responses ${r.initial.responses}`);
  assert.equal(r.idle.pushes, 0);
  for (const kind of CHANGE_KINDS) {
    const k = r.changes[kind];
    assert.ok(k, kind);
    assert.equal(k.noPush, 0, `${kind} reached no proxy`);
    assert.ok(k.proxies.mean > 0 && k.proxies.mean < n, `${kind}: SMI scoping limits who hears of it`);
  }
  const add = r.changeSamples.find((s) => s.kind === 'endpoint-add');
  assert.ok(add?.reflecting !== undefined && add.reflecting > 0, 'some EDS carried the new pod IP');
  assert.equal(r.storm?.incomplete, 0);
  // The bound: a measured loopback speed, and bytes by type that add up to the bytes sent.
  assert.ok(r.loopback.mbPerS > 0 && r.loopback.roundsMbPerS.length > 0);
  const byType = Object.values(r.initial.bytesByType).reduce((a, b) => a + b, 0);
  assert.equal(byType, r.initial.bytes);
  assert.ok(r.initial.bytesByType.LDS > 0 && r.initial.bytesByType.SDS > 0);
  assert.ok((r.storm?.bytes ?? 0) > 0, 'the restarted controller sent the fleet its configuration again');
}
