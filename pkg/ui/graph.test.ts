import assert from 'node:assert/strict';
import { test } from 'node:test';
import { meshConfig, shopMesh } from '../catalog/fixtures.js';
import type { DisconnectedProxy } from '../catalog/proxies.js';
import { buildMeshView } from '../catalog/view.js';
import { storeOf } from '../envoy/testing/mesh.js';
import { TypeUrl } from '../envoy/types.js';
import type { ProxyIdentity } from '../mesh/identity.js';
import type { StreamStatus } from '../xds/server/types.js';
import { buildGraph, routeSummary } from './graph.js';

const shopStore = () => storeOf(shopMesh());

function identity(uuid: string, ns: string, serviceAccount: string): ProxyIdentity {
  return {
    uuid,
    kind: 'grpc',
    namespace: ns,
    serviceAccount,
    trustDomain: 'cluster.local',
    cn: `${uuid}.grpc.${serviceAccount}.${ns}.cluster.local`,
  };
}

const streams: StreamStatus[] = [
  {
    streamId: 's1',
    identity: identity('u-store-1', 'shop', 'bookstore'),
    connectedAt: '2026-01-01T00:00:01.000Z',
    types: {
      [TypeUrl.Listener]: { subscribed: '*', sentVersion: '3', ackedVersion: '3' },
      [TypeUrl.Cluster]: { subscribed: '*', sentVersion: '2', ackedVersion: '2' },
    },
  },
  {
    streamId: 's2',
    identity: identity('u-store-2', 'shop', 'bookstore'),
    connectedAt: '2026-01-01T00:00:02.000Z',
    types: {
      [TypeUrl.Cluster]: { subscribed: '*', sentVersion: '2', ackedVersion: '2' },
      [TypeUrl.Listener]: {
        subscribed: '*',
        sentVersion: '3',
        ackedVersion: '2',
        nackedVersion: '3',
        lastNackMessage: 'bad listener',
      },
    },
  },
];

function gone(
  uuid: string,
  ns: string,
  serviceAccount: string,
  streamId: string,
  at: string,
): DisconnectedProxy {
  return {
    identity: identity(uuid, ns, serviceAccount),
    streamId,
    connectedAt: new Date('2026-01-01T00:00:00.000Z'),
    disconnectedAt: new Date(at),
  };
}

test('buildGraph: namespaces, services with ports, endpoints and per-proxy sync state', () => {
  const view = buildMeshView(shopStore(), { meshName: 'skein' });
  const g = buildGraph({
    meshName: 'skein',
    view,
    streams,
    disconnected: [
      gone('u-buyer', 'buyers', 'bookbuyer', 's0', '2026-01-01T00:00:05.000Z'),
      // An older stream of a proxy that is live again is not shown.
      gone('u-store-1', 'shop', 'bookstore', 's-old', '2026-01-01T00:00:00.500Z'),
    ],
  });
  assert.equal(g.mesh, 'skein');
  assert.equal(g.permissive, false);
  assert.deepEqual(g.namespaces, ['buyers', 'shop']);
  assert.deepEqual(
    g.services.map((s) => s.id),
    ['svc:shop/bookstore', 'svc:shop/bookstore-v1', 'svc:shop/bookstore-v2', 'svc:shop/warehouse'],
  );
  const apex = g.services.find((s) => s.key === 'shop/bookstore');
  assert.deepEqual(
    apex?.proxies.map((p) => [p.id, p.state, p.streamId]),
    [
      ['px:svc:shop/bookstore:shop/store-1', 'SYNCED', 's1'],
      ['px:svc:shop/bookstore:shop/store-2', 'NACKED', 's2'],
    ],
  );
  assert.deepEqual(apex?.endpoints, [
    { ip: '10.0.0.2', port: 14001, ready: true, pod: 'store-1' },
    { ip: '10.0.0.3', port: 14001, ready: true, pod: 'store-2' },
  ]);
  assert.deepEqual(apex?.split, [
    { service: 'shop/bookstore-v1', weight: 90 },
    { service: 'shop/bookstore-v2', weight: 10 },
  ]);
  // Who may call it, per port, from /debug/policies' model.
  assert.deepEqual(apex?.ports, [
    {
      port: 14001,
      name: 'http',
      protocol: 'http',
      targetPort: 14001,
      rules: [
        { sources: ['buyers/bookbuyer'], routes: ['GET /buy'], origin: 'TrafficTarget shop/buyer-to-store' },
      ],
    },
  ]);
  // Per-type config summary in push order (CDS before LDS), with the NACK.
  const store2 = g.services.find((s) => s.key === 'shop/bookstore-v2')?.proxies[0];
  assert.deepEqual(
    store2?.types.map((t) => [t.type, t.sent, t.acked, t.syncState, t.lastNack]),
    [
      ['CDS', '2', '2', 'SYNCED', undefined],
      ['LDS', '3', '2', 'NACKED', 'bad listener'],
    ],
  );
  // An endpoint pod whose proxy never connected: grey, no UUID.
  assert.deepEqual(g.services.find((s) => s.key === 'shop/warehouse')?.proxies, [
    {
      id: 'px:svc:shop/warehouse:shop/wh-1',
      label: 'wh-1',
      state: 'DISCONNECTED',
      pod: { namespace: 'shop', name: 'wh-1' },
      types: [],
    },
  ]);
  // bookbuyer backs no service: it is an identity node holding its (gone) proxy.
  assert.deepEqual(
    g.identities.map((i) => [i.id, i.proxies.map((p) => [p.label, p.state, p.disconnectedAt])]),
    [['id:buyers/bookbuyer', [['buyer-1', 'DISCONNECTED', '2026-01-01T00:00:05.000Z']]]],
  );
  // store-1 is drawn under bookstore and bookstore-v1 but counted once.
  assert.deepEqual(g.counts, {
    namespaces: 2,
    services: 4,
    proxies: 4,
    edges: 5,
    byState: { SYNCED: 1, STALE: 0, NACKED: 1, DISCONNECTED: 2 },
  });
});

test('buildGraph: allow edges carry their TrafficTargets and routes; split edges their weights', () => {
  const g = buildGraph({
    meshName: 'skein',
    view: buildMeshView(shopStore(), { meshName: 'skein' }),
    streams: [],
  });
  const allow = g.edges.filter((e) => e.kind === 'allow');
  assert.deepEqual(
    allow.map((e) => [e.source, e.target, e.label]),
    [
      // The TrafficTarget names the bookstore service account, which backs all three.
      ['id:buyers/bookbuyer', 'svc:shop/bookstore', 'buyer-to-store'],
      ['id:buyers/bookbuyer', 'svc:shop/bookstore-v1', 'buyer-to-store'],
      ['id:buyers/bookbuyer', 'svc:shop/bookstore-v2', 'buyer-to-store'],
      // bookstore's pods are drawn as the backends, not as the split apex.
      ['svc:shop/bookstore-v1', 'svc:shop/warehouse', 'store-to-warehouse'],
      ['svc:shop/bookstore-v2', 'svc:shop/warehouse', 'store-to-warehouse'],
    ],
  );
  assert.deepEqual(allow[0]?.targets, ['shop/buyer-to-store']);
  assert.deepEqual(allow[0]?.ports, [{ port: 14001, routes: ['GET /buy'] }]);
  assert.deepEqual(allow[3]?.ports, [{ port: 14001, routes: ['* .*'] }]);
  // Without a stream the identity node still exists: it is a source of policy.
  assert.deepEqual(g.identities[0]?.proxies, []);
  assert.deepEqual(
    g.edges.filter((e) => e.kind === 'split').map((e) => [e.source, e.target, e.weight, e.percent, e.label]),
    [
      ['svc:shop/bookstore', 'svc:shop/bookstore-v1', 90, 90, 'weight 90 (90%)'],
      ['svc:shop/bookstore', 'svc:shop/bookstore-v2', 10, 10, 'weight 10 (10%)'],
    ],
  );
});

test('buildGraph: permissive mode draws no allow edges and says so, but keeps split weights', () => {
  const store = shopStore();
  store.upsert(meshConfig('skein', 'skein-system', { traffic: { permissive: true } }));
  const g = buildGraph({ meshName: 'skein', view: buildMeshView(store, { meshName: 'skein' }), streams: [] });
  assert.equal(g.permissive, true);
  assert.deepEqual(
    g.edges.map((e) => e.kind),
    ['split', 'split'],
  );
  assert.equal(g.counts.edges, 0);
  assert.deepEqual(g.services[0]?.ports[0]?.rules, [
    { sources: 'any', routes: ['all requests'], origin: 'permissive' },
  ]);
});

test('buildGraph: a proxy that has been sent nothing yet, or not ACKed, is STALE', () => {
  const view = buildMeshView(shopStore(), { meshName: 'skein' });
  const fresh = (types: StreamStatus['types']): StreamStatus[] => [
    { streamId: 's9', identity: identity('u-store-1', 'shop', 'bookstore'), connectedAt: 'x', types },
  ];
  const stateOf = (s: StreamStatus[]) =>
    buildGraph({ meshName: 'skein', view, streams: s }).services[1]?.proxies[0]?.state;
  assert.equal(stateOf(fresh({})), 'STALE');
  assert.equal(stateOf(fresh({ [TypeUrl.Cluster]: { subscribed: '*' } })), 'STALE');
  assert.equal(stateOf(fresh({ [TypeUrl.Cluster]: { subscribed: '*', sentVersion: '1' } })), 'STALE');
  assert.equal(
    stateOf(fresh({ [TypeUrl.Cluster]: { subscribed: '*', sentVersion: '1', ackedVersion: '1' } })),
    'SYNCED',
  );
});

test('routeSummary: methods, path and headers per match; all', () => {
  assert.deepEqual(routeSummary({ http: 'all' }), ['all requests']);
  assert.deepEqual(
    routeSummary({
      http: [
        { name: 'a', pathRegex: '/buy', methods: ['GET', 'POST'], headers: { 'x-tier': 'gold' } },
        { name: 'b' },
      ],
    }),
    ['GET,POST /buy [x-tier=gold]', '* .*'],
  );
});
