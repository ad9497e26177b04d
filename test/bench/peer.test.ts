import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { test } from 'node:test';
import { CHANGE_KINDS } from './changes.js';
import { busyOsmPort, OSM_BIN } from './osm-peer.js';
import { type PeerBenchOptions, type PeerBenchResult, runPeerBench } from './peer.js';
import { formatPeerReport } from './peer-report.js';

// The peer comparison in miniature: the real osm-controller v1.2.4 and skein in
// Kubernetes mode, one after the other, each serving the same 4 mTLS ADS clients
// on one real API server, every change kind once. osm-controller is built by
// `make osm-bin` (test/osm, from the Go module proxy), which `make test` does not
// run: without the binary the test is skipped. osm-controller binds fixed ports
// (15128, 9091, 9093) on every interface; when another process holds one, the test
// is skipped too, saying which.
async function skipReason(): Promise<string | false> {
  if (!existsSync(OSM_BIN)) return `${OSM_BIN} missing (make osm-bin)`;
  const busy = await busyOsmPort();
  return busy === undefined ? false : `port ${busy} is in use; osm-controller needs it`;
}

/** The peer bench in miniature: 4 proxies, 2 services, every change kind once. */
function runSmallPeerBench(extra: Pick<PeerBenchOptions, 'skipStorm' | 'only'>): Promise<PeerBenchResult> {
  process.env['SKEIN_BENCH_QUIET'] = '1';
  return runPeerBench({
    proxies: 4,
    services: 2,
    mode: 'smi',
    changes: 1,
    workers: 1,
    fleetTransport: 'h2',
    quietMs: 200,
    idleMs: 300,
    timeoutS: 60,
    ...extra,
  });
}

test('OSM v1.2.4 and skein both converge the same fleet and push every change kind', {
  skip: await skipReason(),
  timeout: 240_000,
}, async () => {
  const r = await runSmallPeerBench({ skipStorm: true });
  assert.deepEqual(
    r.runs.map((run) => run.name),
    ['osm', 'skein'],
  );
  for (const run of r.runs) {
    assert.equal(run.initial.incomplete, 0, `${run.name}: every proxy complete`);
    // CDS, LDS, EDS, RDS and SDS at least, each ACKed by every proxy.
    assert.ok(run.initial.responses >= 4 * 5, `${run.name}: ${run.initial.responses} responses`);
    assert.ok(run.baselineRssMB > 0, `${run.name}: RSS read from /proc`);
    for (const kind of CHANGE_KINDS) {
      const k = run.changes[kind];
      assert.ok(k, `${run.name} ${kind}`);
      assert.equal(k.noPush, 0, `${run.name}: ${kind} reached no proxy`);
    }
    // The new pod's address reached some proxy's EDS (checked by content, not by ACK alone).
    assert.ok((run.changes['endpoint-add']?.contentMs?.n ?? 0) > 0, `${run.name}: no EDS showed the new pod`);
  }
});

// skein's half alone needs no OSM binary, so it runs with `make test`: the same fleet, changes and
// storm on the real API server, and the report sets each time beside its bound (issue 17 §4).
test("skein's half of the peer bench converges, pushes every change kind, survives the storm, and reports each time against its bound", {
  timeout: 240_000,
}, async () => {
  const r = await runSmallPeerBench({ skipStorm: false, only: ['skein'] });
  const [run] = r.runs;
  assert.ok(run && r.runs.length === 1 && run.name === 'skein');
  assert.equal(run.initial.incomplete, 0);
  for (const kind of CHANGE_KINDS) assert.equal(run.changes[kind]?.noPush, 0, `${kind} reached no proxy`);
  assert.equal(run.storm?.incomplete, 0, 'every proxy back after the storm');
  assert.ok(r.loopback.mbPerS > 0);
  const report = formatPeerReport(r);
  // Every bound row carries a number for skein: the time over the bytes at loopback speed, above 1.
  const boundRows = report.split('\n').filter((l) => l.includes('÷ its bound'));
  assert.equal(boundRows.length, 2 + CHANGE_KINDS.length + 1, report);
  for (const row of boundRows.slice(0, -1)) {
    const cells = row.trim().split(/\s{2,}/);
    const skein = Number(cells[1]);
    assert.ok(Number.isFinite(skein) && skein >= 1, row);
  }
  assert.match(report, /loopback TLS speed, \d+\.\d MB\/s/);
});
