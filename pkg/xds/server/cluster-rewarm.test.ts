import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { EncodedResource } from '../cache/encoded.js';
import { changedClusters, takeRewarmed, withRewarmed } from './cluster-rewarm.js';

const r = (name: string, hash: string): EncodedResource => ({
  typeUrl: 't',
  name,
  hash,
  framed: new Uint8Array(),
});

test('only clusters held with other content need their endpoints again', () => {
  const held = [r('a', '1'), r('b', '1'), r('gone', '1')];
  assert.deepEqual(changedClusters(held, [r('a', '1'), r('b', '2'), r('new', '1')]), ['b']);
  assert.deepEqual(changedClusters([], [r('a', '1')]), []);
});

test('each pending name is resent once, and not twice in one response', () => {
  const pending = new Set(['b', 'c']);
  const current = [r('a', '1'), r('b', '1'), r('c', '1')];
  const rewarmed = takeRewarmed(pending, current);
  assert.deepEqual(
    rewarmed.map((x) => x.name),
    ['b', 'c'],
  );
  assert.equal(pending.size, 0);
  assert.deepEqual(takeRewarmed(pending, current), []);
  assert.deepEqual(
    withRewarmed([r('c', '1')], rewarmed).map((x) => x.name),
    ['c', 'b'],
  );
});
