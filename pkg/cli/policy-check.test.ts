import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  httpRouteGroup,
  meshConfig,
  namespace,
  pod,
  sa,
  service,
  tcpRoute,
  trafficTarget,
} from '../../test/support/catalog-fixtures.js';
import { buildMeshView } from '../catalog/view.js';
import type { AnyObject } from '../model/objects.js';
import { MeshStore } from '../registry/store.js';
import { checkPolicy, policyText } from './policy-check.js';

const MESH = 'm';
const buyer = pod('buyer', 'buyer-1', { sa: 'bookbuyer', labels: { app: 'bookbuyer' } });
const thief = pod('buyer', 'thief-1', { sa: 'bookthief', labels: { app: 'bookthief' } });
const store1 = pod('store', 'store-1', { sa: 'bookstore', labels: { app: 'bookstore' } });
const outsider = pod('outside', 'o-1', { sa: 'default' });

function view(extra: AnyObject[] = []) {
  const s = new MeshStore();
  for (const o of [
    namespace('buyer', MESH),
    namespace('store', MESH),
    namespace('outside'),
    buyer,
    thief,
    store1,
    outsider,
    service('store', 'bookstore', [
      { name: 'http', port: 8080 },
      { name: 'tcp-db', port: 5432 },
    ]),
    httpRouteGroup('store', 'routes', [{ name: 'buy', pathRegex: '/buy', methods: ['GET'] }]),
    tcpRoute('store', 'db', [5432]),
    trafficTarget(
      'store',
      'buyer-access',
      sa('bookstore', 'store'),
      [sa('bookbuyer', 'buyer')],
      [{ kind: 'HTTPRouteGroup', name: 'routes', matches: ['buy'] }],
    ),
    ...extra,
  ])
    s.upsert(o);
  return buildMeshView(s, { meshName: MESH });
}

test('ALLOWED names the TrafficTarget and its route matches, port by port', () => {
  const v = checkPolicy(view(), MESH, buyer, store1);
  assert.equal(v.verdict, 'ALLOWED');
  const text = policyText(v, 'buyer/buyer-1', 'store/store-1');
  assert.equal(
    text,
    [
      'ALLOWED: buyer/buyer-1 (identity buyer/bookbuyer) -> store/store-1 (identity store/bookstore)',
      '  store/bookstore port 8080 (http): allowed by TrafficTarget store/buyer-access',
      '    routes: buy (path ~ /buy; methods GET)',
      '  store/bookstore port 5432 (tcp): denied: no TrafficTarget allows anyone here',
      '',
    ].join('\n'),
  );
});

test('DENIED lists who is allowed instead', () => {
  const v = checkPolicy(view(), MESH, thief, store1);
  assert.equal(v.verdict, 'DENIED');
  assert.match(
    policyText(v, 'buyer/thief-1', 'store/store-1'),
    /port 8080 \(http\): denied: no TrafficTarget allows buyer\/bookthief; allowed are:\n {4}buyer\/bookbuyer by TrafficTarget store\/buyer-access/,
  );
});

test('a TCPRoute opens its port for every request', () => {
  const tt = trafficTarget(
    'store',
    'db-access',
    sa('bookstore', 'store'),
    [sa('bookthief', 'buyer')],
    [{ kind: 'TCPRoute', name: 'db' }],
  );
  const v = checkPolicy(view([tt]), MESH, thief, store1);
  assert.equal(v.verdict, 'ALLOWED');
  assert.match(policyText(v, 'a', 'b'), /port 5432 \(tcp\): allowed by TrafficTarget store\/db-access/);
});

test('a policy problem in the destination namespace is named with the answer', () => {
  const broken = trafficTarget(
    'store',
    'broken',
    sa('bookstore', 'store'),
    [sa('bookthief', 'buyer')],
    [{ kind: 'HTTPRouteGroup', name: 'missing' }],
  );
  const v = checkPolicy(view([broken]), MESH, thief, store1);
  assert.equal(v.verdict, 'DENIED');
  assert.ok(v.verdict === 'DENIED');
  assert.equal(v.problems.length, 1, JSON.stringify(v.problems));
  assert.match(v.problems[0] ?? '', /^TrafficTarget store\/broken: .*missing/);
  assert.match(policyText(v, 'a', 'b'), /\n {2}problem: TrafficTarget store\/broken: /);
  // Nothing to say about a healthy pair.
  const ok = checkPolicy(view(), MESH, buyer, store1);
  assert.ok(ok.verdict === 'ALLOWED' && ok.problems.length === 0);
});

test('permissive mode allows every meshed pair and says so', () => {
  const v = checkPolicy(
    view([meshConfig(MESH, 'skein-system', { traffic: { permissive: true } })]),
    MESH,
    thief,
    store1,
  );
  assert.equal(v.verdict, 'ALLOWED');
  assert.ok(v.verdict === 'ALLOWED' && v.permissive);
  assert.match(policyText(v, 'a', 'b'), /permissive mode: every identity/);
});

test('no Service selecting the destination: DENIED with the reason', () => {
  const v = checkPolicy(view(), MESH, thief, buyer);
  assert.equal(v.verdict, 'DENIED');
  assert.match(policyText(v, 'a', 'b'), /no Service in the mesh selects pod buyer\/buyer-1/);
});

test('a pod outside the mesh is neither allowed nor denied: NOT IN MESH', () => {
  const v = checkPolicy(view(), MESH, outsider, store1);
  assert.equal(v.verdict, 'NOT_IN_MESH');
  assert.match(policyText(v, 'a', 'b'), /^NOT IN MESH: the source pod outside\/o-1 is not in mesh m/);
});
