import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ProxyIdentity } from '../mesh/identity.js';
import { EdgeStats } from './collector.js';
import type { MetricFamily } from './wire.js';

function proxy(uuid: string, sa = 'caller'): ProxyIdentity {
  return {
    uuid,
    kind: 'sidecar',
    namespace: 'shop',
    serviceAccount: sa,
    trustDomain: 'cluster.local',
    cn: `${uuid}.sidecar.${sa}.shop.cluster.local`,
  };
}

/** What a sidecar sends for one upstream: cumulative counters and latency (all under 5 ms). */
function report(cluster: string, requests: number, ok: number, failed: number): MetricFamily[] {
  const c = (suffix: string, value: number): MetricFamily => ({
    name: `cluster.${cluster}.${suffix}`,
    type: 'COUNTER',
    metrics: [{ labels: {}, counter: value }],
  });
  return [
    c('upstream_rq_total', requests),
    c('upstream_rq_2xx', ok),
    c('upstream_rq_5xx', failed),
    {
      name: `cluster.${cluster}.upstream_rq_time`,
      type: 'HISTOGRAM',
      metrics: [
        {
          labels: {},
          histogram: {
            count: ok + failed,
            sum: 0,
            buckets: [
              { upperBound: 1, cumulativeCount: ok },
              { upperBound: 5, cumulativeCount: ok + failed },
            ],
          },
        },
      ],
    },
  ];
}

function setup(opts: { maxPairs?: number } = {}) {
  const clock = { now: 1_000_000 };
  const stats = new EdgeStats({
    isService: (k) => k === 'shop/flaky' || k === 'shop/steady',
    now: () => clock.now,
    ...opts,
  });
  return { clock, stats };
}

test('the first message is a baseline; later ones count, per edge: rate, success, latency', () => {
  const { clock, stats } = setup();
  const r = stats.open(proxy('u1'));
  r.report(report('shop/flaky|8080', 500, 250, 250)); // before the stream: not counted
  clock.now += 5_000;
  r.report(report('shop/flaky|8080', 600, 300, 300));
  clock.now += 5_000;
  r.report(report('shop/flaky|8080', 700, 380, 320));
  const [edge, ...rest] = stats.edges();
  assert.deepEqual(rest, []);
  assert.equal(edge?.source, 'shop/caller');
  assert.equal(edge?.destination, 'shop/flaky');
  assert.equal(edge?.requests, 200);
  assert.equal(edge?.errors, 70);
  assert.equal(edge?.successRate, 130 / 200);
  assert.deepEqual(edge?.total, { requests: 200, responses: 200, errors: 70 });
  // From the baseline: 5 s since the first counted message plus the flush interval before it.
  assert.equal(edge?.seconds, 10);
  assert.equal(edge?.rps, 200 / 10);
  // 130 of 200 under 1 ms, the rest in (1, 5]: p50 in the first bucket, p99 near 5 ms.
  assert.ok(edge?.p50Ms !== undefined && edge.p50Ms <= 1, String(edge?.p50Ms));
  assert.ok(edge?.p99Ms !== undefined && edge.p99Ms > 4.5 && edge.p99Ms <= 5, String(edge?.p99Ms));
});

test('a cluster first reported later starts from zero; a restarted sidecar (counters down) counts anew', () => {
  const { clock, stats } = setup();
  const r = stats.open(proxy('u1'));
  r.report([]);
  clock.now += 5_000;
  r.report(report('shop/steady|80', 10, 10, 0));
  assert.equal(stats.edges()[0]?.requests, 10);
  clock.now += 5_000;
  r.report(report('shop/steady|80', 4, 4, 0));
  assert.equal(stats.edges()[0]?.requests, 14);
  assert.equal(stats.edges()[0]?.successRate, 1);
});

test('proxies of one identity add up into one edge; each proxy keeps its own figures', () => {
  const { clock, stats } = setup();
  const a = stats.open(proxy('u1'));
  const b = stats.open(proxy('u2'));
  const other = stats.open(proxy('u3', 'batch'));
  for (const r of [a, b, other]) r.report([]);
  clock.now += 5_000;
  a.report(report('shop/flaky|8080', 30, 30, 0));
  b.report(report('shop/flaky|8080', 10, 0, 10));
  other.report(report('shop/steady|80', 7, 7, 0));
  const edges = stats.edges().map((e) => [e.source, e.destination, e.requests, e.successRate, e.proxies]);
  assert.deepEqual(edges, [
    ['shop/batch', 'shop/steady', 7, 1, 1],
    ['shop/caller', 'shop/flaky', 40, 0.75, 2],
  ]);
  const one = stats.proxy('u2');
  assert.equal(one?.identity, 'shop/caller');
  assert.equal(one?.streams, 1);
  assert.deepEqual(
    one?.upstreams.map((u) => [u.service, u.requests, u.errors]),
    [['shop/flaky', 10, 10]],
  );
  b.close();
  assert.equal(stats.proxy('u2')?.streams, 0);
  assert.equal(stats.proxy('nobody'), undefined);
});

test('only services of the mesh count: other clusters and unknown services are dropped', () => {
  const { clock, stats } = setup();
  const r = stats.open(proxy('u1'));
  r.report([]);
  clock.now += 5_000;
  r.report([
    ...report('shop/invented|80', 1000, 1000, 0),
    ...report('passthrough-outbound', 5, 5, 0),
    ...report('shop/flaky|8080|local', 5, 5, 0),
  ]);
  assert.deepEqual(stats.edges(), []);
  assert.equal(stats.pairCount, 0);
});

test('memory is bounded: pairs over the cap are dropped and counted; silent pairs leave after the window', () => {
  const { clock, stats } = setup({ maxPairs: 1 });
  const a = stats.open(proxy('u1'));
  const b = stats.open(proxy('u2'));
  a.report([]);
  b.report([]);
  clock.now += 5_000;
  a.report(report('shop/flaky|8080', 1, 1, 0));
  b.report(report('shop/flaky|8080', 1, 1, 0));
  assert.equal(stats.pairCount, 1);
  assert.equal(stats.droppedPairs, 1);
  clock.now += 61_000;
  assert.deepEqual(stats.edges(), [], 'outside the window');
  b.report([]);
  assert.equal(stats.pairCount, 0, 'evicted');
  clock.now += 5_000;
  b.report(report('shop/flaky|8080', 3, 3, 0));
  assert.equal(stats.edges()[0]?.requests, 2);
});

test('the window slides: figures older than a minute no longer count', () => {
  const { clock, stats } = setup();
  const r = stats.open(proxy('u1'));
  r.report([]);
  clock.now += 5_000;
  r.report(report('shop/flaky|8080', 100, 100, 0));
  for (let i = 0; i < 7; i++) {
    clock.now += 10_000;
    r.report(report('shop/flaky|8080', 100 + (i + 1) * 10, 100 + (i + 1) * 10, 0));
  }
  const e = stats.edges()[0];
  assert.equal(e?.seconds, 60);
  assert.ok(e !== undefined && e.requests >= 50 && e.requests <= 60, String(e?.requests));
  assert.equal(e?.total.requests, 170);
});
