import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { silentLogger } from '../logger/logger.js';
import { LABEL_PROXY_UUID } from '../mesh/constants.js';
import type { Pod } from '../model/objects.js';
import { UnidentifiedGatewayReaper } from './gateway-reaper.js';

const SPACING = 40;

function pod(name: string, o: { uuid?: string; deleting?: boolean } = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: 'skein-system',
      labels: { app: 'skein-ingress-gateway', ...(o.uuid ? { [LABEL_PROXY_UUID]: o.uuid } : {}) },
      ...(o.deleting ? { deletionTimestamp: '2026-12-04T00:00:00Z' } : {}),
    },
    spec: {},
  };
}

/** A reaper whose deletions are recorded with their time; `fail` names pods whose next delete rejects once. */
function reaper(fail = new Set<string>()) {
  const deleted: { name: string; at: number }[] = [];
  const r = new UnidentifiedGatewayReaper({
    spacingMs: SPACING,
    logger: silentLogger(),
    deletePod: async (name) => {
      if (fail.delete(name)) throw new Error('API server unavailable');
      deleted.push({ name, at: Date.now() });
    },
  });
  return { r, deleted };
}

test('every unidentified gateway pod is deleted, one per spacing, none forgotten', async () => {
  const { r, deleted } = reaper();
  // Three pods admitted before the webhook answered, seen in one burst: the old code deleted the
  // first and dropped the others until their next watch event.
  for (const n of ['gw-a', 'gw-b', 'gw-c']) r.seen(pod(n));
  await sleep(SPACING * 5);
  r.stop();
  assert.deepEqual(
    deleted.map((d) => d.name),
    ['gw-a', 'gw-b', 'gw-c'],
  );
  for (let i = 1; i < deleted.length; i++)
    assert.ok(
      (deleted[i]?.at ?? 0) - (deleted[i - 1]?.at ?? 0) >= SPACING - 2,
      `deletions ${deleted[i - 1]?.at} and ${deleted[i]?.at} closer than ${SPACING} ms`,
    );
});

test('pods with identity, pods already being deleted and pods gone before their turn are left alone', async () => {
  const { r, deleted } = reaper();
  r.seen(pod('gw-served', { uuid: '0b6d3c1e-8f2a-4c55-9e1d-7a3b2c4d5e6f' }));
  r.seen(pod('gw-going', { deleting: true }));
  r.seen(pod('gw-first'));
  r.seen(pod('gw-vanished'));
  r.seen(pod('gw-injected-later'));
  r.gone(pod('gw-vanished'));
  // The same pod seen again with its identity (e.g. a reinvoked webhook) leaves the queue.
  r.seen(pod('gw-injected-later', { uuid: '11111111-2222-4333-8444-555555555555' }));
  assert.deepEqual(r.pending, ['gw-first']);
  await sleep(SPACING * 4);
  r.stop();
  assert.deepEqual(
    deleted.map((d) => d.name),
    ['gw-first'],
  );
});

test('a deletion that failed is retried after the spacing', async () => {
  const { r, deleted } = reaper(new Set(['gw-a']));
  r.seen(pod('gw-a'));
  await sleep(SPACING * 4);
  r.stop();
  assert.deepEqual(
    deleted.map((d) => d.name),
    ['gw-a'],
  );
  assert.deepEqual(r.pending, []);
});

test('nothing is deleted after stop', async () => {
  const { r, deleted } = reaper();
  r.seen(pod('gw-a'));
  r.stop();
  await sleep(SPACING * 2);
  assert.deepEqual(deleted, []);
});

test('a follower deletes nothing, and deletes what it queued once it leads', async () => {
  const deleted: string[] = [];
  const leadership = { isLeader: false };
  const r = new UnidentifiedGatewayReaper({
    spacingMs: SPACING,
    leadership,
    logger: silentLogger(),
    deletePod: async (name) => {
      deleted.push(name);
    },
  });
  r.seen(pod('gw-a'));
  r.seen(pod('gw-b'));
  await sleep(SPACING * 3);
  assert.deepEqual(deleted, []);
  assert.deepEqual(r.pending, ['gw-a', 'gw-b']);
  leadership.isLeader = true;
  r.leadershipGained();
  await sleep(SPACING * 4);
  r.stop();
  assert.deepEqual(deleted, ['gw-a', 'gw-b']);
});
