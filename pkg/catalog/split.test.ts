import assert from 'node:assert/strict';
import { test } from 'node:test';
import { endpointSlice, namespace, service, trafficSplit } from '../../test/support/catalog-fixtures.js';
import type { AnyObject } from '../model/objects.js';
import { MeshStore } from '../registry/store.js';
import { splitEmptiness, splitOnPort } from './split.js';
import { buildMeshView, policyProblems } from './view.js';

const MESH = 'skein';
const PORTS = [{ name: 'http', port: 80, targetPort: 8080 }];

function mesh(...endpoints: AnyObject[]) {
  const store = new MeshStore();
  for (const o of [
    namespace('shop', MESH),
    service('shop', 'apex', PORTS, { app: 'apex' }),
    service('shop', 'v1', PORTS, { app: 'apex', version: 'v1' }),
    service('shop', 'v2', PORTS, { app: 'apex', version: 'v2' }),
    trafficSplit('shop', 'split', 'apex', [
      { service: 'v1', weight: 30 },
      { service: 'v2', weight: 70 },
    ]),
    ...endpoints,
  ])
    store.upsert(o);
  return buildMeshView(store, { meshName: MESH });
}

const ready = (svc: string, ip: string, isReady = true) =>
  endpointSlice('shop', svc, `${svc}-1`, [{ ip, ready: isReady }], [{ name: 'http', port: 8080 }]);
const weights = (view: ReturnType<typeof mesh>) =>
  splitOnPort(view, 'shop/apex', 80).map((b) => [b.service.key, b.weight]);

test('splitOnPort: a backend without ready endpoints gets no share while another has some', () => {
  assert.deepEqual(weights(mesh(ready('v1', '10.0.0.1'), ready('v2', '10.0.0.2'))), [
    ['shop/v1', 30],
    ['shop/v2', 70],
  ]);
  // v2's last pod gone, or not ready: v1 takes all the traffic (its weight alone is the whole).
  assert.deepEqual(weights(mesh(ready('v1', '10.0.0.1'))), [['shop/v1', 30]]);
  assert.deepEqual(weights(mesh(ready('v1', '10.0.0.1'), ready('v2', '10.0.0.2', false))), [['shop/v1', 30]]);
  assert.deepEqual(
    policyProblems(mesh(ready('v1', '10.0.0.1'))).map(
      (p) => `${p.kind} ${p.namespace}/${p.name}: ${p.reason}`,
    ),
    [
      'Service shop/v2: TrafficSplit backend of shop/apex without ready endpoints on port 80: its share goes to the other backends until it has some',
    ],
  );
  // Every backend empty: the split stays as written (calls fail as they would anyway).
  assert.deepEqual(weights(mesh()), [
    ['shop/v1', 30],
    ['shop/v2', 70],
  ]);
  // No split on this port, or not an apex: nothing.
  assert.deepEqual(splitOnPort(mesh(), 'shop/apex', 81), []);
  assert.deepEqual(splitOnPort(mesh(), 'shop/v1', 80), []);
});

test('splitEmptiness: changes when a backend empties or fills, not when endpoints merely change', () => {
  const both = splitEmptiness(mesh(ready('v1', '10.0.0.1'), ready('v2', '10.0.0.2')), 'shop/apex');
  const moved = splitEmptiness(mesh(ready('v1', '10.0.0.9'), ready('v2', '10.0.0.8')), 'shop/apex');
  const v2Empty = splitEmptiness(mesh(ready('v1', '10.0.0.1')), 'shop/apex');
  assert.equal(both, '');
  assert.equal(moved, both);
  assert.equal(v2Empty, 'shop/v2:80');
  assert.equal(splitEmptiness(mesh(), 'shop/v1'), '');
});
