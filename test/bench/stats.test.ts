import assert from 'node:assert/strict';
import { test } from 'node:test';
import { percentile, summarize } from './stats.js';

test('nearest-rank percentiles', () => {
  const values = [5, 1, 4, 2, 3, 10, 9, 8, 7, 6];
  assert.equal(percentile(values, 50), 5);
  assert.equal(percentile(values, 99), 10);
  assert.equal(percentile(values, 10), 1);
  assert.equal(percentile([42], 99), 42);
  assert.ok(Number.isNaN(percentile([], 50)));
});

test('summary of values', () => {
  const s = summarize([3, 1, 2]);
  assert.deepEqual(s, { n: 3, p50: 2, p99: 3, max: 3, mean: 2 });
});
