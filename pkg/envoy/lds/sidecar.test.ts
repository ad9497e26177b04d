import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  alsoCalling,
  bookstoreMesh,
  bookstoreObjects,
  fakeSecrets,
  leftTheMesh,
  type PodName,
  proxyFor,
  storeOf,
  viewOf,
} from '../../../test/support/envoy/mesh.js';
import { at, byNameIn, list, named, names } from '../../../test/support/envoy/pick.js';
import type { MeshView } from '../../catalog/types.js';
import { stdoutAccessLog, TCP_LOG_FIELDS } from '../common/access-log.js';
import { EVERY_PEER, EVERY_REQUEST } from '../rbac/rbac.js';
import { sidecarRdsGenerator } from '../rds/sidecar.js';
import { sidecarLdsGenerator } from './sidecar.js';

// Access logs are on by default (JSON to stdout): every tcp_proxy carries this one.
const TCP_ACCESS_LOG = [stdoutAccessLog('json', TCP_LOG_FIELDS)];

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

/** The RBAC http filter's own config inside an inbound HTTP chain. */
function httpRbac(chain: ReturnType<typeof byNameIn>) {
  const hcm = filterConfig(chain, 'envoy.filters.network.http_connection_manager');
  return at(byNameIn(list(hcm, 'http_filters'), 'envoy.filters.http.rbac'), 'typed_config', 'rules');
}

/** The SMI policy an inbound HTTP chain's RBAC filter applies: on the virtual host of the chain's route config. */
function inboundPolicy(mesh: MeshView, pod: PodName, chain: ReturnType<typeof byNameIn>) {
  const hcm = filterConfig(chain, 'envoy.filters.network.http_connection_manager');
  const routes = sidecarRdsGenerator.generate(
    proxyFor(mesh, pod),
    { mesh, secrets: fakeSecrets('all') },
    undefined,
  );
  const config = named(routes, String(at(hcm, 'rds', 'route_config_name')));
  return at(
    config,
    'virtual_hosts',
    0,
    'typed_per_filter_config',
    'envoy.filters.http.rbac',
    'rbac',
    'rules',
  );
}

const HTTP_PROTOCOLS = ['http/1.0', 'http/1.1', 'h2c'];

test('bookbuyer: one outbound chain per allowed service port, matched on clusterIP and port', () => {
  const out = chains(bookstoreMesh(), 'bookbuyer-1', 'outbound-listener');
  assert.deepEqual(names(out), [
    'outbound_bookstore/bookstore_14001_http',
    'outbound_bookstore/bookstore-v1_14001_http',
    'outbound_denied_http_14001',
    'outbound_denied_http',
  ]);
  const apex = byNameIn(out, 'outbound_bookstore/bookstore_14001_http');
  assert.deepEqual(at(apex, 'filter_chain_match'), {
    destination_port: { value: 14001 },
    prefix_ranges: [{ address_prefix: '10.96.0.10', prefix_len: { value: 32 } }],
  });
  const hcm = filterConfig(apex, 'envoy.filters.network.http_connection_manager');
  // The apex's own route config (rds/sidecar.ts): a split change is one small resource.
  assert.equal(at(hcm, 'rds', 'route_config_name'), 'rds-outbound.14001.bookstore/bookstore');
  assert.deepEqual(names(list(hcm, 'http_filters')), ['envoy.filters.http.router']);
  const listener = named(lds(bookstoreMesh(), 'bookbuyer-1'), 'outbound-listener');
  assert.equal(at(listener, 'address', 'socket_address', 'port_value'), 15001);
  // bookbuyer serves no service: no inbound listener.
  assert.deepEqual(
    lds(bookstoreMesh(), 'bookbuyer-1').map((r) => r.name),
    ['outbound-listener'],
  );
});

test('SMI mode: what matches no chain is denied at the caller, HTTP with a 403 that says why', () => {
  const listener = named(lds(bookstoreMesh(), 'bookbuyer-1'), 'outbound-listener');
  assert.deepEqual(names(list(listener, 'listener_filters')), [
    'envoy.filters.listener.original_dst',
    'envoy.filters.listener.http_inspector',
  ]);
  // bookbuyer calls HTTP only: the inspector runs on every port.
  assert.equal(at(listener, 'listener_filters', 1, 'filter_disabled'), undefined);
  assert.deepEqual(at(listener, 'listener_filters_timeout'), { seconds: 1 });
  assert.equal(at(listener, 'continue_on_listener_filters_timeout'), true);
  const out = list(listener, 'filter_chains');
  // Envoy never falls back from a matched port to port-less chains: the mesh
  // port has its own HTTP denial, every other port the port-less one.
  assert.deepEqual(at(byNameIn(out, 'outbound_denied_http_14001'), 'filter_chain_match'), {
    application_protocols: HTTP_PROTOCOLS,
    destination_port: { value: 14001 },
  });
  const denied = byNameIn(out, 'outbound_denied_http');
  assert.deepEqual(at(denied, 'filter_chain_match'), { application_protocols: HTTP_PROTOCOLS });
  const hcm = filterConfig(denied, 'envoy.filters.network.http_connection_manager');
  assert.equal(at(hcm, 'stat_prefix'), 'outbound_denied');
  assert.deepEqual(at(hcm, 'route_config', 'virtual_hosts', 0, 'routes'), [
    { match: { prefix: '/' }, direct_response: { status: 403 } },
  ]);
  const mapper = at(hcm, 'local_reply_config', 'mappers', 0);
  assert.deepEqual(at(mapper, 'filter', 'status_code_filter', 'comparison', 'value', 'default_value'), 403);
  assert.equal(
    at(mapper, 'body_format_override', 'text_format_source', 'inline_string'),
    'skein: %REQ(:authority)% is not allowed by the mesh policy for this proxy' +
      ' (SMI mode: no TrafficTarget allows its identity to call this destination)\n',
  );
  // Anything else: tcp_proxy to the endpoint-less blackhole cluster, which closes it.
  assert.deepEqual(at(listener, 'default_filter_chain'), {
    name: 'outbound_denied',
    filters: [
      {
        name: 'envoy.filters.network.tcp_proxy',
        typed_config: {
          '@type': 'type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy',
          stat_prefix: 'outbound_denied',
          cluster: 'blackhole',
          access_log: TCP_ACCESS_LOG,
        },
      },
    ],
  });
});

test('bookthief (allowed nothing) still gets an outbound listener in SMI mode; permissive mode opens everything', () => {
  const smi = lds(bookstoreMesh(), 'bookthief-1');
  assert.deepEqual(
    smi.map((r) => r.name),
    ['outbound-listener'],
  );
  const listener = named(smi, 'outbound-listener');
  assert.deepEqual(names(list(listener, 'filter_chains')), ['outbound_denied_http']);
  assert.equal(at(listener, 'default_filter_chain', 'filters', 0, 'typed_config', 'cluster'), 'blackhole');

  const permissive = named(lds(bookstoreMesh({ permissive: true }), 'bookthief-1'), 'outbound-listener');
  const all = names(list(permissive, 'filter_chains'));
  assert.ok(all.includes('outbound_bookstore/bookstore_14001_http'));
  assert.ok(!all.some((n) => n.startsWith('outbound_denied')), all.join());
  assert.deepEqual(names(list(permissive, 'listener_filters')), ['envoy.filters.listener.original_dst']);
  assert.equal(at(permissive, 'listener_filters_timeout'), undefined);
  assert.deepEqual(
    at(permissive, 'default_filter_chain', 'filters', 0, 'typed_config', 'cluster'),
    'passthrough-outbound',
  );
});

test('proxies with the same outbound plan share one outbound listener message', () => {
  const mesh = bookstoreMesh();
  // Neither bookthief nor mysql may call anything.
  assert.equal(
    named(lds(mesh, 'bookthief-1'), 'outbound-listener'),
    named(lds(mesh, 'mysql-1'), 'outbound-listener'),
  );
  assert.notEqual(
    named(lds(mesh, 'bookthief-1'), 'outbound-listener'),
    named(lds(mesh, 'bookbuyer-1'), 'outbound-listener'),
  );
});

test('outbound listeners of different plans share one frozen HCM per destination port (packed once)', () => {
  const mesh = bookstoreMesh();
  // bookthief, also calling bookstore-v1, has a plan of its own: another listener, the same HCM.
  const wider = alsoCalling(mesh, 'bookstore/bookstore-v1');
  const chain = 'outbound_bookstore/bookstore-v1_14001_http';
  const hcm = 'envoy.filters.network.http_connection_manager';
  const buyer = filterConfig(byNameIn(chains(mesh, 'bookbuyer-1', 'outbound-listener'), chain), hcm);
  const thief = filterConfig(byNameIn(chains(wider, 'bookthief-1', 'outbound-listener'), chain), hcm);
  assert.notEqual(
    named(lds(mesh, 'bookbuyer-1'), 'outbound-listener'),
    named(lds(wider, 'bookthief-1'), 'outbound-listener'),
  );
  assert.equal(thief, buyer);
  assert.ok(Object.isFrozen(buyer) && Object.isFrozen(at(buyer, 'rds')), 'a shared HCM must be immutable');
  assert.ok(at(buyer, 'access_log'), 'the access log is on the shared copy');
});

test('ports with a TCP chain keep the HTTP inspector off (server-first protocols start at once) and get no HTTP denial', () => {
  const listener = named(lds(bookstoreMesh(), 'bookwarehouse-1'), 'outbound-listener');
  // bookwarehouse calls mysql (TCP 3306, headless) only.
  assert.deepEqual(at(listener, 'listener_filters', 1, 'filter_disabled'), {
    destination_port_range: { start: 3306, end: 3307 },
  });
  assert.deepEqual(names(list(listener, 'filter_chains')), [
    'outbound_bookwarehouse/mysql_3306_tcp',
    'outbound_denied_http',
  ]);
  // Several TCP ports: an or_match (a MatchSet needs two rules or more).
  const mesh = alsoCalling(
    bookstoreMesh({ tcpSplitPort: { port: 9000, targetPort: 9001 } }),
    'bookwarehouse/mysql',
  );
  const buyer = named(lds(mesh, 'bookbuyer-1'), 'outbound-listener');
  assert.deepEqual(at(buyer, 'listener_filters', 1, 'filter_disabled'), {
    or_match: {
      rules: [
        { destination_port_range: { start: 3306, end: 3307 } },
        { destination_port_range: { start: 9000, end: 9001 } },
      ],
    },
  });
  assert.deepEqual(
    names(list(buyer, 'filter_chains')).filter((n) => n.startsWith('outbound_denied')),
    ['outbound_denied_http_14001', 'outbound_denied_http'],
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
    access_log: TCP_ACCESS_LOG,
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
  const mesh = bookstoreMesh();
  const inbound = named(lds(mesh, 'bookstore-v1-1'), 'inbound-listener');
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
    'service-cert:self',
  );
  assert.equal(
    at(tls, 'common_tls_context', 'validation_context_sds_secret_config', 'name'),
    'root-cert-for-mtls-inbound:bookstore/bookstore-v1',
  );
  // The filter's own config denies all; its route config's virtual host carries the policy,
  // so a TrafficTarget change reaches open connections over RDS.
  assert.deepEqual(httpRbac(chain), { action: 0, policies: {} });
  const rules = inboundPolicy(mesh, 'bookstore-v1-1', chain);
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
  // The route config the HCM uses: the service's own, as bookstore shares the target port.
  const hcm = filterConfig(chain, 'envoy.filters.network.http_connection_manager');
  assert.equal(at(hcm, 'rds', 'route_config_name'), 'rds-inbound.14001.bookstore/bookstore-v1');
  // local_ratelimit is always there, idle until the route config carries a bucket.
  assert.deepEqual(names(list(hcm, 'http_filters')), [
    'envoy.filters.http.rbac',
    'envoy.filters.http.local_ratelimit',
    'envoy.filters.http.router',
  ]);
  // The RBAC filter's stats live under the HCM's prefix: http.<chain>.rbac.{allowed,denied}.
  assert.equal(at(hcm, 'stat_prefix'), 'inbound_bookstore/bookstore-v1_14001_http');
  // Its 403 says why, naming the caller's SPIFFE id and the matched policy (none).
  const mapper = at(hcm, 'local_reply_config', 'mappers', 0);
  assert.deepEqual(at(mapper, 'filter', 'status_code_filter', 'comparison'), {
    op: 0, // EQ
    value: { default_value: 403, runtime_key: 'skein.local_reply.status_403' },
  });
  assert.equal(
    at(mapper, 'body_format_override', 'text_format_source', 'inline_string'),
    'skein: RBAC denied: no TrafficTarget allows %DOWNSTREAM_PEER_URI_SAN% to call this route' +
      ' (%RESPONSE_CODE_DETAILS%)\n',
  );
});

test('permissive mode: inbound RBAC allows any authenticated peer', () => {
  const mesh = bookstoreMesh({ permissive: true });
  const all = chains(mesh, 'bookstore-v1-1', 'inbound-listener');
  const rules = inboundPolicy(
    mesh,
    'bookstore-v1-1',
    byNameIn(all, 'inbound_bookstore/bookstore-v1_14001_http'),
  );
  assert.deepEqual(at(rules, 'policies'), {
    permissive: { permissions: [EVERY_REQUEST], principals: [EVERY_PEER] },
  });
});

test('no inbound rules: RBAC with ALLOW and no policies (deny all)', () => {
  const mesh = viewOf(storeOf(bookstoreObjects().filter((o) => o.kind !== 'TrafficTarget')));
  const all = chains(mesh, 'bookstore-v1-1', 'inbound-listener');
  const chain = byNameIn(all, 'inbound_bookstore/bookstore-v1_14001_http');
  assert.deepEqual(inboundPolicy(mesh, 'bookstore-v1-1', chain), { action: 0, policies: {} });
  assert.deepEqual(httpRbac(chain), { action: 0, policies: {} });
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
  // TCP callers stay pinned in the handshake (sds/sds.ts); HTTP chains take any mesh identity.
  const validation = (chain: ReturnType<typeof byNameIn>) =>
    at(
      chain,
      'transport_socket',
      'typed_config',
      'common_tls_context',
      'validation_context_sds_secret_config',
      'name',
    );
  assert.equal(validation(tcp), 'root-cert-for-mtls-inbound-tcp:bookwarehouse/bookwarehouse|13306');
  assert.equal(
    validation(byNameIn(all, 'inbound_bookwarehouse/bookwarehouse_14001_grpc')),
    'root-cert-for-mtls-inbound:bookwarehouse/bookwarehouse',
  );
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
    EVERY_REQUEST,
  ]);
});

test('non-sidecar proxies get nothing from the sidecar generator', () => {
  const mesh = bookstoreMesh();
  const proxy = proxyFor(mesh, 'bookbuyer-1');
  const grpc = { ...proxy, identity: { ...proxy.identity, kind: 'grpc' as const } };
  assert.deepEqual(sidecarLdsGenerator.generate(grpc, { mesh, secrets: fakeSecrets('all') }, undefined), []);
});

test('a sidecar whose namespace left the mesh: no inbound listener (fails closed), outbound passthrough with no mesh destination', () => {
  for (const permissive of [false, true]) {
    const { mesh, proxy } = leftTheMesh('bookbuyer-1', 'sidecar', { permissive });
    assert.equal(proxy.outsideMesh, true);
    const out = sidecarLdsGenerator.generate(proxy, { mesh, secrets: fakeSecrets('all') }, undefined);
    assert.deepEqual(
      out.map((r) => r.name),
      ['outbound-listener'],
    );
    const outbound = named(out, 'outbound-listener');
    assert.deepEqual(list(outbound, 'filter_chains'), []);
    assert.equal(at(outbound, 'default_filter_chain', 'name'), 'passthrough-outbound');
  }
  // A server's inbound listener goes too: connections to its ports are refused.
  const server = leftTheMesh('bookstore-v1-1');
  assert.deepEqual(
    sidecarLdsGenerator
      .generate(server.proxy, { mesh: server.mesh, secrets: fakeSecrets('all') }, undefined)
      .map((r) => r.name),
    ['outbound-listener'],
  );
  assert.ok(lds(bookstoreMesh(), 'bookstore-v1-1').some((r) => r.name === 'inbound-listener'));
  // The same identity in the mesh has mesh chains and denies the rest (SMI mode).
  const inMesh = bookstoreMesh();
  const outbound = named(lds(inMesh, 'bookbuyer-1'), 'outbound-listener');
  assert.notEqual(list(outbound, 'filter_chains').length, 0);
  assert.notEqual(at(outbound, 'default_filter_chain', 'name'), 'passthrough-outbound');
});
