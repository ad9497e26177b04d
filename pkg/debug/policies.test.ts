import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pod, service, shopMesh } from '../../test/support/catalog-fixtures.js';
import { bookbuyerEgresses, egress } from '../../test/support/envoy/egress-fixtures.js';
import { gatewayObjects } from '../../test/support/envoy/gateway.js';
import { INGRESS_PRINCIPAL, ingressObjects } from '../../test/support/envoy/ingress.js';
import { bookstoreObjects, storeOf } from '../../test/support/envoy/mesh.js';
import { bookbuyerRetries } from '../../test/support/envoy/retry.js';
import { buildMeshView } from '../catalog/view.js';
import { DEFAULT_MESH_NAME } from '../mesh/constants.js';
import type { AnyObject, MeshConfig } from '../model/objects.js';
import { buildPolicies } from './policies.js';

function policiesOf(objects: readonly AnyObject[]) {
  return buildPolicies(buildMeshView(storeOf(objects), { meshName: DEFAULT_MESH_NAME }));
}

/** The bookstore mesh with its MeshConfig's spec.traffic replaced. */
function withTraffic(objects: readonly AnyObject[], traffic: NonNullable<MeshConfig['spec']['traffic']>) {
  return objects.map((o) =>
    o.kind === 'MeshConfig' ? ({ ...o, spec: { traffic } } satisfies MeshConfig) : o,
  );
}

test('buildPolicies: allowed sources per port with the TrafficTarget behind them, routes and split weights', () => {
  const store = storeOf([
    ...shopMesh(),
    // A meshed identity no TrafficTarget names as its destination.
    service('shop', 'audit', [{ name: 'http', port: 14001, appProtocol: 'http' }]),
    pod('shop', 'audit-1', { sa: 'auditor', labels: { app: 'audit' }, ip: '10.0.0.9' }),
  ]);
  const out = buildPolicies(buildMeshView(store, { meshName: 'skein' }));
  assert.equal(out.permissive, false);
  const store1 = out.services.find((s) => s.service === 'shop/bookstore');
  assert.deepEqual(store1?.ports[0]?.rules, [
    {
      sources: ['buyers/bookbuyer'],
      http: [{ name: 'buy', pathRegex: '/buy', methods: ['GET'] }],
      origin: 'TrafficTarget shop/buyer-to-store',
    },
  ]);
  assert.deepEqual(store1?.split, [
    { service: 'shop/bookstore-v1', weight: 90 },
    { service: 'shop/bookstore-v2', weight: 10 },
  ]);
  // Not a destination of any TrafficTarget: deny all, shown as no rules.
  assert.deepEqual(out.services.find((s) => s.service === 'shop/audit')?.ports[0]?.rules, []);
});

test('buildPolicies: ingress per backend target port — sources, Ingress routes, principals, SNI, matches', () => {
  const out = policiesOf(ingressObjects());
  assert.deepEqual(
    out.ingress.map((i) => [i.service, i.targetPort, i.protocol, i.cidrs, i.ingresses]),
    [
      [
        'bookstore/bookstore-v1',
        14001,
        'http',
        ['10.0.9.0/24', '10.244.9.10/32'],
        ['Ingress bookstore/shop'],
      ],
      ['bookwarehouse/bookwarehouse', 14001, 'https', ['10.0.9.9/32'], []],
    ],
  );
  const [store, warehouse] = out.ingress;
  assert.deepEqual(store?.routes, [
    { host: 'shop.example.com', path: { type: 'Prefix', value: '/books' } },
    { host: 'shop.example.com', path: { type: 'Exact', value: '/about' } },
  ]);
  assert.equal(warehouse?.routes, 'all');
  assert.deepEqual(
    warehouse?.policies.map((p) => [p.origin, p.principals, p.sniHosts]),
    [['IngressBackend bookwarehouse/api', [INGRESS_PRINCIPAL], ['warehouse.example.com']]],
  );
  // No IngressBackend: nothing admitted from outside, shown as no entries.
  assert.deepEqual(buildPolicies(buildMeshView(storeOf(shopMesh()), { meshName: 'skein' })).ingress, []);
});

test('buildPolicies: the Retry in force per source → destination pair', () => {
  const objects: AnyObject[] = [...bookstoreObjects(), ...bookbuyerRetries()];
  const out = policiesOf(objects);
  assert.deepEqual(
    out.retries.map(
      (r) =>
        `${r.source} → ${r.destination}: ${r.origin} ${r.retryOn.join(',')} x${r.numRetries} budget ${r.budget?.percent}%`,
    ),
    [
      'bookbuyer/bookbuyer → bookstore/bookstore: Retry bookbuyer/to-bookstore 5xx,reset,retriable-status-codes,unavailable x3 budget 20%',
      'bookbuyer/bookbuyer → bookstore/bookstore-v1: Retry bookbuyer/to-bookstore 5xx,reset,retriable-status-codes,unavailable x3 budget 20%',
    ],
  );
  assert.deepEqual(buildPolicies(buildMeshView(storeOf(shopMesh()), { meshName: 'skein' })).retries, []);
});

test('buildPolicies: egress per source identity — http hosts with their matches, https SNI, tcp ranges and ports', () => {
  const out = policiesOf([...bookstoreObjects(), ...bookbuyerEgresses()]);
  assert.equal(out.egress.passthrough, undefined);
  assert.deepEqual(out.egress.sources, [
    {
      source: 'bookbuyer/bookbuyer',
      http: [
        {
          port: 80,
          ipRanges: [],
          hosts: [
            {
              host: 'api.example.com',
              cluster: 'api.example.com:80',
              http: [{ name: 'get', pathRegex: '/v1/.*', methods: ['GET'] }],
              egresses: ['Egress bookbuyer/api'],
            },
          ],
        },
      ],
      https: [
        {
          port: 443,
          ipRanges: [],
          serverNames: ['*.github.com', 'github.com'],
          egresses: ['Egress bookbuyer/github'],
        },
      ],
      tcp: [
        {
          port: 25,
          protocol: 'tcp-server-first',
          ipRanges: ['10.2.0.0/24'],
          egresses: ['Egress bookbuyer/smtp'],
        },
        { port: 5432, protocol: 'tcp', ipRanges: ['10.1.0.0/16'], egresses: ['Egress bookbuyer/db'] },
      ],
    },
  ]);
  // bookthief is named by no Egress: nothing listed, everything outside refused.
  assert.ok(!out.egress.sources.some((s) => s.source === 'bookthief/bookthief'));
  assert.deepEqual(policiesOf(bookstoreObjects()).egress, { sources: [] });
});

test('buildPolicies: egress — a second source, an https Egress by address, a conflicting port kind left out', () => {
  const thief = [{ kind: 'ServiceAccount' as const, name: 'bookthief', namespace: 'bookthief' }];
  const out = policiesOf([
    ...bookstoreObjects(),
    ...bookbuyerEgresses(),
    egress('bookthief', 'vault', {
      sources: thief,
      ipAddresses: ['192.0.2.0/28'],
      ports: [{ number: 8443, protocol: 'https' }],
    }),
    // Port 8443 is already https for bookthief (Egress bookthief/vault sorts first): this tcp rule is dropped.
    egress('bookthief', 'zz-raw', { sources: thief, ports: [{ number: 8443, protocol: 'tcp' }] }),
  ]);
  assert.deepEqual(
    out.egress.sources.map((s) => s.source),
    ['bookbuyer/bookbuyer', 'bookthief/bookthief'],
  );
  const thiefOut = out.egress.sources[1];
  assert.deepEqual(thiefOut?.https, [
    { port: 8443, ipRanges: ['192.0.2.0/28'], serverNames: [], egresses: ['Egress bookthief/vault'] },
  ]);
  assert.deepEqual([thiefOut?.http, thiefOut?.tcp], [[], []]);
});

test('buildPolicies: egress passthrough — enableEgress or permissive mode says why, the rules still listed', () => {
  const objects = [...bookstoreObjects(), ...bookbuyerEgresses()];
  for (const [traffic, reason] of [
    [{ permissive: false, enableEgress: true }, /^MeshConfig spec\.traffic\.enableEgress/],
    [{ permissive: true }, /^permissive mode/],
  ] as const) {
    const out = policiesOf(withTraffic(objects, traffic));
    assert.match(out.egress.passthrough ?? '', reason, JSON.stringify(traffic));
    assert.deepEqual(
      out.egress.sources.map((s) => [s.source, s.http.length, s.https.length, s.tcp.length]),
      [['bookbuyer/bookbuyer', 1, 1, 2]],
    );
  }
  // Off again: the rules are enforced.
  const off = policiesOf(withTraffic(objects, { permissive: false, enableEgress: false }));
  assert.equal(off.egress.passthrough, undefined);
});

test('buildPolicies: the ingress gateway routes per host, most specific first, with their TLS Secret', () => {
  const out = policiesOf(gatewayObjects());
  assert.deepEqual(out.gateway.ingresses, ['Ingress bookstore/shop', 'Ingress bookwarehouse/warehouse']);
  assert.deepEqual(
    out.gateway.hosts.map((h) => [
      h.host,
      h.tlsSecret,
      h.routes.map(
        (r) => `${r.path ? `${r.path.type} ${r.path.value}` : 'all'} → ${r.service}:${r.port} (${r.origin})`,
      ),
    ]),
    [
      [
        '*.shop.example.com',
        'bookstore/shop-tls',
        ['all → bookstore/bookstore:14001 (Ingress bookstore/shop)'],
      ],
      [
        'shop.example.com',
        'bookstore/shop-tls',
        [
          'Exact /about → bookstore/bookstore:14001 (Ingress bookstore/shop)',
          'Prefix /books → bookstore/bookstore-v1:14001 (Ingress bookstore/shop)',
        ],
      ],
      [
        'warehouse.example.com',
        'bookwarehouse/warehouse-tls',
        ['all → bookwarehouse/bookwarehouse:14001 (Ingress bookwarehouse/warehouse)'],
      ],
      ['*', undefined, ['Prefix /status → bookstore/bookstore-v1:14001 (Ingress bookstore/shop)']],
    ],
  );
  // No Ingress of class skein: no gateway routes.
  assert.deepEqual(policiesOf(bookstoreObjects()).gateway, { hosts: [], ingresses: [] });
});
