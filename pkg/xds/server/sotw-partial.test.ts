import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TypeUrl } from '../../envoy/types.js';
import type { EncodedResource } from '../cache/encoded.js';
import { carriesFullSet, changedSince } from './sotw-partial.js';

function res(name: string, hash: string): EncodedResource {
  return { typeUrl: TypeUrl.ClusterLoadAssignment, name, hash, framed: new Uint8Array() };
}

test('only LDS and CDS responses must carry the full set', () => {
  assert.equal(carriesFullSet(TypeUrl.Listener), true);
  assert.equal(carriesFullSet(TypeUrl.Cluster), true);
  for (const t of [TypeUrl.RouteConfiguration, TypeUrl.ClusterLoadAssignment, TypeUrl.Secret])
    assert.equal(carriesFullSet(t), false, t);
});

test('changedSince: added names and changed content, not what is held as it is nor what left', () => {
  const a = res('a', '1');
  const held = [a, res('b', '1'), res('c', '1'), res('e', '1')];
  // a: the same object; b: equal content in another object; c: changed; d: new; e: gone.
  const current = [a, res('b', '1'), res('c', '2'), res('d', '1')];
  assert.deepEqual(
    changedSince(held, current).map((r) => `${r.name}${r.hash}`),
    ['c2', 'd1'],
  );
  assert.deepEqual(changedSince([], current), current);
  assert.deepEqual(changedSince(held, []), []);
  // Names sorting after everything held.
  assert.deepEqual(
    changedSince([res('a', '1')], [res('a', '1'), res('z', '1')]).map((r) => r.name),
    ['z'],
  );
});
