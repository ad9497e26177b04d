// Resilience policy for proxyless gRPC, through real grpc-js-xds clients and
// servers (the controller in local mode, SMI mode, the bookstore example):
// - Retry (gRFC A44): bookstore-v1 answers every second call UNAVAILABLE;
//   without a Retry half of the calls fail, with `retryOn: unavailable` all
//   but a handful succeed.
// - UpstreamTrafficSetting `maxRequests` (gRFC A32, circuit breaking):
//   bookstore-v2 answers after a delay; calls above the threshold in flight
//   fail at once with UNAVAILABLE, calls below it all succeed.
// - outlierDetection: one of two bookstore-v1 endpoints always fails. What
//   grpc-js-xds does with the setting is measured (see the test's comment).
// Each batch of calls is a fresh caller process (its own channel), since
// grpc-js-xds keeps no per-call state across processes.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eventually } from '../support/kube-registry-fixture.js';
import { LocalMesh } from '../support/local-mesh.js';

const V1 = 'bookstore-v1.bookstore.svc.cluster.local';
const V2 = 'bookstore-v2.bookstore.svc.cluster.local';

interface Done {
  ok: Record<string, number>;
  errors: Record<string, number>;
  maxMs: Record<string, number>;
}

/** One caller process (bookbuyer) making `args`' calls to `host`; its `done` line. */
async function calls(mesh: LocalMesh, host: string, args: string[], timeoutMs = 120_000): Promise<Done> {
  const c = mesh.startCaller('bookbuyer', 'bookbuyer', host, mesh.port(14001), args);
  return (await c.waitFor((l) => l['type'] === 'done', timeoutMs)) as unknown as Done;
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

    await mesh.writeManifest(
      'uts.yaml',
      `apiVersion: policy.skein.dev/v1alpha1
kind: UpstreamTrafficSetting
metadata: { name: bookstore-v2, namespace: bookstore }
spec:
  host: ${V2}
  connectionSettings: { http: { maxRequests: ${LIMIT} } }
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
