import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { silentLogger } from '../logger/logger.js';
import { AnnouncementBus } from './bus.js';
import { Repeater } from './repeater.js';

const logger = silentLogger();

test('fans announcements out to every target; a slow target does not hold back the others', async () => {
  const bus = new AnnouncementBus({ logger });
  const rep = new Repeater(bus, { minIntervalMs: 0, logger });
  const fast: string[][] = [];
  const slow: string[][] = [];
  let releaseSlow: () => void = () => {};
  rep.register('fast', (b) => {
    fast.push(b.map((a) => a.reason));
  });
  rep.register('slow', (b) => {
    slow.push(b.map((a) => a.reason));
    return new Promise<void>((resolve) => {
      releaseSlow = resolve;
    });
  });
  assert.equal(rep.size, 2);

  bus.announce('store', 'a');
  await sleep(5);
  bus.announce('store', 'b');
  await sleep(5);
  bus.announce('store', 'c');
  await sleep(5);
  assert.deepEqual(fast, [['a'], ['b'], ['c']]);
  assert.deepEqual(slow, [['a']], 'slow target is still busy with its first push');
  releaseSlow();
  await sleep(5);
  assert.deepEqual(slow, [['a'], ['b', 'c']]);
  releaseSlow();
  rep.close();
  assert.equal(bus.subscriberCount, 0);
  assert.equal(rep.size, 0);
});

test('unregister removes exactly its own registration; re-registering replaces', async () => {
  const bus = new AnnouncementBus({ logger });
  const rep = new Repeater(bus, { minIntervalMs: 0, logger });
  const got: string[] = [];
  const offOld = rep.register('p', () => {
    got.push('old');
  });
  rep.register('p', () => {
    got.push('new');
  });
  offOld(); // stale: must not remove the new registration
  bus.announce('store', 'x');
  await sleep(5);
  assert.deepEqual(got, ['new']);
  rep.unregister('p');
  bus.announce('store', 'y');
  await sleep(5);
  assert.deepEqual(got, ['new']);
  rep.close();
});

test('the min interval is applied per target and can change at runtime', async () => {
  const bus = new AnnouncementBus({ logger });
  const rep = new Repeater(bus, { minIntervalMs: 10_000, logger });
  const fires: number[] = [];
  rep.register('p', (b) => {
    fires.push(b.length);
  });
  bus.announce('store', '1');
  await sleep(5);
  bus.announce('store', '2');
  bus.announce('store', '3');
  await sleep(20);
  assert.deepEqual(fires, [1], 'second batch waits for the 10 s window');
  rep.setMinInterval(15);
  assert.equal(rep.minInterval, 15);
  await sleep(40);
  assert.deepEqual(fires, [1, 2]);
  rep.close();
});
