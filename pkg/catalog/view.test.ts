import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  endpointSlice,
  httpRouteGroup,
  meshConfig,
  namespace,
  pod,
  sa,
  service,
  tcpRoute,
  trafficSplit,
  trafficTarget,
} from '../../test/support/catalog-fixtures.js';
import { LABEL_MONITORED_BY } from '../mesh/constants.js';
import type { AnyObject } from '../model/objects.js';
import { MeshStore } from '../registry/store.js';
import { parseServiceHost, portProtocol } from './services.js';
import type { MeshView } from './types.js';
import { buildMeshView, meshConfigOf, monitoredNamespaces, policyProblems } from './view.js';

const MESH = 'skein';
const ids = (list: readonly { namespace: string; serviceAccount: string }[]) =>
  list.map((i) => `${i.namespace}/${i.serviceAccount}`);
const keys = (list: readonly { key: string }[] | undefined) => (list ?? []).map((s) => s.key);

function storeWith(...objects: AnyObject[]): MeshStore {
  const s = new MeshStore();
  for (const o of objects) s.upsert(o);
  return s;
}

/** A bookstore-like mesh in namespace `shop`, plus an unmonitored namespace `other`. */
function bookstore(): AnyObject[] {
  return [
    namespace('shop', MESH),
    namespace('other'),
    namespace('elsewhere', 'another-mesh'),
    service(
      'shop',
      'bookstore',
      [{ name: 'http', port: 80, targetPort: 'web' }],
      { app: 'bookstore' },
      '10.96.0.10',
    ),
    service('shop', 'bookstore-v1', [{ name: 'http', port: 80, targetPort: 'web' }], {
      app: 'bookstore',
      version: 'v1',
    }),
    service('shop', 'bookstore-v2', [{ name: 'http', port: 80, targetPort: 'web' }], {
      app: 'bookstore',
      version: 'v2',
    }),
    service('shop', 'bookbuyer', [{ name: 'http', port: 80, targetPort: 8080 }]),
    service('shop', 'warehouse', [
      { name: 'tcp-db', port: 5432 },
      { name: 'api', port: 9000, appProtocol: 'grpc' },
    ]),
    service('other', 'outside', [{ port: 80 }]),
    service('elsewhere', 'foreign', [{ port: 80 }]),
    pod('shop', 'bookstore-v1-a', {
      sa: 'bookstore',
      labels: { app: 'bookstore', version: 'v1' },
      ip: '10.0.0.11',
      uuid: '11111111-1111-4111-8111-111111111111',
      containerPorts: [{ name: 'web', containerPort: 14001 }],
    }),
    pod('shop', 'bookstore-v2-a', {
      sa: 'bookstore-v2',
      labels: { app: 'bookstore', version: 'v2' },
      ip: '10.0.0.12',
      containerPorts: [{ name: 'web', containerPort: 14002 }],
    }),
    pod('shop', 'bookbuyer-a', { sa: 'bookbuyer', labels: { app: 'bookbuyer' }, ip: '10.0.0.20' }),
    pod('shop', 'warehouse-a', { labels: { app: 'warehouse' }, ip: '10.0.0.30' }),
    pod('other', 'outside-a', { labels: { app: 'outside' }, uuid: '22222222-2222-4222-8222-222222222222' }),
  ];
}

test('only namespaces labelled for this mesh are part of it', () => {
  const view = buildMeshView(storeWith(...bookstore()), { meshName: MESH });
  assert.deepEqual(monitoredNamespaces(view), ['shop']);
  assert.deepEqual(keys(view.services()), [
    'shop/bookbuyer',
    'shop/bookstore',
    'shop/bookstore-v1',
    'shop/bookstore-v2',
    'shop/warehouse',
  ]);
  assert.equal(view.service('other/outside'), undefined);
  assert.equal(view.podOfProxy('22222222-2222-4222-8222-222222222222'), undefined);
  assert.equal(view.podOfProxy('11111111-1111-4111-8111-111111111111')?.metadata.name, 'bookstore-v1-a');

  // The same store seen as the other mesh contains only that mesh's namespace.
  const other = buildMeshView(storeWith(...bookstore()), { meshName: 'another-mesh' });
  assert.deepEqual(keys(other.services()), ['elsewhere/foreign']);
});

test('services: fqdn, clusterIP, host lookup, protocols and named target ports', () => {
  const view = buildMeshView(storeWith(...bookstore()), { meshName: MESH });
  const bs = view.service('shop/bookstore');
  assert.ok(bs);
  assert.equal(bs.fqdn, 'bookstore.shop.svc.cluster.local');
  assert.equal(bs.clusterIP, '10.96.0.10');
  // Named targetPort resolved through the first selected pod (by name) that declares it.
  assert.deepEqual(bs.ports, [
    { name: 'http', port: 80, targetPort: 14001, targetPortName: 'web', protocol: 'http' },
  ]);
  assert.equal(view.service('shop/bookstore-v2')?.ports[0]?.targetPort, 14002);
  assert.deepEqual(view.service('shop/warehouse')?.ports, [
    { name: 'tcp-db', port: 5432, targetPort: 5432, protocol: 'tcp' },
    { name: 'api', port: 9000, targetPort: 9000, protocol: 'grpc' },
  ]);
  for (const host of [
    'bookstore.shop.svc.cluster.local',
    'bookstore.shop.svc',
    'bookstore.shop',
    'bookstore.shop.svc.cluster.local:80',
  ]) {
    assert.equal(view.serviceByHost(host), bs, host);
  }
  assert.equal(view.serviceByHost('bookstore'), undefined);
  assert.equal(view.serviceByHost('outside.other'), undefined);
});

test('a named target port no selected pod declares falls back to the service port', () => {
  const view = buildMeshView(
    storeWith(
      namespace('shop', MESH),
      service('shop', 'x', [{ name: 'http', port: 81, targetPort: 'nope' }]),
    ),
    { meshName: MESH },
  );
  assert.equal(view.service('shop/x')?.ports[0]?.targetPort, 81);
});

test('port protocol: appProtocol, then name prefix, then http', () => {
  const cases: [{ name?: string; appProtocol?: string }, string][] = [
    [{ appProtocol: 'grpc', name: 'tcp-x' }, 'grpc'],
    [{ appProtocol: 'http2' }, 'http'],
    [{ appProtocol: 'h2c' }, 'http'],
    [{ appProtocol: 'kubernetes.io/h2c' }, 'http'],
    [{ appProtocol: 'tcp', name: 'http' }, 'tcp'],
    [{ appProtocol: 'mysql', name: 'tcp-db' }, 'tcp'],
    [{ name: 'grpc-api' }, 'grpc'],
    [{ name: 'grpc' }, 'grpc'],
    [{ name: 'tcp' }, 'tcp'],
    [{ name: 'http-web' }, 'http'],
    [{ name: 'grpcweb' }, 'http'],
    [{ name: 'metrics' }, 'http'],
    [{}, 'http'],
  ];
  for (const [port, want] of cases) assert.equal(portProtocol(port), want, JSON.stringify(port));
});

test('parseServiceHost rejects hosts that do not name a namespace', () => {
  assert.deepEqual(parseServiceHost('a.b.svc.cluster.local.'), { name: 'a', namespace: 'b' });
  assert.equal(parseServiceHost('a'), undefined);
  assert.equal(parseServiceHost('a.b.c'), undefined);
  assert.equal(parseServiceHost('.b'), undefined);
});

test('endpoints: ready only, sorted by IP, deduplicated, slice port matched by name', () => {
  const store = storeWith(
    ...bookstore(),
    endpointSlice(
      'shop',
      'warehouse',
      'warehouse-1',
      [
        { ip: '10.0.0.10', pod: 'warehouse-b' },
        { ip: '10.0.0.9', ready: true },
        { ip: '10.0.0.30', ready: false },
      ],
      [
        { name: 'api', port: 19000 },
        { name: 'tcp-db', port: 15432 },
      ],
    ),
    endpointSlice(
      'shop',
      'warehouse',
      'warehouse-2',
      [{ ip: '10.0.0.9' }, { ip: '10.0.0.2' }],
      [
        { name: 'tcp-db', port: 15432 },
        { name: 'api', port: 19000 },
      ],
    ),
    // Belongs to another service: never mixed in.
    endpointSlice('shop', 'bookbuyer', 'bookbuyer-1', [{ ip: '10.0.0.20' }], [{ name: 'http', port: 8080 }]),
  );
  const view = buildMeshView(store, { meshName: MESH });
  assert.deepEqual(view.endpoints('shop/warehouse', 5432), [
    { ip: '10.0.0.2', port: 15432, ready: true },
    { ip: '10.0.0.9', port: 15432, ready: true },
    { ip: '10.0.0.10', port: 15432, ready: true, podName: 'warehouse-b' },
  ]);
  assert.deepEqual(
    view.endpoints('shop/warehouse', 9000).map((e) => e.port),
    [19000, 19000, 19000],
  );
  assert.deepEqual(view.endpoints('shop/warehouse', 1234), []);
  assert.deepEqual(view.endpoints('shop/nope', 80), []);
  assert.deepEqual(view.endpoints('shop/bookbuyer', 80), [{ ip: '10.0.0.20', port: 8080, ready: true }]);
});

test('endpoints: an unnamed single slice port serves a single-port service; no ports uses the target port', () => {
  const store = storeWith(
    namespace('shop', MESH),
    service('shop', 'a', [{ name: 'web', port: 80, targetPort: 8080 }]),
    service('shop', 'b', [{ name: 'web', port: 80, targetPort: 8081 }]),
    endpointSlice('shop', 'a', 'a-1', [{ ip: '10.1.0.1' }], [{ port: 9999 }]),
    endpointSlice('shop', 'b', 'b-1', [{ ip: '10.1.0.2' }]),
  );
  const view = buildMeshView(store, { meshName: MESH });
  assert.deepEqual(view.endpoints('shop/a', 80), [{ ip: '10.1.0.1', port: 9999, ready: true }]);
  assert.deepEqual(view.endpoints('shop/b', 80), [{ ip: '10.1.0.2', port: 8081, ready: true }]);
});

test('endpoints: pods sharing an IP on different ports (hostNetwork) are all kept, sorted by port', () => {
  // The EndpointSlice controller puts pods whose named target port resolves to
  // different numbers into different slices.
  const store = storeWith(
    namespace('shop', MESH),
    service('shop', 'a', [{ name: 'grpc-api', port: 80, targetPort: 'grpc-api' }]),
    endpointSlice('shop', 'a', 'a-1', [{ ip: '10.1.0.1', pod: 'a-2' }], [{ name: 'grpc-api', port: 9002 }]),
    endpointSlice('shop', 'a', 'a-2', [{ ip: '10.1.0.1', pod: 'a-1' }], [{ name: 'grpc-api', port: 9001 }]),
    // The same address and port twice (a pod moving between slices) is one endpoint.
    endpointSlice('shop', 'a', 'a-3', [{ ip: '10.1.0.1', pod: 'a-1' }], [{ name: 'grpc-api', port: 9001 }]),
  );
  const view = buildMeshView(store, { meshName: MESH });
  assert.deepEqual(view.endpoints('shop/a', 80), [
    { ip: '10.1.0.1', port: 9001, ready: true, podName: 'a-1' },
    { ip: '10.1.0.1', port: 9002, ready: true, podName: 'a-2' },
  ]);
});

test('service identities are the distinct service accounts of selected pods (default: default)', () => {
  const store = storeWith(
    ...bookstore(),
    pod('shop', 'bookstore-v1-b', { sa: 'bookstore', labels: { app: 'bookstore', version: 'v1' } }),
    // Terminated pods lend no identity.
    pod('shop', 'bookstore-old', { sa: 'old', labels: { app: 'bookstore' }, phase: 'Succeeded' }),
  );
  const view = buildMeshView(store, { meshName: MESH });
  assert.deepEqual(ids(view.serviceIdentities('shop/bookstore')), ['shop/bookstore', 'shop/bookstore-v2']);
  assert.deepEqual(ids(view.serviceIdentities('shop/bookstore-v1')), ['shop/bookstore']);
  assert.deepEqual(ids(view.serviceIdentities('shop/warehouse')), ['shop/default']);
  assert.deepEqual(ids(view.serviceIdentities('shop/nope')), []);
});

test('servicesOfPod matches selectors in the pod namespace and is memoized per pod object', () => {
  const view = buildMeshView(storeWith(...bookstore()), { meshName: MESH });
  const p = view.podOfProxy('11111111-1111-4111-8111-111111111111');
  assert.ok(p);
  const first = view.servicesOfPod(p);
  assert.deepEqual(keys(first), ['shop/bookstore', 'shop/bookstore-v1']);
  assert.equal(view.servicesOfPod(p), first);
  const stranger = pod('other', 'x', { labels: { app: 'bookstore' } });
  assert.deepEqual(view.servicesOfPod(stranger), []);
});

test('servicesOfPod finds services selecting by any of the pod labels, in key order, and no others', () => {
  const http = [{ name: 'http', port: 80 }];
  const view = buildMeshView(
    storeWith(
      namespace('shop', MESH),
      namespace('other', MESH),
      // Indexed under different pairs of the same pod, listed out of key order.
      service('shop', 'zeta', http, { tier: 'web' }),
      service('shop', 'alpha', http, { app: 'shop', tier: 'web' }),
      service('shop', 'mid', http, { team: 'a' }),
      // First pair matches, second does not.
      service('shop', 'near-miss', http, { app: 'shop', tier: 'db' }),
      service('shop', 'no-selector', http, {}),
      // The same selector in another namespace.
      service('other', 'twin', http, { app: 'shop' }),
    ),
    { meshName: MESH },
  );
  const p = pod('shop', 'p', { labels: { app: 'shop', tier: 'web', team: 'a' } });
  assert.deepEqual(keys(view.servicesOfPod(p)), ['shop/alpha', 'shop/mid', 'shop/zeta']);
  assert.deepEqual(keys(view.servicesOfPod(pod('shop', 'bare', {}))), []);
  assert.deepEqual(keys(view.servicesOfPod(pod('other', 'q', { labels: { app: 'shop' } }))), ['other/twin']);
});

test('permissive mode: every service reaches every other, inbound allows any source', () => {
  const store = storeWith(
    ...bookstore(),
    meshConfig(MESH, 'skein-system', { traffic: { permissive: true } }),
  );
  const view = buildMeshView(store, { meshName: MESH });
  assert.equal(view.permissive, true);
  assert.equal(view.trustDomain, 'cluster.local');
  assert.deepEqual(
    keys(view.outboundServices({ namespace: 'shop', serviceAccount: 'anyone' })),
    keys(view.services()),
  );
  assert.deepEqual(view.inboundRules('shop/bookstore', 80), [
    { sources: 'any', http: 'all', origin: 'permissive' },
  ]);
  // A port the service does not have, or an unknown service: nothing.
  assert.deepEqual(view.inboundRules('shop/bookstore', 81), []);
  assert.deepEqual(view.inboundRules('shop/nope', 80), []);
});

test('MeshConfig: the one named like the mesh, else the only one, else defaults with a problem', () => {
  const named = storeWith(
    meshConfig('other', 'a', { traffic: { permissive: true } }),
    meshConfig(MESH, 'b', { certificate: { trustDomain: 'example.org' } }),
  );
  const v1 = buildMeshView(named, { meshName: MESH });
  assert.equal(v1.permissive, false);
  assert.equal(v1.trustDomain, 'example.org');
  assert.equal(meshConfigOf(v1)?.metadata.namespace, 'b');

  const only = buildMeshView(storeWith(meshConfig('whatever', 'a', { traffic: { permissive: true } })), {
    meshName: MESH,
  });
  assert.equal(only.permissive, true);

  const ambiguous = buildMeshView(
    storeWith(meshConfig('x', 'a', { traffic: { permissive: true } }), meshConfig('y', 'a', {})),
    { meshName: MESH },
  );
  assert.equal(ambiguous.permissive, false);
  assert.equal(meshConfigOf(ambiguous), undefined);
  assert.equal(policyProblems(ambiguous).filter((p) => p.kind === 'MeshConfig').length, 2);

  const none = buildMeshView(new MeshStore(), { meshName: MESH });
  assert.equal(none.permissive, false);
  assert.equal(none.trustDomain, 'cluster.local');
});

/** SMI policy on top of the bookstore mesh. */
function smi(): AnyObject[] {
  return [
    ...bookstore(),
    httpRouteGroup('shop', 'store-routes', [
      { name: 'books', pathRegex: '/books', methods: ['GET'] },
      { name: 'buy', pathRegex: '/buy', methods: ['POST'], headers: { 'x-user': '.+' } },
    ]),
    tcpRoute('shop', 'db', [5432]),
    tcpRoute('shop', 'everything'),
    trafficTarget(
      'shop',
      'buyer-to-store',
      sa('bookstore', 'shop'),
      [sa('bookbuyer', 'shop')],
      [{ kind: 'HTTPRouteGroup', name: 'store-routes', matches: ['buy'] }],
    ),
    // Source namespace defaults to the target's namespace; omitted matches = all.
    trafficTarget(
      'shop',
      'admin-to-store',
      sa('bookstore'),
      [sa('admin')],
      [{ kind: 'HTTPRouteGroup', name: 'store-routes' }],
    ),
    trafficTarget(
      'shop',
      'store-to-warehouse',
      sa('default', 'shop'),
      [sa('bookstore', 'shop')],
      [
        { kind: 'TCPRoute', name: 'db' },
        // HTTP matches do not apply to the tcp port, but do to the grpc one.
        { kind: 'HTTPRouteGroup', name: 'store-routes', matches: ['books'] },
      ],
    ),
    trafficTarget(
      'shop',
      'ops-to-warehouse',
      sa('default'),
      [sa('ops', 'tools')],
      [{ kind: 'TCPRoute', name: 'everything' }],
    ),
  ];
}

test('SMI: deny by default; a TrafficTarget allows its sources on services of its destination identity', () => {
  const view = buildMeshView(storeWith(...smi()), { meshName: MESH });
  assert.equal(view.permissive, false);
  // Nobody targets bookbuyer.
  assert.deepEqual(view.inboundRules('shop/bookbuyer', 80), []);

  // bookstore and bookstore-v1 are backed by SA bookstore; both carry its rules, sorted by origin.
  for (const key of ['shop/bookstore', 'shop/bookstore-v1']) {
    const rules = view.inboundRules(key, 80);
    assert.deepEqual(
      rules.map((r) => r.origin),
      ['TrafficTarget shop/admin-to-store', 'TrafficTarget shop/buyer-to-store'],
      key,
    );
    assert.deepEqual(rules[0]?.sources, [{ namespace: 'shop', serviceAccount: 'admin' }]);
    assert.deepEqual(rules[0]?.http === 'all' ? 'all' : rules[0]?.http.map((m) => m.name), ['books', 'buy']);
    assert.deepEqual(rules[1]?.sources, [{ namespace: 'shop', serviceAccount: 'bookbuyer' }]);
    assert.deepEqual(rules[1]?.http, [
      { name: 'buy', pathRegex: '/buy', methods: ['POST'], headers: { 'x-user': '.+' } },
    ]);
  }
  // bookstore-v2 runs as another identity: no rule.
  assert.deepEqual(view.inboundRules('shop/bookstore-v2', 80), []);
});

test('SMI: TCPRoute opens its ports to any protocol; HTTPRouteGroup rules never apply to tcp ports', () => {
  const view = buildMeshView(storeWith(...smi()), { meshName: MESH });
  const db = view.inboundRules('shop/warehouse', 5432);
  assert.deepEqual(db, [
    {
      sources: [{ namespace: 'tools', serviceAccount: 'ops' }],
      http: 'all',
      origin: 'TrafficTarget shop/ops-to-warehouse',
    },
    {
      sources: [{ namespace: 'shop', serviceAccount: 'bookstore' }],
      http: 'all',
      origin: 'TrafficTarget shop/store-to-warehouse',
    },
  ]);
  const api = view.inboundRules('shop/warehouse', 9000);
  // ops: TCPRoute with no ports covers every port, so all requests on the grpc port.
  assert.deepEqual(api[0]?.http, 'all');
  // store: TCPRoute `db` covers only 5432, so on 9000 just the `books` match applies.
  assert.equal(api[1]?.origin, 'TrafficTarget shop/store-to-warehouse');
  assert.deepEqual(api[1]?.http === 'all' ? 'all' : api[1]?.http.map((m) => m.name), ['books']);
});

test('SMI: outbound services are those with a rule for the source, plus apexes with a reachable backend', () => {
  const store = storeWith(
    ...smi(),
    trafficSplit('shop', 'bookstore-split', 'bookstore', [
      { service: 'bookstore-v1', weight: 90 },
      { service: 'bookstore-v2', weight: 10 },
    ]),
  );
  const view = buildMeshView(store, { meshName: MESH });
  const buyer = { namespace: 'shop', serviceAccount: 'bookbuyer' };
  assert.deepEqual(keys(view.outboundServices(buyer)), ['shop/bookstore', 'shop/bookstore-v1']);
  assert.equal(view.outboundServices(buyer), view.outboundServices({ ...buyer }), 'memoized per identity');
  assert.deepEqual(keys(view.outboundServices({ namespace: 'shop', serviceAccount: 'bookstore' })), [
    'shop/warehouse',
  ]);
  assert.deepEqual(keys(view.outboundServices({ namespace: 'tools', serviceAccount: 'ops' })), [
    'shop/warehouse',
  ]);
  assert.deepEqual(view.outboundServices({ namespace: 'shop', serviceAccount: 'nobody' }), []);
});

test('SMI: missing route objects contribute nothing and are reported', () => {
  const store = storeWith(
    ...bookstore(),
    httpRouteGroup('shop', 'store-routes', [{ name: 'books', pathRegex: '/books' }]),
    trafficTarget(
      'shop',
      'broken',
      sa('bookstore'),
      [sa('bookbuyer')],
      [
        { kind: 'HTTPRouteGroup', name: 'missing-group' },
        { kind: 'TCPRoute', name: 'missing-tcp' },
        { kind: 'HTTPRouteGroup', name: 'store-routes', matches: ['nope'] },
      ],
    ),
  );
  const view = buildMeshView(store, { meshName: MESH });
  assert.deepEqual(view.inboundRules('shop/bookstore', 80), []);
  assert.deepEqual(view.outboundServices({ namespace: 'shop', serviceAccount: 'bookbuyer' }), []);
  const reasons = policyProblems(view)
    .filter((p) => p.kind === 'TrafficTarget' && p.name === 'broken' && p.namespace === 'shop')
    .map((p) => p.reason);
  assert.equal(reasons.length, 3);
  assert.match(reasons.join('\n'), /HTTPRouteGroup shop\/missing-group does not exist/);
  assert.match(reasons.join('\n'), /TCPRoute shop\/missing-tcp does not exist/);
  assert.match(reasons.join('\n'), /no match named "nope"/);
});

test('SMI: a TrafficTarget outside its destination namespace is ignored and reported', () => {
  const store = storeWith(
    ...bookstore(),
    namespace('team', MESH),
    tcpRoute('team', 'all'),
    trafficTarget(
      'team',
      'grab',
      sa('bookstore', 'shop'),
      [sa('intruder', 'team')],
      [{ kind: 'TCPRoute', name: 'all' }],
    ),
  );
  const view = buildMeshView(store, { meshName: MESH });
  assert.deepEqual(view.inboundRules('shop/bookstore', 80), []);
  assert.deepEqual(view.outboundServices({ namespace: 'team', serviceAccount: 'intruder' }), []);
  const p = policyProblems(view).find((x) => x.name === 'grab');
  assert.ok(p);
  assert.equal(p.namespace, 'team');
  assert.match(p.reason, /destination namespace shop differs/);
});

test('SMI objects in unmonitored namespaces are not part of the mesh', () => {
  const store = storeWith(
    ...bookstore(),
    tcpRoute('other', 'all'),
    trafficTarget(
      'other',
      'x',
      sa('default'),
      [sa('bookbuyer', 'shop')],
      [{ kind: 'TCPRoute', name: 'all' }],
    ),
    trafficSplit('other', 's', 'outside', [{ service: 'outside', weight: 1 }]),
  );
  const view = buildMeshView(store, { meshName: MESH });
  assert.deepEqual(view.outboundServices({ namespace: 'shop', serviceAccount: 'bookbuyer' }), []);
  assert.equal(view.split('other/outside'), undefined);
  assert.deepEqual(policyProblems(view), []);
});

test('TrafficSplit: splits of one apex merge (weights summed), FQDN refs normalise, missing backends drop', () => {
  const store = storeWith(
    ...bookstore(),
    trafficSplit('shop', 'a', 'bookstore.shop.svc.cluster.local', [
      { service: 'bookstore-v2', weight: 10 },
      { service: 'bookstore-v1', weight: 40 },
      { service: 'ghost', weight: 50 },
    ]),
    trafficSplit(
      'shop',
      'b',
      'bookstore',
      [
        { service: 'bookstore-v1.shop', weight: 20 },
        { service: 'bookstore-v2', weight: 0 },
      ],
      'split.smi-spec.io/v1alpha4',
    ),
  );
  const view = buildMeshView(store, { meshName: MESH });
  const split = view.split('shop/bookstore');
  assert.deepEqual(
    split?.map((b) => [b.service.key, b.weight]),
    [
      ['shop/bookstore-v1', 60],
      ['shop/bookstore-v2', 10],
    ],
  );
  assert.equal(split?.[0]?.service, view.service('shop/bookstore-v1'));
  assert.equal(view.split('shop/bookstore-v1'), undefined);
  const problems = policyProblems(view);
  assert.deepEqual(
    problems.map((p) => [p.kind, p.name]),
    [['TrafficSplit', 'a']],
  );
  assert.match(problems[0]?.reason ?? '', /backend service shop\/ghost does not exist/);
});

test('TrafficSplit: missing apex, foreign FQDN and zero total weight give no split and a problem', () => {
  const store = storeWith(
    ...bookstore(),
    trafficSplit('shop', 'no-apex', 'ghost', [{ service: 'bookstore-v1', weight: 1 }]),
    trafficSplit('shop', 'foreign', 'bookstore.other.svc.cluster.local', [
      { service: 'bookstore-v1', weight: 1 },
    ]),
    trafficSplit('shop', 'zero', 'bookbuyer', [{ service: 'bookstore-v1', weight: 0 }]),
  );
  const view = buildMeshView(store, { meshName: MESH });
  assert.equal(view.split('shop/ghost'), undefined);
  assert.equal(view.split('shop/bookstore'), undefined);
  assert.equal(view.split('shop/bookbuyer'), undefined);
  const byName = new Map(policyProblems(view).map((p) => [p.name, p.reason]));
  assert.match(byName.get('no-apex') ?? '', /apex service shop\/ghost does not exist/);
  assert.match(byName.get('foreign') ?? '', /not a service of namespace shop/);
  assert.match(byName.get('zero') ?? '', /no existing backend with a positive weight/);
});

test('a split apex reports the identities of its backends too', () => {
  const store = storeWith(
    ...bookstore(),
    service('shop', 'apex', [{ name: 'http', port: 80 }], { app: 'none' }),
    trafficSplit('shop', 's', 'apex', [
      { service: 'bookstore-v2', weight: 1 },
      { service: 'bookbuyer', weight: 1 },
    ]),
  );
  const view = buildMeshView(store, { meshName: MESH });
  assert.deepEqual(ids(view.serviceIdentities('shop/apex')), ['shop/bookbuyer', 'shop/bookstore-v2']);
});

test('a view is a snapshot: later store changes do not leak into lazily computed answers', () => {
  const store = storeWith(...smi());
  const view = buildMeshView(store, { meshName: MESH });
  store.delete('Service', 'shop/bookstore');
  store.delete('TrafficTarget', 'shop/buyer-to-store');
  store.upsert(namespace('shop'));
  assert.equal(view.service('shop/bookstore')?.key, 'shop/bookstore');
  assert.equal(view.inboundRules('shop/bookstore', 80).length, 2);
  const next = buildMeshView(store, { meshName: MESH, previous: view });
  assert.notEqual(next.version, view.version);
  assert.deepEqual(next.services(), []);
});

test('previous view: returned as-is when the store did not move; unchanged services keep their identity', () => {
  const store = storeWith(...bookstore());
  const v1 = buildMeshView(store, { meshName: MESH });
  assert.equal(buildMeshView(store, { meshName: MESH, previous: v1 }), v1);
  const buyer = v1.service('shop/bookbuyer');
  const store1 = v1.service('shop/bookstore');
  store.upsert(service('shop', 'bookstore', [{ name: 'http', port: 8080 }], { app: 'bookstore' }));
  const v2 = buildMeshView(store, { meshName: MESH, previous: v1 });
  assert.notEqual(v2, v1);
  assert.equal(v2.service('shop/bookbuyer'), buyer);
  assert.notEqual(v2.service('shop/bookstore'), store1);
  assert.equal(v2.service('shop/bookstore')?.ports[0]?.port, 8080);
});

/** Every answer a generator may key a memo on, for the keys the tests below look at. */
function answers(view: MeshView) {
  return {
    services: view.services(),
    buyer: view.service('shop/bookbuyer'),
    storeEndpoints: view.endpoints('shop/bookstore', 80),
    buyerEndpoints: view.endpoints('shop/bookbuyer', 80),
    storeIds: view.serviceIdentities('shop/bookstore'),
    warehouseIds: view.serviceIdentities('shop/warehouse'),
    storeRules: view.inboundRules('shop/bookstore', 80),
    warehouseRules: view.inboundRules('shop/warehouse', 9000),
    buyerOutbound: view.outboundServices({ namespace: 'shop', serviceAccount: 'bookbuyer' }),
    storeOutbound: view.outboundServices({ namespace: 'shop', serviceAccount: 'bookstore' }),
    split: view.split('shop/bookstore'),
  };
}

function withSlices(): AnyObject[] {
  return [
    ...smi(),
    trafficSplit('shop', 'split', 'bookstore', [
      { service: 'bookstore-v1', weight: 1 },
      { service: 'bookstore-v2', weight: 1 },
    ]),
    endpointSlice('shop', 'bookstore', 'bookstore-1', [{ ip: '10.0.0.11' }], [{ name: 'http', port: 14001 }]),
    endpointSlice('shop', 'bookbuyer', 'bookbuyer-1', [{ ip: '10.0.0.20' }], [{ name: 'http', port: 8080 }]),
  ];
}

test('identity contract: an unrelated change hands out the previous answers themselves', () => {
  const store = storeWith(...withSlices());
  const v1 = buildMeshView(store, { meshName: MESH });
  const before = answers(v1);
  assert.equal(before.storeEndpoints.length, 1);
  assert.ok(before.split && before.storeRules.length > 0 && before.buyerOutbound.length > 0);
  // A pod nothing selects and an HTTPRouteGroup no target names.
  store.upsert(pod('shop', 'stray', { labels: { app: 'nobody' }, ip: '10.0.0.99' }));
  store.upsert(httpRouteGroup('shop', 'unused', [{ name: 'x', pathRegex: '/x' }]));
  const v2 = buildMeshView(store, { meshName: MESH, previous: v1 });
  assert.notEqual(v2, v1);
  const after = answers(v2);
  for (const [name, value] of Object.entries(before)) {
    assert.equal(after[name as keyof typeof after], value, name);
  }
  // Answers first asked of a later view are still the ones an earlier view gave.
  const v3 = buildMeshView(store, { meshName: MESH, previous: v2 });
  assert.equal(v3.endpoints('shop/bookstore', 80), before.storeEndpoints);
});

test('identity contract: a change replaces exactly the answers whose content changed', () => {
  const store = storeWith(...withSlices());
  const v1 = buildMeshView(store, { meshName: MESH });
  const before = answers(v1);
  store.upsert(
    endpointSlice(
      'shop',
      'bookstore',
      'bookstore-1',
      [{ ip: '10.0.0.11' }, { ip: '10.0.0.13' }],
      [{ name: 'http', port: 14001 }],
    ),
  );
  const v2 = buildMeshView(store, { meshName: MESH, previous: v1 });
  const after = answers(v2);
  assert.notEqual(after.storeEndpoints, before.storeEndpoints);
  assert.deepEqual(
    after.storeEndpoints.map((e) => e.ip),
    ['10.0.0.11', '10.0.0.13'],
  );
  for (const [name, value] of Object.entries(before)) {
    if (name !== 'storeEndpoints') assert.equal(after[name as keyof typeof after], value, name);
  }

  // A split weight change: only the split answer moves.
  store.upsert(
    trafficSplit('shop', 'split', 'bookstore', [
      { service: 'bookstore-v1', weight: 1 },
      { service: 'bookstore-v2', weight: 3 },
    ]),
  );
  const v3 = buildMeshView(store, { meshName: MESH, previous: v2 });
  assert.notEqual(v3.split('shop/bookstore'), after.split);
  assert.deepEqual(
    v3.split('shop/bookstore')?.map((b) => b.weight),
    [1, 3],
  );
  assert.equal(v3.endpoints('shop/bookstore', 80), after.storeEndpoints);
  assert.equal(v3.inboundRules('shop/bookstore', 80), after.storeRules);

  // A TrafficTarget removal: the rules and the sources' outbound services move.
  store.delete('TrafficTarget', 'shop/buyer-to-store');
  const v4 = buildMeshView(store, { meshName: MESH, previous: v3 });
  assert.notEqual(v4.inboundRules('shop/bookstore', 80), after.storeRules);
  assert.notEqual(
    v4.outboundServices({ namespace: 'shop', serviceAccount: 'bookbuyer' }),
    after.buyerOutbound,
  );
  assert.equal(v4.inboundRules('shop/warehouse', 9000), after.warehouseRules);
  assert.equal(v4.services(), after.services);
});

test('identity contract: an older view never replaces what a newer one handed out', () => {
  const store = storeWith(...withSlices());
  const v1 = buildMeshView(store, { meshName: MESH });
  store.upsert(
    endpointSlice('shop', 'bookstore', 'bookstore-1', [{ ip: '10.0.0.14' }], [{ name: 'http', port: 14001 }]),
  );
  const v2 = buildMeshView(store, { meshName: MESH, previous: v1 });
  const current = v2.endpoints('shop/bookstore', 80);
  // v1 answers from its own snapshot, late: its answer must not displace v2's in the lineage.
  assert.deepEqual(
    v1.endpoints('shop/bookstore', 80).map((e) => e.ip),
    ['10.0.0.11'],
  );
  const v3 = buildMeshView(store, { meshName: MESH, previous: v2 });
  // v3 was built from the same store version as v2: it is v2.
  assert.equal(v3, v2);
  store.upsert(pod('shop', 'stray', { labels: { app: 'nobody' } }));
  const v4 = buildMeshView(store, { meshName: MESH, previous: v2 });
  assert.equal(v4.endpoints('shop/bookstore', 80), current);
});

test('namespace label for another mesh or a label change flips membership', () => {
  const store = storeWith(...bookstore());
  store.upsert({ ...namespace('shop'), metadata: { name: 'shop', labels: { [LABEL_MONITORED_BY]: 'x' } } });
  assert.deepEqual(buildMeshView(store, { meshName: MESH }).services(), []);
});
