import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseStats, statsText } from './stats.js';

test('one proxy: a row per destination, rates over the window and totals', () => {
  const page = parseStats({
    windowSeconds: 60,
    uuid: 'u1',
    identity: 'shop/caller',
    streams: 1,
    upstreams: [
      {
        service: 'shop/flaky',
        seconds: 60,
        requests: 600,
        rps: 10,
        responses: 600,
        errors: 300,
        successRate: 0.5,
        p50Ms: 1.25,
        p99Ms: 24.5,
        total: { requests: 1000, responses: 1000, errors: 500 },
      },
    ],
  });
  assert.equal(
    statsText(page, 'shop/caller-1'),
    [
      'PROXY   shop/caller-1 (shop/caller)',
      'DESTINATION  RPS    SUCCESS  P50     P99     REQUESTS 60s  5XX  TOTAL REQUESTS / 5XX',
      'shop/flaky   10.00  50.0%    1.25ms  24.5ms  600           300  1000 / 500',
      '',
    ].join('\n'),
  );
});

test('every edge: a source column; no responses and no latency show as -', () => {
  const page = parseStats({
    windowSeconds: 60,
    edges: [{ source: 'shop/a', destination: 'shop/b', rps: 0.5, requests: 30, errors: 0, total: {} }],
  });
  assert.match(
    statsText(page, 'mesh'),
    /^SOURCE +DESTINATION[^\n]*\nshop\/a +shop\/b +0\.50 +- +- +- +30 +0 +0 \/ 0\n$/,
  );
});

test('nothing reported says so; a page that is not one is refused', () => {
  assert.match(
    statsText(parseStats({ windowSeconds: 60, edges: [] }), 'mesh'),
    /no requests reported in the last 60 s/,
  );
  assert.throws(() => parseStats([]), /did not answer a stats page/);
});
