import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { MeshView } from '../../catalog/types.js';
import {
  bookstoreMesh,
  bookstoreObjects,
  fakeSecrets,
  type PodName,
  proxyFor,
  storeOf,
  viewOf,
} from '../testing/mesh.js';
import { at, byNameIn, list, named, names } from '../testing/pick.js';
import { sidecarLdsGenerator } from './sidecar.js';

function lds(mesh: MeshView, pod: PodName) {
  return sidecarLdsGenerator.generate(proxyFor(mesh, pod), { mesh, secrets: fakeSecrets('all') }, undefined);
}

function chains(mesh: MeshView, pod: PodName, listener: string) {
  return list(named(lds(mesh, pod), listener), 'filter_chains');
}

/** The typed_config of the named filter in a filter chain. */
function filterConfig(chain: ReturnType<typeof byNameIn>, filter: string) {
  return at(byNameIn(list(chain, 'filters'), filter), 'typed_config');
}

/** The RBAC http filter config inside an inbound HTTP chain. */
function httpRbac(chain: ReturnType<typeof byNameIn>) {
  const hcm = filterConfig(chain, 'envoy.filters.network.http_connection_manager');
  return at(byNameIn(list(hcm, 'http_filters'), 'envoy.filters.http.rbac'), 'typed_config', 'rules');
}

test('bookbuyer: one outbound chain per allowed service port, matched on clusterIP and port', () => {
  const out = chains(bookstoreMesh(), 'bookbuyer-1', 'outbound-listener');
  assert.deepEqual(names(out), [
    'outbound_bookstore/bookstore_14001_http',
    'outbound_bookstore/bookstore-v1_14001_http',
  ]);
  const apex = byNameIn(out, 'outbound_bookstore/bookstore_14001_http');
  assert.deepEqual(at(apex, 'filter_chain_match'), {
    destination_port: { value: 14001 },
    prefix_ranges: [{ address_prefix: '10.96.0.10', prefix_len: { value: 32 } }],
  });
  const hcm = filterConfig(apex, 'envoy.filters.network.http_connection_manager');
  assert.equal(at(hcm, 'rds', 'route_config_name'), 'rds-outbound.14001');
  assert.deepEqual(names(list(hcm, 'http_filters')), ['envoy.filters.http.router']);
  const listener = named(lds(bookstoreMesh(), 'bookbuyer-1'), 'outbound-listener');
  assert.deepEqual(names(list(listener, 'listener_filters')), ['envoy.filters.listener.original_dst']);
  assert.equal(at(listener, 'address', 'socket_address', 'port_value'), 15001);
  // SMI mode: no passthrough, and bookbuyer serves no service so no inbound listener.
  assert.equal(at(listener, 'default_filter_chain'), undefined);
  assert.deepEqual(
    lds(bookstoreMesh(), 'bookbuyer-1').map((r) => r.name),
    ['outbound-listener'],
  );
});

test('bookthief gets no outbound config in SMI mode; permissive mode opens everything', () => {
  assert.deepEqual(lds(bookstoreMesh(), 'bookthief-1'), []);
  const permissive = bookstoreMesh({ permissive: true });
  const listener = named(lds(permissive, 'bookthief-1'), 'outbound-listener');
  assert.ok(names(list(listener, 'filter_chains')).includes('outbound_bookstore/bookstore_14001_http'));
  assert.deepEqual(
    at(listener, 'default_filter_chain', 'filters', 0, 'typed_config', 'cluster'),
    'passthrough-outbound',
  );
});

test('TCP outbound ports use tcp_proxy; a headless service is matched on its port only', () => {
  const out = chains(bookstoreMesh(), 'bookwarehouse-1', 'outbound-listener');
  const mysql = byNameIn(out, 'outbound_bookwarehouse/mysql_3306_tcp');
  assert.deepEqual(at(mysql, 'filter_chain_match'), { destination_port: { value: 3306 } });
  assert.deepEqual(filterConfig(mysql, 'envoy.filters.network.tcp_proxy'), {
    '@type': 'type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy',
    stat_prefix: 'outbound_bookwarehouse/mysql_3306_tcp',
    cluster: 'bookwarehouse/mysql|3306',
  });
});

test('a TCP port of a split apex uses weighted clusters', () => {
  const mesh = bookstoreMesh({ tcpSplitPort: { port: 9000, targetPort: 9000 } });
  const chain = byNameIn(
    chains(mesh, 'bookbuyer-1', 'outbound-listener'),
    'outbound_bookstore/bookstore_9000_tcp',
  );
  assert.deepEqual(at(filterConfig(chain, 'envoy.filters.network.tcp_proxy'), 'weighted_clusters'), {
    clusters: [
      { name: 'bookstore/bookstore-v1|9000', weight: 75 },
      { name: 'bookstore/bookstore-v2|9000', weight: 25 },
    ],
  });
});

test('bookstore inbound: mTLS chains per served service, RBAC allows bookbuyer only with the HTTP matches', () => {
  const inbound = named(lds(bookstoreMesh(), 'bookstore-v1-1'), 'inbound-listener');
  assert.equal(at(inbound, 'address', 'socket_address', 'port_value'), 15003);
  assert.deepEqual(names(list(inbound, 'listener_filters')), [
    'envoy.filters.listener.tls_inspector',
    'envoy.filters.listener.original_dst',
  ]);
  const all = list(inbound, 'filter_chains');
  assert.deepEqual(names(all), [
    'inbound_bookstore/bookstore_14001_http',
    'inbound_bookstore/bookstore-v1_14001_http',
  ]);
  const chain = byNameIn(all, 'inbound_bookstore/bookstore-v1_14001_http');
  // Two services share target port 14001: the SNI tells them apart.
  assert.deepEqual(at(chain, 'filter_chain_match'), {
    destination_port: { value: 14001 },
    transport_protocol: 'tls',
    server_names: ['bookstore-v1.bookstore.svc.cluster.local'],
  });
  const tls = at(chain, 'transport_socket', 'typed_config');
  assert.deepEqual(at(tls, 'require_client_certificate'), { value: true });
  assert.equal(
    at(tls, 'common_tls_context', 'tls_certificate_sds_secret_configs', 0, 'name'),
    'service-cert:bookstore/bookstore-v1',
  );
  assert.equal(
    at(tls, 'common_tls_context', 'validation_context_sds_secret_config', 'name'),
    'root-cert-for-mtls-inbound:bookstore/bookstore-v1',
  );
  const rules = httpRbac(chain);
  assert.equal(at(rules, 'action'), 0); // ALLOW
  const policy = at(rules, 'policies', 'TrafficTarget bookstore/bookstore');
  assert.deepEqual(at(policy, 'principals'), [
    { authenticated: { principal_name: { exact: 'spiffe://cluster.local/ns/bookbuyer/sa/bookbuyer' } } },
  ]);
  // books-bought: path AND method AND both headers; buy-a-book: path AND (GET OR POST).
  assert.deepEqual(at(policy, 'permissions', 0, 'and_rules', 'rules', 0), {
    url_path: { path: { safe_regex: { regex: '(?:/books-bought).*' } } },
  });
  assert.deepEqual(at(policy, 'permissions', 0, 'and_rules', 'rules', 1), {
    header: { name: ':method', string_match: { exact: 'GET' } },
  });
  assert.deepEqual(at(policy, 'permissions', 0, 'and_rules', 'rules', 3), {
    header: { name: 'user-agent', string_match: { safe_regex: { regex: '(?:.*-http-client/*.*)' } } },
  });
  assert.equal(list(policy, 'permissions', 1, 'and_rules', 'rules', 1, 'or_rules', 'rules').length, 2);
  assert.equal(list(policy, 'permissions').length, 2);
  // The route config the HCM uses: the inbound one for the target port.
  const hcm = filterConfig(chain, 'envoy.filters.network.http_connection_manager');
  assert.equal(at(hcm, 'rds', 'route_config_name'), 'rds-inbound.14001');
  assert.deepEqual(names(list(hcm, 'http_filters')), [
    'envoy.filters.http.rbac',
    'envoy.filters.http.router',
  ]);
});

test('permissive mode: inbound RBAC allows any authenticated peer', () => {
  const all = chains(bookstoreMesh({ permissive: true }), 'bookstore-v1-1', 'inbound-listener');
  const rules = httpRbac(byNameIn(all, 'inbound_bookstore/bookstore-v1_14001_http'));
  assert.deepEqual(at(rules, 'policies'), {
    permissive: { permissions: [{ any: true }], principals: [{ any: true }] },
  });
});

test('no inbound rules: RBAC with ALLOW and no policies (deny all)', () => {
  const mesh = viewOf(storeOf(bookstoreObjects().filter((o) => o.kind !== 'TrafficTarget')));
  const all = chains(mesh, 'bookstore-v1-1', 'inbound-listener');
  assert.deepEqual(httpRbac(byNameIn(all, 'inbound_bookstore/bookstore-v1_14001_http')), {
    action: 0,
    policies: {},
  });
});

test('TCP inbound: network RBAC then tcp_proxy to the local cluster on the target port', () => {
  const all = chains(bookstoreMesh(), 'bookwarehouse-1', 'inbound-listener');
  assert.deepEqual(names(all), [
    'inbound_bookwarehouse/bookwarehouse_13306_tcp',
    'inbound_bookwarehouse/bookwarehouse_14001_grpc',
  ]);
  const tcp = byNameIn(all, 'inbound_bookwarehouse/bookwarehouse_13306_tcp');
  // Only service on that target port: no SNI requirement.
  assert.deepEqual(at(tcp, 'filter_chain_match'), {
    destination_port: { value: 13306 },
    transport_protocol: 'tls',
  });
  assert.deepEqual(names(list(tcp, 'filters')), [
    'envoy.filters.network.rbac',
    'envoy.filters.network.tcp_proxy',
  ]);
  assert.equal(
    at(filterConfig(tcp, 'envoy.filters.network.tcp_proxy'), 'cluster'),
    'bookwarehouse/bookwarehouse|13306|local',
  );
  const rbac = filterConfig(tcp, 'envoy.filters.network.rbac');
  assert.deepEqual(list(rbac, 'rules', 'policies', 'TrafficTarget bookwarehouse/db', 'principals'), [
    { authenticated: { principal_name: { exact: 'spiffe://cluster.local/ns/bookstore/sa/bookstore-v1' } } },
    { authenticated: { principal_name: { exact: 'spiffe://cluster.local/ns/bookstore/sa/bookstore-v2' } } },
  ]);
  assert.deepEqual(list(rbac, 'rules', 'policies', 'TrafficTarget bookwarehouse/db', 'permissions'), [
    { any: true },
  ]);
});

test('non-sidecar proxies get nothing from the sidecar generator', () => {
  const mesh = bookstoreMesh();
  const proxy = proxyFor(mesh, 'bookbuyer-1');
  const grpc = { ...proxy, identity: { ...proxy.identity, kind: 'grpc' as const } };
  assert.deepEqual(sidecarLdsGenerator.generate(grpc, { mesh, secrets: fakeSecrets('all') }, undefined), []);
});
