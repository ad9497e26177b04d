import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { silentLogger } from '../logger/logger.js';
import { Coalescer } from './coalescer.js';
import type { Announcement } from './types.js';

const logger = silentLogger();
const ann = (i: number): Announcement => ({ kind: 'store', reason: `change ${i}`, at: Date.now() });
// Node timers may run up to ~1 ms early relative to Date.now().
const SLACK_MS = 2;

interface Fire {
  at: number;
  batch: Announcement[];
}

function recorder(): { fires: Fire[]; fire: (batch: Announcement[]) => void } {
  const fires: Fire[] = [];
  return { fires, fire: (batch) => fires.push({ at: Date.now(), batch }) };
}

test('a burst of 100 announcements inside one window fires at most twice and delivers all, last after last push', async () => {
  const r = recorder();
  // The window is generous so a loaded machine still fits the burst inside it.
  const c = new Coalescer(250, r.fire, { logger });
  let lastPushAt = 0;
  for (let i = 0; i < 100; i++) {
    c.push(ann(i));
    lastPushAt = Date.now();
    if (i % 10 === 9) await sleep(3);
  }
  await sleep(300);
  c.close();
  assert.ok(r.fires.length >= 1 && r.fires.length <= 2, `fired ${r.fires.length} times`);
  const all = r.fires.flatMap((f) => f.batch.map((a) => a.reason));
  assert.deepEqual(
    all,
    Array.from({ length: 100 }, (_, i) => `change ${i}`),
  );
  const last = r.fires.at(-1);
  assert.ok(last && last.at >= lastPushAt, 'the final state is delivered after the last announcement');
  if (r.fires.length === 2) {
    const [first, second] = r.fires as [Fire, Fire];
    assert.ok(second.at - first.at >= 250 - SLACK_MS, `gap ${second.at - first.at} ms`);
  }
});

test('the first push after a quiet period fires promptly; the next waits for the window', async () => {
  const r = recorder();
  const c = new Coalescer(150, r.fire, { logger });
  const t0 = Date.now();
  c.push(ann(1));
  await sleep(10);
  assert.equal(r.fires.length, 1);
  assert.ok((r.fires[0]?.at ?? Infinity) - t0 < 100, 'first fire does not wait for a window');
  c.push(ann(2));
  await sleep(10);
  assert.equal(r.fires.length, 1, 'second push waits for the window');
  await sleep(200);
  assert.equal(r.fires.length, 2);
  const gap = (r.fires[1]?.at ?? 0) - (r.fires[0]?.at ?? 0);
  assert.ok(gap >= 150 - SLACK_MS, `gap ${gap} ms`);
  c.close();
});

test('close stops timers, drops pending work and ignores later pushes', async () => {
  const r = recorder();
  const c = new Coalescer(30, r.fire, { logger });
  c.push(ann(1));
  await sleep(5);
  c.push(ann(2)); // scheduled for the end of the window
  assert.equal(c.pendingCount, 1);
  c.close();
  c.push(ann(3));
  assert.equal(c.pendingCount, 0);
  await sleep(60);
  assert.deepEqual(
    r.fires.map((f) => f.batch.length),
    [1],
  );
  assert.equal(c.isClosed, true);
});

test('a throwing or rejecting fire is contained; later announcements are still delivered', async () => {
  let calls = 0;
  const seen: string[] = [];
  const c = new Coalescer(
    5,
    (batch) => {
      calls++;
      seen.push(...batch.map((a) => a.reason));
      if (calls === 1) throw new Error('boom');
      if (calls === 2) return Promise.reject(new Error('async boom'));
    },
    { logger },
  );
  c.push(ann(1));
  await sleep(15);
  c.push(ann(2));
  await sleep(15);
  c.push(ann(3));
  await sleep(15);
  c.close();
  assert.equal(calls, 3);
  assert.deepEqual(seen, ['change 1', 'change 2', 'change 3']);
});

test('an asynchronous receiver gets no overlapping pushes; what arrives meanwhile comes as one batch', async () => {
  const batches: string[][] = [];
  let release: () => void = () => {};
  const c = new Coalescer(
    0,
    (batch) => {
      batches.push(batch.map((a) => a.reason));
      return new Promise<void>((resolve) => {
        release = resolve;
      });
    },
    { logger },
  );
  c.push(ann(1));
  await sleep(5);
  for (let i = 2; i <= 5; i++) c.push(ann(i));
  await sleep(10);
  assert.deepEqual(batches, [['change 1']], 'nothing while the first push is in flight');
  release();
  await sleep(10);
  assert.deepEqual(batches, [['change 1'], ['change 2', 'change 3', 'change 4', 'change 5']]);
  release();
  c.close();
});

test('setMinInterval moves a scheduled fire; flush fires at once', async () => {
  const r = recorder();
  const c = new Coalescer(10_000, r.fire, { logger });
  c.push(ann(1));
  await sleep(5);
  c.push(ann(2)); // would wait 10 s
  c.setMinInterval(20);
  await sleep(40);
  assert.equal(r.fires.length, 2);
  assert.equal(c.minInterval, 20);

  c.setMinInterval(10_000);
  c.push(ann(3));
  assert.equal(r.fires.length, 2);
  c.flush();
  assert.equal(r.fires.length, 3, 'flush fires synchronously');
  assert.equal(r.fires[2]?.batch[0]?.reason, 'change 3');
  assert.throws(() => c.setMinInterval(-1), RangeError);
  c.close();
});
