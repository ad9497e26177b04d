import assert from 'node:assert/strict';
import { test } from 'node:test';
import { meshConfig, shopMesh } from '../../test/support/catalog-fixtures.js';
import { bookbuyerEgresses, egress, egressMesh } from '../../test/support/envoy/egress-fixtures.js';
import {
  INGRESS_PRINCIPAL,
  ingress,
  ingressBackend,
  ingressObjects,
} from '../../test/support/envoy/ingress.js';
import { bookstoreObjects, storeOf, viewOf } from '../../test/support/envoy/mesh.js';
import type { DisconnectedProxy } from '../catalog/proxies.js';
import { buildMeshView, policyProblems } from '../catalog/view.js';
import { TypeUrl } from '../envoy/types.js';
import type { ProxyIdentity } from '../mesh/identity.js';
import type { AnyObject } from '../model/objects.js';
import type { EdgeSummary } from '../stats/collector.js';
import type { StreamStatus } from '../xds/server/types.js';
import { buildGraph, routeSummary } from './graph.js';
import type { GraphProblem } from './graph-types.js';

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
    received: { requests: 0, bytes: 0 },
    types: {
      [TypeUrl.Listener]: { subscribed: '*', sentVersion: '3', ackedVersion: '3' },
      [TypeUrl.Cluster]: { subscribed: '*', sentVersion: '2', ackedVersion: '2' },
    },
  },
  {
    streamId: 's2',
    identity: identity('u-store-2', 'shop', 'bookstore'),
    connectedAt: '2026-01-01T00:00:02.000Z',
    received: { requests: 0, bytes: 0 },
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
    egress: 0,
    ingress: 0,
    traffic: 0,
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
    {
      streamId: 's9',
      identity: identity('u-store-1', 'shop', 'bookstore'),
      connectedAt: 'x',
      received: { requests: 0, bytes: 0 },
      types,
    },
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

/** The view's policy problems as the problem book would hand them to the graph. */
function bookProblems(view: ReturnType<typeof viewOf>): GraphProblem[] {
  return policyProblems(view).map((p) => ({
    type: 'policy',
    source: 'policy',
    kind: p.kind,
    ...(p.namespace !== undefined ? { namespace: p.namespace } : {}),
    name: p.name,
    reason: p.reason,
    since: '2026-01-01T00:00:00.000Z',
    inForce: 'the rest of the mesh',
  }));
}

test('buildGraph: Egress rules become destinations outside the mesh, one per host or range, edges per port and protocol', () => {
  const g = buildGraph({ meshName: 'skein', view: egressMesh(), streams: [] });
  // Hosts for http (Host header) and https (SNI), ranges for tcp: how the sidecar tells them apart.
  assert.deepEqual(
    g.external.map((x) => [x.id, x.kind, x.label]),
    [
      ['ext:cidr:10.1.0.0/16', 'cidr', '10.1.0.0/16'],
      ['ext:cidr:10.2.0.0/24', 'cidr', '10.2.0.0/24'],
      ['ext:host:*.github.com', 'host', '*.github.com'],
      ['ext:host:api.example.com', 'host', 'api.example.com'],
      ['ext:host:github.com', 'host', 'github.com'],
    ],
  );
  const egress = g.edges.filter((e) => e.kind === 'egress');
  // bookbuyer backs no service: its identity node is the source.
  assert.deepEqual(
    egress.map((e) => [e.source, e.target, e.label]),
    [
      ['id:bookbuyer/bookbuyer', 'ext:cidr:10.1.0.0/16', 'tcp 5432 · db'],
      ['id:bookbuyer/bookbuyer', 'ext:cidr:10.2.0.0/24', 'tcp-server-first 25 · smtp'],
      ['id:bookbuyer/bookbuyer', 'ext:host:*.github.com', 'https 443 · github'],
      ['id:bookbuyer/bookbuyer', 'ext:host:api.example.com', 'http 80 · api'],
      ['id:bookbuyer/bookbuyer', 'ext:host:github.com', 'https 443 · github'],
    ],
  );
  // The http rule's HTTPRouteGroup match is what the route allows.
  assert.deepEqual(egress.find((e) => e.target === 'ext:host:api.example.com')?.egress, [
    { port: 80, protocol: 'http', ipRanges: [], routes: ['GET /v1/.*'], egresses: ['bookbuyer/api'] },
  ]);
  assert.deepEqual(egress[0]?.egress, [
    { port: 5432, protocol: 'tcp', ipRanges: ['10.1.0.0/16'], egresses: ['bookbuyer/db'] },
  ]);
  assert.equal(g.counts.egress, 5);
  assert.deepEqual(g.ingressSources, []);
});

test('buildGraph: a source backing services draws its Egress from them; a rule without hosts or ranges goes to "any address"', () => {
  const view = viewOf(
    storeOf([
      ...bookstoreObjects(),
      egress('bookstore', 'anywhere-5432', {
        sources: [{ kind: 'ServiceAccount', name: 'bookstore-v1', namespace: 'bookstore' }],
        ports: [{ number: 5432, protocol: 'tcp' }],
      }),
    ]),
  );
  const g = buildGraph({ meshName: 'skein', view, streams: [] });
  assert.deepEqual(
    g.external.map((x) => [x.id, x.label]),
    [['ext:any', 'any address outside the mesh']],
  );
  assert.deepEqual(
    g.edges.filter((e) => e.kind === 'egress').map((e) => [e.source, e.target, e.label]),
    [['svc:bookstore/bookstore-v1', 'ext:any', 'tcp 5432 · anywhere-5432']],
  );
});

test('buildGraph: enableEgress (or permissive mode) is one "any destination" node, no egress edges, the Egress objects moot', () => {
  for (const traffic of [{ enableEgress: true }, { permissive: true }]) {
    const objects = bookstoreObjects().map(
      (o): AnyObject =>
        o.kind === 'MeshConfig'
          ? { ...o, spec: { ...o.spec, traffic: { ...o.spec.traffic, ...traffic } } }
          : o,
    );
    const g = buildGraph({
      meshName: 'skein',
      view: viewOf(storeOf([...objects, ...bookbuyerEgresses()])),
      streams: [],
    });
    assert.equal(g.external.length, 1, JSON.stringify(traffic));
    const anywhere = g.external[0];
    assert.equal(anywhere?.id, 'ext:any');
    assert.match(anywhere?.passthrough ?? '', traffic.permissive ? /permissive mode/ : /enableEgress/);
    assert.deepEqual(anywhere?.moot, ['bookbuyer/api', 'bookbuyer/db', 'bookbuyer/github', 'bookbuyer/smtp']);
    assert.deepEqual(
      g.edges.filter((e) => e.kind === 'egress'),
      [],
    );
  }
});

test('buildGraph: an Egress rule the catalog drops is not drawn, and its problem rides on the edge that remains', () => {
  const view = egressMesh([
    // Port 80 is already http for bookbuyer (Egress api, first by name): this tcp rule is dropped.
    egress('bookbuyer', 'zz-raw-80', {
      sources: [{ kind: 'ServiceAccount', name: 'bookbuyer', namespace: 'bookbuyer' }],
      ipAddresses: ['192.0.2.0/24'],
      ports: [
        { number: 80, protocol: 'tcp' },
        { number: 6379, protocol: 'tcp' },
      ],
    }),
  ]);
  const g = buildGraph({ meshName: 'skein', view, streams: [], problems: bookProblems(view) });
  const edge = g.edges.find((e) => e.id === 'egress:id:bookbuyer/bookbuyer->ext:cidr:192.0.2.0/24');
  assert.deepEqual(
    edge?.egress?.map((p) => [p.port, p.protocol]),
    [[6379, 'tcp']],
  );
  assert.deepEqual(
    edge?.problems?.map((p) => [p.kind, p.name]),
    [['Egress', 'zz-raw-80']],
  );
  assert.match(edge?.problems?.[0]?.reason ?? '', /port 80 is http/);
  // Edges of other Egress objects carry no problem.
  assert.equal(g.edges.find((e) => e.target === 'ext:host:api.example.com')?.problems, undefined);
});

test('buildGraph: IngressBackend sources — IPRange nodes outside the mesh, a Service source by its own node — into backends, with Ingress routes', () => {
  const view = viewOf(storeOf(ingressObjects()));
  const g = buildGraph({ meshName: 'skein', view, streams: [] });
  assert.deepEqual(
    g.ingressSources.map((s) => [s.id, s.kind, s.label, s.cidrs]),
    [
      ['in:ip:10.0.9.0/24', 'IPRange', '10.0.9.0/24', ['10.0.9.0/24']],
      // A bare address is a host route, as on the chain.
      ['in:ip:10.0.9.9/32', 'IPRange', '10.0.9.9/32', ['10.0.9.9/32']],
    ],
  );
  const ingress = g.edges.filter((e) => e.kind === 'ingress');
  assert.deepEqual(
    ingress.map((e) => [e.source, e.target, e.label]),
    [
      [
        'in:ip:10.0.9.0/24',
        'svc:bookstore/bookstore-v1',
        'http · shop.example.com/books, shop.example.com/about',
      ],
      ['in:ip:10.0.9.9/32', 'svc:bookwarehouse/bookwarehouse', 'https mTLS'],
      // The controller's Service is in a monitored namespace: the graph already has its node.
      [
        'svc:ingress-nginx/ingress-nginx',
        'svc:bookstore/bookstore-v1',
        'http · shop.example.com/books, shop.example.com/about',
      ],
    ],
  );
  assert.deepEqual(ingress[0]?.ingress, [
    {
      targetPort: 14001,
      protocol: 'http',
      how: 'http',
      principals: [],
      sniHosts: [],
      routes: ['shop.example.com /books (prefix)', 'shop.example.com /about (exact)'],
      requests: ['all requests'],
      ingressBackend: 'bookstore/shop',
      ingresses: ['bookstore/shop'],
    },
  ]);
  assert.deepEqual(ingress[1]?.ingress, [
    {
      targetPort: 14001,
      protocol: 'https',
      clientCert: 'mTLS',
      how: 'https mTLS',
      principals: [INGRESS_PRINCIPAL],
      sniHosts: ['warehouse.example.com'],
      routes: ['any host and path'],
      requests: ['POST /skein\\.Warehouse/Get.*'],
      ingressBackend: 'bookwarehouse/api',
      ingresses: [],
    },
  ]);
  assert.equal(g.counts.ingress, 3);
});

test('buildGraph: skipClientCertValidation, an unresolved Service source, and an Ingress no IngressBackend backs', () => {
  const objects = ingressObjects().filter((o) => !(o.kind === 'IngressBackend' && o.metadata.name === 'api'));
  const view = viewOf(
    storeOf([
      ...objects,
      ingressBackend('bookwarehouse', 'plain-tls', {
        backends: [
          {
            name: 'bookwarehouse',
            port: { number: 14001, protocol: 'https' },
            tls: { skipClientCertValidation: true },
          },
        ],
        sources: [
          { kind: 'IPRange', name: '192.0.2.0/24' },
          { kind: 'Service', name: 'nowhere', namespace: 'elsewhere' },
        ],
      }),
      ingress('bookwarehouse', 'orphan', {
        rules: [
          {
            host: 'db.example.com',
            http: {
              paths: [
                {
                  path: '/',
                  pathType: 'Prefix',
                  backend: { service: { name: 'mysql', port: { number: 3306 } } },
                },
              ],
            },
          },
        ],
      }),
    ]),
  );
  const g = buildGraph({ meshName: 'skein', view, streams: [], problems: bookProblems(view) });
  const tls = g.edges.filter((e) => e.kind === 'ingress' && e.target === 'svc:bookwarehouse/bookwarehouse');
  // The unresolved Service admits nobody: only the IPRange is drawn.
  assert.deepEqual(
    tls.map((e) => [e.source, e.label]),
    [['in:ip:192.0.2.0/24', 'https (no client cert)']],
  );
  assert.equal(tls[0]?.ingress?.[0]?.clientCert, 'skip');
  assert.match(
    tls[0]?.problems?.map((p) => p.reason).join('\n') ?? '',
    /source Service elsewhere\/nowhere is not in a monitored namespace/,
  );
  // The orphan Ingress opens nothing (SMI mode): no edge into mysql, its problem is in the list.
  assert.deepEqual(
    g.edges.filter((e) => e.target === 'svc:bookwarehouse/mysql' && e.kind === 'ingress'),
    [],
  );
  assert.ok(g.problems.some((p) => p.kind === 'Ingress' && p.name === 'orphan'));
});

const reported = (source: string, destination: string, over: Partial<EdgeSummary> = {}): EdgeSummary => ({
  source,
  destination,
  proxies: 2,
  seconds: 60,
  requests: 740,
  rps: 740 / 60,
  responses: 740,
  errors: 37,
  successRate: 703 / 740,
  p50Ms: 1.234,
  p99Ms: 48.06,
  total: { requests: 900, responses: 900, errors: 40 },
  ...over,
});

test('buildGraph: reported traffic rides on the allow edge it went along: rate and success in the label and data', () => {
  const g = buildGraph({
    meshName: 'skein',
    view: buildMeshView(shopStore(), { meshName: 'skein' }),
    streams: [],
    edgeStats: [
      reported('buyers/bookbuyer', 'shop/bookstore-v1'),
      // A destination the mesh no longer has is not drawn.
      reported('buyers/bookbuyer', 'shop/gone'),
    ],
  });
  const e = g.edges.find((x) => x.id === 'allow:id:buyers/bookbuyer->svc:shop/bookstore-v1');
  assert.equal(e?.label, 'buyer-to-store · 12.3 rps · 95% ok');
  assert.deepEqual(e?.traffic, {
    rps: 12.33,
    successPercent: 95,
    p50Ms: 1.2,
    p99Ms: 48.1,
    requests: 740,
    errors: 37,
    seconds: 60,
    proxies: 2,
    label: '12.3 rps · 95% ok',
  });
  assert.equal(g.counts.traffic, 1);
  assert.equal(g.edges.filter((x) => x.kind === 'traffic').length, 0);
  // Edges without reports carry none.
  assert.equal(
    g.edges.find((x) => x.id === 'allow:id:buyers/bookbuyer->svc:shop/bookstore-v2')?.traffic,
    undefined,
  );
});

test('buildGraph: in permissive mode (no allow edges) reported traffic is an edge of its own, from each node of the source', () => {
  const store = shopStore();
  store.upsert(meshConfig('skein', 'skein-system', { traffic: { permissive: true } }));
  const g = buildGraph({
    meshName: 'skein',
    view: buildMeshView(store, { meshName: 'skein' }),
    streams: [],
    edgeStats: [
      reported('shop/bookstore', 'shop/warehouse', { rps: 0.5, successRate: undefined, responses: 0 }),
    ],
  });
  assert.deepEqual(
    g.edges.filter((e) => e.kind === 'traffic').map((e) => [e.id, e.label, e.traffic?.successPercent]),
    [
      ['traffic:svc:shop/bookstore-v1->svc:shop/warehouse', '0.50 rps · no responses', undefined],
      ['traffic:svc:shop/bookstore-v2->svc:shop/warehouse', '0.50 rps · no responses', undefined],
    ],
  );
  assert.equal(g.counts.traffic, 2);
});
