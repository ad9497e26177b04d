// Resilience policy for proxyless gRPC, through real grpc-js-xds clients and
// servers (the controller in local mode, SMI mode, the bookstore example):
// - Retry (gRFC A44): bookstore-v1 answers every second call UNAVAILABLE;
//   without a Retry half of the calls fail, with `retryOn: unavailable` all
//   but a handful succeed.
// - UpstreamTrafficSetting `maxRequests` (gRFC A32, circuit breaking):
//   bookstore-v2 answers after a delay; calls above the threshold in flight
//   fail at once with UNAVAILABLE, calls below it all succeed.
// - outlierDetection: one of two bookstore-v1 endpoints always fails. With
//   consecutive-error fields only, grpc-js-xds gets nothing it implements and
//   half the calls keep failing; with failurePercentage the endpoint is ejected.
// Each batch of calls is a fresh caller process (its own channel), since
// grpc-js-xds keeps no per-call state across processes.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { ConfigDump } from '../../pkg/debug/config-dump.js';
import { type ProtoObject, type ProtoValue, TypeUrl } from '../../pkg/envoy/types.js';
import { at } from '../support/envoy/pick.js';
import { eventually } from '../support/kube-registry-fixture.js';
import { LocalMesh } from '../support/local-mesh.js';

const V1 = 'bookstore-v1.bookstore.svc.cluster.local';
const V2 = 'bookstore-v2.bookstore.svc.cluster.local';
// bookbuyer's skein.dev/proxy-uuid in the example.
const BUYER_UUID = '00000000-0000-4000-8000-000000000011';

interface Done {
  ok: Record<string, number>;
  errors: Record<string, number>;
  maxMs: Record<string, number>;
  lastAtMs: Record<string, number>;
}

/** One caller process (bookbuyer) making `args`' calls to `host`; its `done` line. */
async function calls(mesh: LocalMesh, host: string, args: string[], timeoutMs = 120_000): Promise<Done> {
  const c = mesh.startCaller('bookbuyer', 'bookbuyer', host, mesh.port(14001), args);
  return (await c.waitFor((l) => l['type'] === 'done', timeoutMs)) as unknown as Done;
}

/** The bookstore-v1 Cluster the controller last sent bookbuyer's connected client (/debug/config_dump). */
async function sentV1Cluster(mesh: LocalMesh): Promise<ProtoObject | undefined> {
  const res = await fetch(`http://127.0.0.1:${mesh.ports.http}/debug/config_dump?proxy=${BUYER_UUID}`);
  const dump = (await res.json()) as ConfigDump;
  return dump.types[TypeUrl.Cluster]?.resources.find((r) =>
    String(r['name']).startsWith('bookstore/bookstore-v1|'),
  );
}

/** Writes the UpstreamTrafficSetting for `host` (a bookstore service): `spec` is YAML under spec, after host. */
function writeSetting(mesh: LocalMesh, host: string, spec: string): Promise<void> {
  const name = host.split('.')[0] ?? '';
  return mesh.writeManifest(
    'uts.yaml',
    `apiVersion: policy.skein.dev/v1alpha1
kind: UpstreamTrafficSetting
metadata: { name: ${name}, namespace: bookstore }
spec:
  host: ${host}
${spec}`,
  );
}

const sum = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);

describe('proxyless gRPC: a Retry makes a backend that fails half its calls whole', () => {
  const CALLS = 1000;
  let mesh: LocalMesh;

  before(async () => {
    mesh = await LocalMesh.start();
    await mesh.startServer('bookstore', 'bookstore-v1', '127.0.0.21', 14021, false, ['--fail-ratio', '0.5']);
  });
  after(async () => {
    await mesh?.stop();
  });

  test(`without a Retry about half of ${CALLS} calls fail; with retryOn unavailable at least 99 % succeed`, async () => {
    const without = await calls(mesh, V1, ['--count', String(CALLS), '--interval-ms', '0']);
    const plain = without.ok['bookstore-v1'] ?? 0;
    assert.ok(plain > CALLS * 0.35 && plain < CALLS * 0.65, JSON.stringify(without));
    assert.deepEqual(Object.keys(without.errors), ['UNAVAILABLE']);

    await mesh.writeManifest(
      'retry.yaml',
      `apiVersion: policy.skein.dev/v1alpha1
kind: Retry
metadata: { name: buyer-to-v1, namespace: bookbuyer }
spec:
  source: { kind: ServiceAccount, name: bookbuyer, namespace: bookbuyer }
  destinations: [{ kind: Service, name: bookstore-v1, namespace: bookstore }]
  retryPolicy: { retryOn: unavailable, numRetries: 3, retryBackoffBaseInterval: 1ms }
`,
    );
    // In force once a fresh client's 50 calls all succeed.
    await eventually(
      'the Retry reaches new clients',
      async () => {
        const probe = await calls(mesh, V1, ['--count', '50', '--interval-ms', '0']);
        assert.equal(probe.ok['bookstore-v1'], 50, JSON.stringify(probe));
      },
      30_000,
    );
    const withRetry = await calls(mesh, V1, ['--count', String(CALLS), '--interval-ms', '0']);
    const good = withRetry.ok['bookstore-v1'] ?? 0;
    console.log(
      `proxyless Retry: without ${plain}/${CALLS} succeeded ${JSON.stringify(without.errors)}; with retryOn unavailable, numRetries 3: ${good}/${CALLS} ${JSON.stringify(withRetry.errors)}`,
    );
    assert.ok(good >= CALLS * 0.99, JSON.stringify(withRetry));
  });
});

describe('proxyless gRPC: maxRequests sheds calls above the threshold at once (circuit breaking)', () => {
  const DELAY_MS = 2000;
  const STAGGER_MS = 25;
  const LIMIT = 5;
  const BURST = 20;
  let mesh: LocalMesh;

  before(async () => {
    mesh = await LocalMesh.start();
    await mesh.startServer('bookstore', 'bookstore-v2', '127.0.0.22', 14022, false, [
      '--delay-ms',
      String(DELAY_MS),
      // Calls in flight outlive the default 2 s connection age's 500 ms grace.
      '--max-connection-age-ms',
      '600000',
    ]);
  });
  after(async () => {
    await mesh?.stop();
  });

  /**
   * `n` calls in flight after one warm-up call (the channel connected), started
   * STAGGER_MS apart: grpc-js-xds checks the limit when it picks an endpoint but
   * counts a call only once it has started, after the credentials' metadata
   * step (grpc-js load-balancing-call.js), so calls started in the same tick
   * all pass the check (measured below). Staggered, every call has started
   * before the next one is picked; all are in flight while the server waits.
   */
  const inFlight = (n: number, staggerMs = STAGGER_MS) =>
    calls(mesh, V2, [
      '--warmup',
      '1',
      '--count',
      String(n),
      '--concurrency',
      String(n),
      '--stagger-ms',
      String(staggerMs),
      '--interval-ms',
      '0',
    ]);

  test(`${BURST} calls in flight with maxRequests ${LIMIT}: ${LIMIT} answered, the rest UNAVAILABLE at once; ${LIMIT} in flight all succeed`, async () => {
    const free = await inFlight(BURST);
    assert.deepEqual(free.ok, { 'bookstore-v2': BURST }, JSON.stringify(free));

    await writeSetting(
      mesh,
      V2,
      `  connectionSettings: { http: { maxRequests: ${LIMIT} } }
`,
    );
    let shed = free;
    await eventually(
      'the threshold reaches new clients',
      async () => {
        shed = await inFlight(BURST);
        assert.ok((shed.errors['UNAVAILABLE'] ?? 0) > 0, JSON.stringify(shed));
      },
      30_000,
    );
    // grpc-js-xds counts calls in flight per cluster in the process (load-balancer-xds-cluster-impl.js):
    // with every call still waiting for the slow answer (the last starts 475 ms after the first),
    // exactly LIMIT are let through.
    assert.deepEqual(shed.ok, { 'bookstore-v2': LIMIT }, JSON.stringify(shed));
    assert.deepEqual(shed.errors, { UNAVAILABLE: BURST - LIMIT }, JSON.stringify(shed));
    // Shed without reaching the server: each failure came long before the server's delay.
    const failMs = shed.maxMs['UNAVAILABLE'] ?? Number.POSITIVE_INFINITY;
    assert.ok(failMs < DELAY_MS / 2, `slowest shed call ${failMs} ms (server delay ${DELAY_MS} ms)`);

    const below = await inFlight(LIMIT);
    // The same calls all started in one tick: the check sees none started yet.
    const sameTick = await inFlight(BURST, 0);
    assert.deepEqual(below.ok, { 'bookstore-v2': LIMIT }, JSON.stringify(below));
    assert.equal(sum(below.errors), 0, JSON.stringify(below));
    console.log(
      `proxyless maxRequests ${LIMIT}: without it ${BURST}/${BURST} in flight succeeded; with it ${shed.ok['bookstore-v2']} answered (slowest ${shed.maxMs['bookstore-v2']} ms) and ${shed.errors['UNAVAILABLE']} UNAVAILABLE (slowest ${failMs} ms); ${LIMIT} in flight: ${below.ok['bookstore-v2']}/${LIMIT} succeeded; ${BURST} started in one tick: ${JSON.stringify(sameTick.ok)} ${JSON.stringify(sameTick.errors)}`,
    );
  });
});

describe('proxyless gRPC: outlierDetection ejects by failure percentage (gRFC A50), not by consecutive errors', () => {
  const CALLS = 400;
  let mesh: LocalMesh;

  before(async () => {
    mesh = await LocalMesh.start();
    await Promise.all([
      mesh.startServer('bookstore', 'bookstore-v1', '127.0.0.21', 14021),
      // A second bookstore-v1 endpoint that fails every call.
      mesh.addBookstoreV1Endpoint('bookstore-v1b', '127.0.0.25', '25', ['--fail-ratio', '1']),
    ]);
  });
  after(async () => {
    await mesh?.stop();
  });

  // skein's outlierDetection is Envoy's consecutive-error ejection. grpc-js 1.14
  // implements gRFC A50 only (success-rate and failure-percentage ejection,
  // load-balancer-outlier-detection.js), so skein sends a proxyless client no
  // outlier_detection: the failing endpoint keeps its round-robin share. Measured
  // over 4 s of calls, four times the setting's 1 s interval.
  test(`with outlierDetection consecutive5xx 3, interval 1s, the failing endpoint keeps failing half of ${CALLS} calls`, async () => {
    await writeSetting(
      mesh,
      V1,
      `  outlierDetection: { consecutive5xx: 3, interval: 1s, baseEjectionTime: 30s, maxEjectionPercent: 50 }
  # A field grpc-js-xds does read: it shows that this setting reached the client.
  connectionSettings: { http: { maxRequests: 100 } }
`,
    );
    // A client started after the write gets whatever the controller sends for it.
    await eventually('both endpoints answer', async () => {
      const probe = await calls(mesh, V1, ['--count', '20', '--interval-ms', '10']);
      assert.ok(
        (probe.ok['bookstore-v1'] ?? 0) > 0 && (probe.errors['UNAVAILABLE'] ?? 0) > 0,
        JSON.stringify(probe),
      );
    });
    const c = mesh.startCaller('bookbuyer', 'bookbuyer', V1, mesh.port(14001), [
      '--count',
      String(CALLS),
      '--interval-ms',
      '10',
    ]);
    // What this client was sent for the service: the setting's max_requests, no outlier_detection.
    let cluster: ProtoObject | undefined;
    await eventually('the client has the setting', async () => {
      cluster = await sentV1Cluster(mesh);
      assert.equal(
        at(cluster, 'circuit_breakers', 'thresholds', 0, 'max_requests', 'value'),
        100,
        JSON.stringify(cluster),
      );
    });
    assert.equal(at(cluster, 'outlier_detection'), undefined, JSON.stringify(cluster));
    const done = (await c.waitFor((l) => l['type'] === 'done', 120_000)) as unknown as Done;
    // The last quarter of the calls, after several intervals: still about half fail.
    const lines = c.lines.filter((l) => l['type'] === 'stats');
    const lastQuarter = lines.slice(Math.floor((lines.length * 3) / 4));
    let okLate = 0;
    let failLate = 0;
    for (const l of lastQuarter) {
      okLate += sum((l['ok'] ?? {}) as Record<string, number>);
      failLate += sum((l['errors'] ?? {}) as Record<string, number>);
    }
    const failed = done.errors['UNAVAILABLE'] ?? 0;
    console.log(
      `proxyless outlierDetection (consecutive5xx 3, interval 1s): ${failed}/${CALLS} calls failed over the run, ${failLate}/${okLate + failLate} in its last quarter: no ejection`,
    );
    assert.ok(failed > CALLS * 0.35, JSON.stringify(done));
    assert.ok(
      failLate > (okLate + failLate) * 0.3,
      `last quarter: ${failLate} of ${okLate + failLate} failed`,
    );
  });

  test('with failurePercentage (threshold 50, requestVolume 5, interval 1s) the failing endpoint is ejected and every later call succeeds', async () => {
    await writeSetting(
      mesh,
      V1,
      `  outlierDetection:
    interval: 1s
    baseEjectionTime: 30s
    maxEjectionPercent: 50
    failurePercentage: { threshold: 50, minimumHosts: 2, requestVolume: 5 }
`,
    );
    // A probe client shows when the controller sends the setting; the measured client starts after.
    const probe = mesh.startCaller('bookbuyer', 'bookbuyer', V1, mesh.port(14001), ['--interval-ms', '50']);
    let od: ProtoValue | undefined;
    await eventually('clients get outlier_detection', async () => {
      const cluster = await sentV1Cluster(mesh);
      od = at(cluster, 'outlier_detection');
      assert.ok(od, JSON.stringify(cluster));
    });
    await probe.stop();
    const INTERVAL_MS = 1000;
    const done = await calls(mesh, V1, ['--count', String(CALLS), '--interval-ms', '10']);
    const failed = done.errors['UNAVAILABLE'] ?? 0;
    const lastFailureMs = done.lastAtMs['UNAVAILABLE'] ?? 0;
    const runMs = done.lastAtMs['bookstore-v1'] ?? 0;
    console.log(
      `proxyless outlierDetection failurePercentage 50 %, interval 1s: ${failed}/${CALLS} calls failed, the last ${lastFailureMs} ms after the first call; then only bookstore-v1 answered until ${runMs} ms (${JSON.stringify(done.ok)}); sent ${JSON.stringify(od)}`,
    );
    // grpc-js checks every interval from the config's arrival: the first check that sees
    // requestVolume calls on both endpoints ejects: the first, or on a loaded machine (calls
    // slower than 100 ms) a later one. Measured 1.2–2.7 s; bounded at five intervals.
    assert.ok(lastFailureMs < 5 * INTERVAL_MS, `last failure at ${lastFailureMs} ms`);
    assert.ok(failed < CALLS / 4, JSON.stringify(done));
    assert.ok(
      runMs > lastFailureMs + 2 * INTERVAL_MS,
      `the run went on ${runMs - lastFailureMs} ms after the last failure`,
    );
    assert.equal(Object.keys(done.ok).join(), 'bookstore-v1');
  });
});
