import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Backoff } from './backoff.js';

describe('Backoff', () => {
  it('doubles up to the cap with equal jitter and resets', () => {
    const low = new Backoff({ initialMs: 100, maxMs: 1000 }, () => 0);
    assert.deepEqual(
      Array.from({ length: 6 }, () => low.next()),
      [50, 100, 200, 400, 500, 500],
    );
    const high = new Backoff({ initialMs: 100, maxMs: 1000 }, () => 1);
    assert.deepEqual(
      Array.from({ length: 6 }, () => high.next()),
      [100, 200, 400, 800, 1000, 1000],
    );
    high.reset();
    assert.equal(high.next(), 100);
  });
});
