import assert from 'node:assert/strict';
import { test } from 'node:test';
import protobuf from 'protobufjs';
import { isEdgeStat, upstreamSamples, upstreamService } from './sample.js';
import { decodeStreamMetrics, encodeStreamMetrics, type MetricFamily } from './wire.js';

const counter = (name: string, value: number): MetricFamily => ({
  name,
  type: 'COUNTER',
  metrics: [{ labels: {}, counter: value }],
});

test('decodeStreamMetrics keeps only the wanted families, decoded whole', () => {
  const families: MetricFamily[] = [
    counter('server.uptime', 12),
    counter('cluster.shop/flaky|8080.upstream_rq_total', 40),
    counter('cluster.shop/flaky|8080.upstream_rq_5xx', 19),
    counter('cluster.shop/flaky|8080.upstream_cx_total', 3),
    {
      name: 'cluster.shop/flaky|8080.upstream_rq_time',
      type: 'HISTOGRAM',
      metrics: [
        {
          labels: { envoy_cluster_name: 'shop/flaky|8080' },
          histogram: {
            count: 40,
            sum: 123.5,
            buckets: [
              { upperBound: 1, cumulativeCount: 10 },
              { upperBound: 5, cumulativeCount: 38 },
            ],
          },
        },
      ],
    },
  ];
  const bytes = encodeStreamMetrics(families, 'node-1');
  const seen: string[] = [];
  const got = decodeStreamMetrics(bytes, (n) => {
    seen.push(n);
    return isEdgeStat(n);
  });
  assert.deepEqual(
    seen,
    families.map((f) => f.name),
  );
  assert.deepEqual(
    got.map((f) => f.name),
    [
      'cluster.shop/flaky|8080.upstream_rq_total',
      'cluster.shop/flaky|8080.upstream_rq_5xx',
      'cluster.shop/flaky|8080.upstream_rq_time',
    ],
  );
  assert.deepEqual(got[2], families[4]);
  assert.equal(got[0]?.metrics[0]?.counter, 40);
});

test('decodeStreamMetrics throws on a family that runs past the message', () => {
  const w = protobuf.Writer.create()
    .uint32((2 << 3) | 2)
    .uint32(50)
    .uint32((1 << 3) | 2)
    .string('x');
  assert.throws(() => decodeStreamMetrics(w.finish(), () => true), /past the message/);
});

test('upstreamSamples groups the counters and histogram per cluster; upstreamService reads mesh clusters only', () => {
  const s = upstreamSamples([
    counter('cluster.shop/flaky|8080.upstream_rq_total', 40),
    counter('cluster.shop/flaky|8080.upstream_rq_2xx', 21),
    counter('cluster.shop/flaky|8080.upstream_rq_5xx', 19),
    counter('cluster.passthrough-outbound.upstream_rq_total', 2),
  ]);
  assert.deepEqual(s.get('shop/flaky|8080'), { requests: 40, responses: [0, 21, 0, 0, 19] });
  assert.deepEqual(upstreamService('shop/flaky|8080'), { service: 'shop/flaky', port: 8080 });
  for (const other of ['passthrough-outbound', 'shop/flaky|8080|local', 'blackhole', 'skein-controller'])
    assert.equal(upstreamService(other), undefined, other);
});
