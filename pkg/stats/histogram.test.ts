import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bucketDelta, quantile } from './histogram.js';

const snap = (count: number, cumulative: number[]) => ({
  count,
  buckets: cumulative.map((c, i) => ({ upperBound: [1, 5, 10][i] ?? 0, cumulativeCount: c })),
});

test('bucketDelta: per-bucket observations between two cumulative snapshots', () => {
  assert.deepEqual(bucketDelta(snap(10, [2, 6, 9]), snap(20, [4, 14, 18])), {
    bounds: [1, 5, 10],
    counts: [2, 6, 1, 1],
  });
  // No previous, or a restarted histogram (a count went down): the current one whole.
  assert.deepEqual(bucketDelta(undefined, snap(3, [1, 2, 3])).counts, [1, 1, 1, 0]);
  assert.deepEqual(bucketDelta(snap(10, [2, 6, 9]), snap(3, [1, 2, 3])).counts, [1, 1, 1, 0]);
});

test('quantile interpolates within the bucket, like histogram_quantile', () => {
  const h = { bounds: [1, 5, 10], counts: [50, 40, 10, 0] };
  assert.equal(quantile(h, 0.5), 1);
  assert.equal(quantile(h, 0.7), 1 + 4 * (20 / 40));
  assert.equal(quantile(h, 0.99), 5 + 5 * (9 / 10));
  // Above the last bound: the last bound.
  assert.equal(quantile({ bounds: [1], counts: [0, 4] }, 0.5), 1);
  assert.equal(quantile({ bounds: [1], counts: [0, 0] }, 0.5), undefined);
});
