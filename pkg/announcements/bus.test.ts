import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { silentLogger } from '../logger/logger.js';
import { MeshStore } from '../registry/store.js';
import { AnnouncementBus } from './bus.js';
import { publishStoreChanges } from './store.js';
import type { Announcement } from './types.js';

test('subscribers receive publications until they unsubscribe; a throwing one does not stop the others', () => {
  const bus = new AnnouncementBus({ logger: silentLogger(), now: () => 42 });
  const got: string[] = [];
  bus.subscribe(() => {
    throw new Error('bad listener');
  });
  const off = bus.subscribe((a) => got.push(`${a.kind}:${a.reason}@${a.at}`));
  bus.announce('certificate', 'rotated', { subject: 'service-cert:shop/web' });
  off();
  bus.announce('store', 'ignored');
  assert.deepEqual(got, ['certificate:rotated@42']);
  assert.equal(bus.subscriberCount, 1);
});

test('the ticker publishes periodically until stopped', async () => {
  const bus = new AnnouncementBus({ logger: silentLogger() });
  const ticks: Announcement[] = [];
  bus.subscribe((a) => ticks.push(a));
  bus.startTicker(10);
  // Wait for ticks rather than a fixed time: under a loaded test run the
  // timers may fire late, which says nothing about the ticker.
  const deadline = Date.now() + 2000;
  while (ticks.length < 2 && Date.now() < deadline) await sleep(10);
  bus.stop();
  const seen = ticks.length;
  assert.ok(seen >= 2, `saw ${seen} ticks`);
  assert.ok(ticks.every((t) => t.kind === 'ticker'));
  await sleep(30);
  assert.equal(ticks.length, seen, 'no ticks after stop');
});

test('store changes become announcements (MeshConfig as config) until unsubscribed', () => {
  const store = new MeshStore();
  const bus = new AnnouncementBus({ logger: silentLogger() });
  const got: Announcement[] = [];
  bus.subscribe((a) => got.push(a));
  const stop = publishStoreChanges(store, bus);
  store.upsert({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' }, spec: undefined });
  store.upsert({
    apiVersion: 'config.skein.dev/v1alpha1',
    kind: 'MeshConfig',
    metadata: { name: 'skein' },
    spec: {},
  });
  stop();
  store.delete('Namespace', 'shop');
  assert.deepEqual(
    got.map((a) => [a.kind, a.reason, a.subject, a.version]),
    [
      ['store', 'added Namespace shop', 'Namespace shop', 1],
      ['config', 'added MeshConfig skein', 'MeshConfig skein', 2],
    ],
  );
});
