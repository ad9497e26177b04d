import assert from 'node:assert/strict';
import { test } from 'node:test';
import { meshConfig, namespace, service } from '../../test/support/catalog-fixtures.js';
import type { AnyObject, Ingress, IngressBackend, IngressSpec } from '../model/objects.js';
import { MeshStore } from '../registry/store.js';
import type { GatewayPlan } from './gateway.js';
import { isGatewayIngress } from './gateway.js';
import type { PolicyProblem } from './problems.js';
import { buildMeshView, gatewayPlan, ingressPorts, policyProblems } from './view.js';

const MESH = 'skein';

function ingress(ns: string, name: string, spec: IngressSpec, annotations?: Record<string, string>): Ingress {
  const metadata = annotations ? { name, namespace: ns, annotations } : { name, namespace: ns };
  return { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata, spec };
}

const backend = (name: string, port?: number | string) => ({
  service: {
    name,
    ...(port === undefined ? {} : { port: typeof port === 'number' ? { number: port } : { name: port } }),
  },
});

/** One rule: a host (or none) with Prefix/Exact paths to `web:80`. */
function rule(host: string | undefined, ...paths: [type: 'Exact' | 'Prefix', path: string][]) {
  return {
    ...(host === undefined ? {} : { host }),
    http: { paths: paths.map(([pathType, path]) => ({ path, pathType, backend: backend('web', 80) })) },
  };
}

/** Namespace shop in the mesh (SMI mode), Services web (80→8080, 81→8081) and api (one port 9000). */
function objects(...extra: AnyObject[]): AnyObject[] {
  return [
    namespace('shop', MESH),
    namespace('alpha', MESH),
    namespace('outside'),
    meshConfig(MESH, 'skein-system', { traffic: { permissive: false } }),
    service('shop', 'web', [
      { name: 'http', port: 80, targetPort: 8080 },
      { name: 'admin', port: 81, targetPort: 8081 },
    ]),
    service('shop', 'api', [{ name: 'grpc', port: 9000, targetPort: 9000 }]),
    service('alpha', 'web', [{ name: 'http', port: 80, targetPort: 8080 }]),
    service('outside', 'web', [{ name: 'http', port: 80, targetPort: 8080 }]),
    ...extra,
  ];
}

function viewWith(...extra: AnyObject[]) {
  const store = new MeshStore();
  for (const o of objects(...extra)) store.upsert(o);
  return buildMeshView(store, { meshName: MESH });
}

function compiled(...extra: AnyObject[]): { plan: GatewayPlan; problems: readonly PolicyProblem[] } {
  const view = viewWith(...extra);
  return { plan: gatewayPlan(view), problems: policyProblems(view).filter((p) => p.kind === 'Ingress') };
}

/** host → `<type> <path> → <svc>:<port>` per route, in the plan's order. */
function routeTable(plan: GatewayPlan): [string, string[]][] {
  return plan.hosts.map((h) => [
    h.host,
    h.routes.map(
      (r) => `${r.path ? `${r.path.type} ${r.path.value}` : 'all'} → ${r.service.key}:${r.port.port}`,
    ),
  ]);
}

test('class skein by spec.ingressClassName or the legacy annotation; other classes and none are ignored', () => {
  const { plan, problems } = compiled(
    ingress('shop', 'by-spec', {
      ingressClassName: 'skein',
      rules: [rule('a.example.com', ['Prefix', '/a'])],
    }),
    ingress(
      'shop',
      'by-annotation',
      { rules: [rule('b.example.com', ['Prefix', '/b'])] },
      {
        'kubernetes.io/ingress.class': 'skein',
      },
    ),
    ingress('shop', 'nginx', { ingressClassName: 'nginx', rules: [rule('c.example.com', ['Prefix', '/c'])] }),
    ingress('shop', 'no-class', { rules: [rule('d.example.com', ['Prefix', '/d'])] }),
    // spec.ingressClassName wins over the annotation (Kubernetes Ingress docs).
    ingress(
      'shop',
      'spec-wins',
      { ingressClassName: 'nginx', rules: [rule('e.example.com', ['Prefix', '/e'])] },
      {
        'kubernetes.io/ingress.class': 'skein',
      },
    ),
    // Not in the mesh: never seen.
    ingress('outside', 'web', {
      ingressClassName: 'skein',
      rules: [rule('f.example.com', ['Prefix', '/f'])],
    }),
  );
  assert.deepEqual(plan.ingresses, ['Ingress shop/by-annotation', 'Ingress shop/by-spec']);
  assert.deepEqual(routeTable(plan), [
    ['a.example.com', ['Prefix /a → shop/web:80']],
    ['b.example.com', ['Prefix /b → shop/web:80']],
  ]);
  // The others are ordinary Ingresses (catalog/ingress.ts): without IngressBackend, SMI mode reports them.
  assert.deepEqual(
    problems.map((p) => [p.name, /no IngressBackend admits a source/.test(p.reason)]),
    [
      ['nginx', true],
      ['no-class', true],
      ['spec-wins', true],
    ],
  );

  const ing = (spec: IngressSpec, annotations?: Record<string, string>) =>
    ingress('x', 'y', spec, annotations);
  assert.equal(isGatewayIngress(ing({ ingressClassName: 'skein' })), true);
  assert.equal(isGatewayIngress(ing({}, { 'kubernetes.io/ingress.class': 'skein' })), true);
  assert.equal(isGatewayIngress(ing({ ingressClassName: 'Skein' })), false);
  assert.equal(isGatewayIngress(ing({})), false);
});

test('Kubernetes precedence: longest path first, Exact before Prefix at equal length, catch-all last; * host last', () => {
  const { plan, problems } = compiled(
    ingress('shop', 'gw', {
      ingressClassName: 'skein',
      rules: [
        rule(
          'b.example.com',
          ['Prefix', '/a'],
          ['Prefix', '/'],
          ['Exact', '/ab'],
          ['Prefix', '/abc'],
          ['Exact', '/abc'],
        ),
        rule(undefined, ['Prefix', '/any']),
        rule('A.Example.com', ['Exact', '/']),
        rule('*.example.com', ['Prefix', '/wild/']),
      ],
      defaultBackend: backend('api'),
    }),
  );
  assert.deepEqual(routeTable(plan), [
    ['*.example.com', ['Prefix /wild → shop/web:80']],
    // Host names are case-insensitive: lower-cased.
    ['a.example.com', ['Exact / → shop/web:80']],
    [
      'b.example.com',
      [
        'Exact /abc → shop/web:80',
        'Prefix /abc → shop/web:80',
        'Exact /ab → shop/web:80',
        'Prefix /a → shop/web:80',
        'all → shop/web:80',
      ],
    ],
    // A rule without host and the defaultBackend (a single-port Service without a port) share `*`, last.
    ['*', ['Prefix /any → shop/web:80', 'all → shop/api:9000']],
  ]);
  assert.deepEqual(problems, []);
});

test('the same host and path in two Ingresses: the first by namespace/name wins, the other is reported naming both', () => {
  const first = ingress('alpha', 'zz', {
    ingressClassName: 'skein',
    rules: [
      {
        host: 'shop.example.com',
        http: { paths: [{ path: '/books', pathType: 'Prefix', backend: backend('web', 80) }] },
      },
    ],
  });
  const second = ingress('shop', 'aa', {
    ingressClassName: 'skein',
    rules: [
      {
        host: 'shop.example.com',
        http: {
          paths: [
            // `/books/` is the same Prefix as `/books` (a trailing slash is ignored).
            { path: '/books/', pathType: 'Prefix', backend: backend('web', 'admin') },
            { path: '/other', pathType: 'Prefix', backend: backend('web', 'admin') },
          ],
        },
      },
    ],
  });
  // Input order does not matter: namespace/name order does.
  for (const order of [
    [second, first],
    [first, second],
  ]) {
    const { plan, problems } = compiled(...order);
    assert.deepEqual(routeTable(plan), [
      ['shop.example.com', ['Prefix /books → alpha/web:80', 'Prefix /other → shop/web:81']],
    ]);
    assert.equal(plan.hosts[0]?.routes[0]?.origin, 'Ingress alpha/zz');
    assert.deepEqual(problems, [
      {
        kind: 'Ingress',
        namespace: 'shop',
        name: 'aa',
        reason:
          'host shop.example.com path Prefix /books is already routed by Ingress alpha/zz to alpha/web:80; this one is ignored',
      },
    ]);
  }
});

test('TLS: an entry without hosts takes the rule hosts; a host is needed for SNI; one Secret per host', () => {
  const { plan, problems } = compiled(
    ingress('shop', 'a', {
      ingressClassName: 'skein',
      rules: [
        rule('b.example.com', ['Prefix', '/b']),
        rule('a.example.com', ['Prefix', '/a']),
        rule(undefined, ['Prefix', '/x']),
      ],
      tls: [{ secretName: 'shop-cert' }],
    }),
    ingress('shop', 'b', {
      ingressClassName: 'skein',
      rules: [rule('c.example.com', ['Prefix', '/c'])],
      tls: [
        // Hosts are listed explicitly, even one no rule of this Ingress routes.
        { hosts: ['C.example.com', 'tls-only.example.com'], secretName: 'c-cert' },
        { hosts: ['a.example.com'], secretName: 'other-cert' },
        { hosts: ['d.example.com'] },
      ],
    }),
  );
  assert.deepEqual(plan.tls, [
    { secret: 'shop/c-cert', hosts: ['c.example.com', 'tls-only.example.com'] },
    { secret: 'shop/shop-cert', hosts: ['a.example.com', 'b.example.com'] },
  ]);
  assert.deepEqual(
    plan.hosts.map((h) => [h.host, h.tlsSecret, h.routes.length]),
    [
      ['a.example.com', 'shop/shop-cert', 1],
      ['b.example.com', 'shop/shop-cert', 1],
      ['c.example.com', 'shop/c-cert', 1],
      ['tls-only.example.com', 'shop/c-cert', 0],
      ['*', undefined, 1],
    ],
  );
  assert.deepEqual(
    problems.map((p) => `${p.name}: ${p.reason}`),
    [
      'a: tls secret shop-cert: a host is needed to choose a certificate by SNI; ignored',
      'b: host a.example.com already presents Secret shop/shop-cert; tls secret other-cert is ignored for it',
      'b: a tls entry without secretName: nothing to present; ignored',
    ],
  );
});

test('bad hosts, missing backend Services and ports are reported by Ingress name; the rest still routes', () => {
  const { plan, problems } = compiled(
    ingress('shop', 'broken', {
      ingressClassName: 'skein',
      rules: [
        rule('bad_host.example.com', ['Prefix', '/x']),
        rule('*.*.example.com', ['Prefix', '/x']),
        {
          host: 'ok.example.com',
          http: {
            paths: [
              { path: '/gone', pathType: 'Prefix', backend: backend('nope', 80) },
              { path: '/port', pathType: 'Prefix', backend: backend('web', 9999) },
              { path: '/named', pathType: 'Prefix', backend: backend('web', 'no-such-name') },
              // Two ports: without a port the Service is ambiguous.
              { path: '/ambiguous', pathType: 'Prefix', backend: backend('web') },
              { path: '/resource', pathType: 'Prefix', backend: {} },
              { path: '/fine', pathType: 'Prefix', backend: backend('web', 'admin') },
            ],
          },
        },
      ],
    }),
  );
  assert.deepEqual(routeTable(plan), [['ok.example.com', ['Prefix /fine → shop/web:81']]]);
  assert.ok(problems.every((p) => p.kind === 'Ingress' && p.namespace === 'shop' && p.name === 'broken'));
  assert.deepEqual(
    problems.map((p) => p.reason),
    [
      'host "bad_host.example.com" is not a DNS name or *.<domain>; its rule is ignored',
      'host "*.*.example.com" is not a DNS name or *.<domain>; its rule is ignored',
      'backend Service shop/nope is not in the mesh (or does not exist); its path is ignored',
      'backend web: the Service has no such port; its path is ignored',
      // (the same reason for port 9999, the unknown name and the ambiguous one: reported once)
      'a resource backend is not a Service: skein cannot route to it; ignored',
    ],
  );
});

test('a class-skein Ingress opens nothing for the sidecars (no IngressPort) and needs no IngressBackend', () => {
  const toWeb = (name: string, cls: string) =>
    ingress('shop', name, { ingressClassName: cls, rules: [rule('shop.example.com', ['Prefix', '/only'])] });
  // Control: another class in SMI mode without IngressBackend is reported.
  const nginx = viewWith(toWeb('nginx', 'nginx'));
  assert.match(
    policyProblems(nginx)
      .map((p) => p.reason)
      .join('\n'),
    /no IngressBackend admits a source/,
  );

  const gw = viewWith(toWeb('gw', 'skein'));
  assert.deepEqual([...ingressPorts(gw).keys()], []);
  assert.deepEqual(policyProblems(gw), []);
  assert.equal(gatewayPlan(gw).hosts.length, 1);

  // With an IngressBackend on the port, the skein Ingress does not narrow what it admits.
  const ib: IngressBackend = {
    apiVersion: 'policy.skein.dev/v1alpha1',
    kind: 'IngressBackend',
    metadata: { name: 'web', namespace: 'shop' },
    spec: {
      backends: [{ name: 'web', port: { number: 8080, protocol: 'http' } }],
      sources: [{ kind: 'IPRange', name: '10.0.9.0/24' }],
    },
  };
  const both = ingressPorts(viewWith(toWeb('gw', 'skein'), ib));
  assert.deepEqual([...both.keys()], ['shop/web|8080']);
  const port = both.get('shop/web|8080');
  assert.equal(port?.routes, 'all');
  assert.deepEqual(port?.ingresses, []);
  const narrowed = ingressPorts(viewWith(toWeb('nginx', 'nginx'), ib)).get('shop/web|8080');
  assert.deepEqual(narrowed?.ingresses, ['Ingress shop/nginx']);
});

test('the plan is the same object while the Ingresses and backends are unchanged', () => {
  const store = new MeshStore();
  for (const o of objects(
    ingress('shop', 'gw', { ingressClassName: 'skein', rules: [rule('a.example.com', ['Prefix', '/a'])] }),
  ))
    store.upsert(o);
  const v1 = buildMeshView(store, { meshName: MESH });
  const p1 = gatewayPlan(v1);
  // An unrelated change: a new view, the same plan.
  store.upsert(service('shop', 'unrelated', [{ name: 'http', port: 80 }]));
  const v2 = buildMeshView(store, { meshName: MESH, previous: v1 });
  assert.notEqual(v2, v1);
  assert.equal(gatewayPlan(v2), p1);
  store.upsert(
    ingress('shop', 'gw', { ingressClassName: 'skein', rules: [rule('a.example.com', ['Prefix', '/b'])] }),
  );
  const v3 = buildMeshView(store, { meshName: MESH, previous: v2 });
  assert.notEqual(gatewayPlan(v3), p1);
  assert.deepEqual(routeTable(gatewayPlan(v3)), [['a.example.com', ['Prefix /b → shop/web:80']]]);
});
