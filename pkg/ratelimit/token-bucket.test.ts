import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TokenBucket } from './token-bucket.js';

describe('TokenBucket', () => {
  it('lets a burst through at once, then paces at qps, in arrival order', async () => {
    // 10/s: pacing (100 ms a token) stays far apart from "at once" even on a loaded machine.
    const bucket = new TokenBucket(10, 3);
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
    assert.ok((times[2] ?? 999) < 60, `burst took ${times[2]} ms`);
    // Three more at 10/s: 100 ms apart, the last no sooner than ~300 ms.
    assert.ok((times[3] ?? 0) >= 90, `fourth after ${times[3]} ms`);
    assert.ok((times[5] ?? 0) >= 290, `sixth after ${times[5]} ms`);
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

describe('TokenBucket.tryTake', () => {
  it('takes what is there without waiting, and refuses the rest until it refills', () => {
    let now = 0;
    const bucket = new TokenBucket(10, 20, () => now);
    assert.equal(bucket.tryTake(15), true);
    assert.equal(bucket.tryTake(6), false);
    assert.equal(bucket.tryTake(5), true);
    now = 500; // 5 tokens back
    assert.equal(bucket.tryTake(6), false);
    assert.equal(bucket.tryTake(5), true);
  });
});
