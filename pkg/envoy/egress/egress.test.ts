import assert from 'node:assert/strict';
import { test } from 'node:test';
import { httpRouteGroup, service } from '../../../test/support/catalog-fixtures.js';
import { bookbuyerEgresses, egress, egressMesh } from '../../../test/support/envoy/egress-fixtures.js';
import {
  bookstoreObjects,
  fakeSecrets,
  type PodName,
  proxyFor,
  storeOf,
  viewOf,
} from '../../../test/support/envoy/mesh.js';
import { at, byNameIn, list, named, names } from '../../../test/support/envoy/pick.js';
import type { MeshView } from '../../catalog/types.js';
import { buildMeshView, egressRulesOf, policyProblems } from '../../catalog/view.js';
import { DEFAULT_MESH_NAME } from '../../mesh/constants.js';
import type { MeshConfig } from '../../model/objects.js';
import { encodeMessage } from '../../xds/proto/codec.js';
import { sidecarCdsGenerator } from '../cds/sidecar.js';
import { sidecarLdsGenerator } from '../lds/sidecar.js';
import { sidecarRdsGenerator } from '../rds/sidecar.js';
import { egressPlan, NO_EGRESS } from './plan.js';

function gen(g: typeof sidecarLdsGenerator, mesh: MeshView, pod: PodName) {
  return g.generate(proxyFor(mesh, pod), { mesh, secrets: fakeSecrets('all') }, undefined);
}
function outbound(mesh: MeshView, pod: PodName) {
  return named(gen(sidecarLdsGenerator, mesh, pod), 'outbound-listener');
}

test('bookbuyer gets one egress chain per rule and a named denial per egress port; bookthief none', () => {
  const mesh = egressMesh();
  const chains = list(outbound(mesh, 'bookbuyer-1'), 'filter_chains');
  const egressNames = names(chains).filter((n) => n.startsWith('egress'));
  assert.deepEqual(egressNames, [
    'egress_http_80',
    'egress_https_443_0',
    'egress_denied_https_443',
    'egress_denied_tcp_25',
    'egress_tcp_25',
    'egress_denied_tcp_5432',
    'egress_tcp_5432',
  ]);
  assert.deepEqual(at(byNameIn(chains, 'egress_https_443_0'), 'filter_chain_match'), {
    destination_port: { value: 443 },
    transport_protocol: 'tls',
    server_names: ['*.github.com', 'github.com'],
  });
  assert.deepEqual(at(byNameIn(chains, 'egress_tcp_5432'), 'filter_chain_match'), {
    destination_port: { value: 5432 },
    prefix_ranges: [{ address_prefix: '10.1.0.0', prefix_len: { value: 16 } }],
  });
  const thief = names(list(outbound(mesh, 'bookthief-1'), 'filter_chains'));
  assert.ok(!thief.some((n) => n.startsWith('egress')), thief.join());
});

test('tcp-server-first and tcp ports run no inspector; tls_inspector only on https ports', () => {
  const filters = list(outbound(egressMesh(), 'bookbuyer-1'), 'listener_filters');
  const http = byNameIn(filters, 'envoy.filters.listener.http_inspector');
  const off = list(http, 'filter_disabled', 'or_match', 'rules').map((r) => at(r, 'destination_port_range'));
  assert.ok(off.some((r) => at(r, 'start') === 25 && at(r, 'end') === 26));
  assert.ok(off.some((r) => at(r, 'start') === 5432));
  const tls = byNameIn(filters, 'envoy.filters.listener.tls_inspector');
  assert.deepEqual(at(tls, 'filter_disabled'), {
    not_match: { destination_port_range: { start: 443, end: 444 } },
  });
});

test('http egress: RBAC on the Host header, routes from the HTTPRouteGroup, a STRICT_DNS cluster', () => {
  const mesh = egressMesh();
  const chain = byNameIn(list(outbound(mesh, 'bookbuyer-1'), 'filter_chains'), 'egress_http_80');
  const hcm = at(list(chain, 'filters')[0], 'typed_config');
  assert.equal(at(hcm, 'stat_prefix'), 'egress_80');
  // The filter's own config denies all (a Host no virtual host names); the allowed hosts are
  // on the route config, so an Egress change reaches open connections over RDS.
  const rbac = at(byNameIn(list(hcm, 'http_filters'), 'envoy.filters.http.rbac'), 'typed_config');
  assert.equal(at(rbac, 'rules_stat_prefix'), 'egress');
  assert.deepEqual(at(rbac, 'rules'), { action: 0, policies: {} });
  assert.ok(!JSON.stringify(chain).includes('api.example.com'), 'no host in the chain');
  const route = named(gen(sidecarRdsGenerator, mesh, 'bookbuyer-1'), 'rds-egress.80');
  const vh = list(route, 'virtual_hosts')[0];
  assert.deepEqual(at(vh, 'domains'), ['api.example.com', 'api.example.com:80']);
  const perRoute = at(vh, 'typed_per_filter_config', 'envoy.filters.http.rbac');
  assert.equal(
    at(perRoute, '@type'),
    'type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBACPerRoute',
  );
  assert.deepEqual(at(perRoute, 'rbac', 'rules', 'policies', 'egress-hosts', 'permissions'), [
    {
      or_rules: {
        rules: [
          { header: { name: ':authority', string_match: { exact: 'api.example.com', ignore_case: true } } },
          {
            header: { name: ':authority', string_match: { exact: 'api.example.com:80', ignore_case: true } },
          },
        ],
      },
    },
  ]);
  const routes = list(vh, 'routes');
  assert.equal(at(routes[0], 'route', 'cluster'), 'api.example.com:80');
  assert.equal(at(routes[0], 'match', 'safe_regex', 'regex'), '(?:/v1/.*).*');
  assert.equal(at(routes[1], 'direct_response', 'status'), 403);
  const clusters = gen(sidecarCdsGenerator, mesh, 'bookbuyer-1');
  const dns = named(clusters, 'api.example.com:80');
  assert.equal(at(dns, 'type'), 1);
  assert.ok(clusters.some((r) => r.name === 'passthrough-outbound'));
  assert.ok(!gen(sidecarCdsGenerator, mesh, 'bookthief-1').some((r) => r.name === 'api.example.com:80'));
});

test('an Egress host added changes the egress route config and clusters, not the outbound listener', () => {
  // The hosts are on the route config (RDS), so the change reaches kept-alive connections; a
  // listener with other bytes would be a changed chain that keeps them on the old hosts.
  const more = egress('bookbuyer', 'api-v2', {
    sources: [{ kind: 'ServiceAccount', name: 'bookbuyer', namespace: 'bookbuyer' }],
    hosts: ['api-v2.example.com'],
    ports: [{ number: 80, protocol: 'http' }],
  });
  const bytes = (mesh: MeshView, g: typeof sidecarLdsGenerator, name: string) => {
    const r = gen(g, mesh, 'bookbuyer-1').find((x) => x.name === name);
    assert.ok(r, name);
    return Buffer.from(encodeMessage(r.typeUrl, r.message)).toString('base64');
  };
  const before = egressMesh();
  const after = egressMesh([more]);
  assert.equal(
    bytes(after, sidecarLdsGenerator, 'outbound-listener'),
    bytes(before, sidecarLdsGenerator, 'outbound-listener'),
  );
  assert.notEqual(
    bytes(after, sidecarRdsGenerator, 'rds-egress.80'),
    bytes(before, sidecarRdsGenerator, 'rds-egress.80'),
  );
  const hosts = (mesh: MeshView) =>
    list(named(gen(sidecarRdsGenerator, mesh, 'bookbuyer-1'), 'rds-egress.80'), 'virtual_hosts').map((v) =>
      at(v, 'name'),
    );
  assert.deepEqual(hosts(after), ['egress|api-v2.example.com:80', 'egress|api.example.com:80']);
  assert.ok(gen(sidecarCdsGenerator, after, 'bookbuyer-1').some((r) => r.name === 'api-v2.example.com:80'));
});

test('identities with the same Egress rules share one plan and one listener message', () => {
  const both = [
    { kind: 'ServiceAccount' as const, name: 'bookbuyer', namespace: 'bookbuyer' },
    { kind: 'ServiceAccount' as const, name: 'bookthief', namespace: 'bookthief' },
  ];
  const objects = [
    ...bookstoreObjects(),
    egress('bookbuyer', 'x', {
      sources: both,
      ipAddresses: ['10.9.0.0/16'],
      ports: [{ number: 9, protocol: 'tcp' }],
    }),
  ];
  const mesh = viewOf(storeOf(objects));
  const a = egressPlan(mesh, { namespace: 'bookbuyer', serviceAccount: 'bookbuyer' });
  const b = egressPlan(mesh, { namespace: 'bookthief', serviceAccount: 'bookthief' });
  assert.equal(a, b);
  // A new view of the same content hands out the same plan.
  assert.equal(
    egressPlan(viewOf(storeOf(objects)), { namespace: 'bookbuyer', serviceAccount: 'bookbuyer' }),
    a,
  );
});

test('MeshConfig enableEgress: passthrough default chain, no egress chains or denials', () => {
  const objects = [...bookstoreObjects(), ...bookbuyerEgresses()].map((o) =>
    o.kind === 'MeshConfig'
      ? ({ ...o, spec: { traffic: { permissive: false, enableEgress: true } } } satisfies MeshConfig)
      : o,
  );
  const listener = outbound(viewOf(storeOf(objects)), 'bookbuyer-1');
  assert.equal(at(listener, 'default_filter_chain', 'name'), 'passthrough-outbound');
  assert.ok(
    !names(list(listener, 'filter_chains')).some((n) => n.includes('denied') || n.startsWith('egress')),
  );
});

test('a port used as http by one Egress and tcp by another: the second is dropped and reported', () => {
  const src = [{ kind: 'ServiceAccount' as const, name: 'bookbuyer', namespace: 'bookbuyer' }];
  const mesh = egressMesh([
    egress('bookbuyer', 'zz-clash', {
      sources: src,
      ipAddresses: ['10.3.0.0/16'],
      ports: [{ number: 80, protocol: 'tcp' }],
    }),
  ]);
  const problems = policyProblems(mesh).filter((p) => p.kind === 'Egress');
  assert.deepEqual(
    problems.map((p) => `${p.name}: ${p.reason}`),
    [
      'zz-clash: port 80 is http for bookbuyer/bookbuyer in Egress bookbuyer/api; this tcp rule is ignored for it',
    ],
  );
  const chains = names(list(outbound(mesh, 'bookbuyer-1'), 'filter_chains'));
  assert.ok(!chains.includes('egress_tcp_80'));
});

test('a missing HTTPRouteGroup allows no request and is reported', () => {
  const src = [{ kind: 'ServiceAccount' as const, name: 'bookthief', namespace: 'bookthief' }];
  const mesh = egressMesh([
    egress('bookthief', 'nogroup', {
      sources: src,
      hosts: ['x.example.com'],
      ports: [{ number: 8080, protocol: 'http' }],
      matches: [{ kind: 'HTTPRouteGroup', name: 'absent' }],
    }),
  ]);
  assert.ok(policyProblems(mesh).some((p) => p.name === 'nogroup' && p.reason.includes('absent')));
  const route = named(gen(sidecarRdsGenerator, mesh, 'bookthief-1'), 'rds-egress.8080');
  const routes = list(list(route, 'virtual_hosts')[0], 'routes');
  assert.equal(routes.length, 1);
  assert.equal(at(routes[0], 'direct_response', 'status'), 403);
});

test('Egress compiled once while its inputs stand: an unrelated change keeps rules and plan, an edited route group changes them', () => {
  const buyer = { namespace: 'bookbuyer', serviceAccount: 'bookbuyer' };
  const store = storeOf([...bookstoreObjects(), ...bookbuyerEgresses()]);
  const v1 = viewOf(store);
  const rules1 = egressRulesOf(v1, buyer);
  const plan1 = egressPlan(v1, buyer);
  assert.ok(rules1.length > 0);
  store.upsert(service('bookthief', 'decoy', [{ name: 'http', port: 80 }]));
  const v2 = buildMeshView(store, { meshName: DEFAULT_MESH_NAME, previous: v1 });
  assert.equal(egressRulesOf(v2, buyer), rules1, 'the same rule array: nothing recompiled');
  assert.equal(egressPlan(v2, buyer), plan1);
  // The HTTPRouteGroup the http Egress reads now admits POST too.
  store.upsert(
    httpRouteGroup('bookbuyer', 'api-reads', [
      { name: 'get', pathRegex: '/v1/.*', methods: ['GET', 'POST'] },
    ]),
  );
  const v3 = buildMeshView(store, { meshName: DEFAULT_MESH_NAME, previous: v2 });
  const plan3 = egressPlan(v3, buyer);
  assert.notEqual(plan3, plan1);
  const api = plan3.http.find((p) => p.port === 80)?.hosts.find((h) => h.host === 'api.example.com');
  assert.deepEqual(api?.http === 'all' ? 'all' : api?.http.map((m) => m.methods), [['GET', 'POST']]);
});

test('a missing HTTPRouteGroup stays reported in views that reuse the Egress compilation', () => {
  const store = storeOf([
    ...bookstoreObjects(),
    egress('bookbuyer', 'api', {
      sources: [{ kind: 'ServiceAccount', name: 'bookbuyer', namespace: 'bookbuyer' }],
      hosts: ['api.example.com'],
      ports: [{ number: 80, protocol: 'http' }],
      matches: [{ kind: 'HTTPRouteGroup', name: 'nowhere' }],
    }),
  ]);
  const v1 = viewOf(store);
  store.upsert(service('bookthief', 'decoy', [{ name: 'http', port: 80 }]));
  const v2 = buildMeshView(store, { meshName: DEFAULT_MESH_NAME, previous: v1 });
  for (const v of [v1, v2])
    assert.ok(
      policyProblems(v).some((p) => p.kind === 'Egress' && /nowhere does not exist/.test(p.reason)),
      JSON.stringify(policyProblems(v)),
    );
  // Once the group exists, the problem is gone.
  store.upsert(httpRouteGroup('bookbuyer', 'nowhere', [{ name: 'any', pathRegex: '.*', methods: ['*'] }]));
  const v3 = buildMeshView(store, { meshName: DEFAULT_MESH_NAME, previous: v2 });
  assert.ok(!policyProblems(v3).some((p) => p.kind === 'Egress'), JSON.stringify(policyProblems(v3)));
});

test('a mesh without Egress: every identity gets the one empty plan (enableEgress: the one passthrough plan)', () => {
  const mesh = viewOf(storeOf(bookstoreObjects()));
  const a = egressPlan(mesh, { namespace: 'bookbuyer', serviceAccount: 'bookbuyer' });
  assert.equal(a, NO_EGRESS);
  assert.equal(egressPlan(mesh, { namespace: 'bookthief', serviceAccount: 'bookthief' }), NO_EGRESS);
  const open = viewOf(
    storeOf(
      bookstoreObjects().map((o) =>
        o.kind === 'MeshConfig'
          ? ({ ...o, spec: { traffic: { permissive: false, enableEgress: true } } } satisfies MeshConfig)
          : o,
      ),
    ),
  );
  const p = egressPlan(open, { namespace: 'bookbuyer', serviceAccount: 'bookbuyer' });
  assert.equal(p.passthrough, true);
  assert.equal(egressPlan(open, { namespace: 'bookthief', serviceAccount: 'bookthief' }), p);
});
