import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Backoff } from './backoff.js';
import { TokenBucket } from './rate-limiter.js';

describe('TokenBucket', () => {
  it('lets a burst through at once, then paces at qps, in arrival order', async () => {
    const bucket = new TokenBucket(50, 3);
    const t0 = performance.now();
    const order: number[] = [];
    const times: number[] = [];
    await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        bucket.take().then(() => {
          order.push(i);
          times.push(performance.now() - t0);
        }),
      ),
    );
    assert.deepEqual(order, [0, 1, 2, 3, 4, 5]);
    assert.ok((times[2] ?? 99) < 15, `burst took ${times[2]} ms`);
    // Three more at 50/s: 20 ms apart, the last no sooner than ~60 ms.
    assert.ok((times[5] ?? 0) >= 55, `sixth after ${times[5]} ms`);
    assert.equal(bucket.waiting, 0);
  });

  it('refills while idle, but never beyond the burst', async () => {
    const bucket = new TokenBucket(100, 2);
    await bucket.take();
    await bucket.take();
    await new Promise((r) => setTimeout(r, 100)); // would be 10 tokens without the cap
    const t0 = performance.now();
    await Promise.all([bucket.take(), bucket.take(), bucket.take()]);
    assert.ok(performance.now() - t0 >= 7, 'the third waited for a token');
  });

  it('an aborted waiter leaves the queue', async () => {
    const bucket = new TokenBucket(1, 1);
    await bucket.take();
    const ac = new AbortController();
    const waiting = bucket.take(ac.signal);
    assert.equal(bucket.waiting, 1);
    ac.abort(new Error('gone'));
    await assert.rejects(waiting, /gone/);
    assert.equal(bucket.waiting, 0);
  });
});

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
