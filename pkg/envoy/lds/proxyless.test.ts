import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  bookstoreMesh,
  generationContext,
  leftTheMesh,
  type PodName,
  proxyFor,
} from '../../../test/support/envoy/mesh.js';
import { resourceProblems } from '../../../test/support/envoy/roundtrip.js';
import type { MeshView } from '../../catalog/types.js';
import type { HTTPMatch } from '../../model/objects.js';
import { decodeMessage, encodeMessage } from '../../xds/proto/codec.js';
import { EVERY_PEER, EVERY_REQUEST } from '../rbac/rbac.js';
import { type ProtoObject, type ProtoValue, TypeUrl } from '../types.js';
import { proxylessListenerGenerator, proxylessServerListener } from './proxyless.js';

// gRPC method paths; Restock also needs a role header.
const GRPC_MATCHES: HTTPMatch[] = [
  { name: 'buy', pathRegex: '/bookstore\\.Bookstore/Buy', methods: ['POST'] },
  {
    name: 'restock',
    pathRegex: '/bookstore\\.Bookstore/Restock',
    methods: ['*'],
    headers: { 'x-role': 'clerk|manager' },
  },
];

const FQDN = 'bookstore.bookstore.svc.cluster.local:14001';
const V1_SERVER = 'grpc/server?xds.resource.listening_address=10.244.1.10:14001';

function obj(v: ProtoValue | undefined): ProtoObject {
  assert.ok(
    v !== null && typeof v === 'object' && !Array.isArray(v),
    `expected an object, got ${JSON.stringify(v)}`,
  );
  return v;
}
function list(v: ProtoValue | undefined): ProtoValue[] {
  assert.ok(Array.isArray(v), `expected a list, got ${JSON.stringify(v)}`);
  return v;
}
/** Decodes through the real protos, so assertions see what a client sees. */
function decoded(message: ProtoObject): ProtoObject {
  return decodeMessage(TypeUrl.Listener, encodeMessage(TypeUrl.Listener, message));
}

// Requested names that no mesh service answers (see the placeholder test).
const UNRESOLVED = new Set(['nope.bookstore:14001', 'bookstore.bookstore:9999', 'not-a-listener']);

function generate(mesh: MeshView, who: PodName, requested?: string[]) {
  const proxy = proxyFor(mesh, who, 'grpc');
  return proxylessListenerGenerator.generate(proxy, generationContext(mesh), requested && new Set(requested));
}

test('client listeners answer every requested alias under its own name, routed to the canonical RDS name', () => {
  const mesh = bookstoreMesh();
  const requested = [
    FQDN,
    'bookstore.bookstore:14001',
    'bookstore-v1.bookstore.svc:14001',
    'nope.bookstore:14001',
  ];
  const all = generate(mesh, 'bookbuyer-1', [...requested, 'bookstore.bookstore:9999']);
  assert.deepEqual(resourceProblems(all), []);
  const out = all.filter((r) => !UNRESOLVED.has(r.name));
  assert.deepEqual(
    out.map((r) => r.name),
    [
      'bookstore-v1.bookstore.svc:14001',
      'bookstore.bookstore.svc.cluster.local:14001',
      'bookstore.bookstore:14001',
    ],
  );
  for (const r of out) {
    const l = decoded(r.message);
    assert.equal(l['name'], r.name);
    const hcm = obj(obj(l['api_listener'])['api_listener']);
    const rds = obj(hcm['rds']);
    assert.deepEqual(obj(rds['config_source']), { ads: {}, resource_api_version: 'V3' });
    const svc = r.name.startsWith('bookstore-v1') ? 'bookstore-v1' : 'bookstore';
    assert.equal(rds['route_config_name'], `${svc}.bookstore.svc.cluster.local:14001`);
    const filters = list(hcm['http_filters']).map((f) => obj(obj(f)['typed_config'])['@type']);
    assert.equal(filters.at(-1), 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router');
  }
});

test('without a request list every service port gets a client listener, in SMI mode even for a caller no rule allows', () => {
  const mesh = bookstoreMesh();
  const out = generate(mesh, 'bookthief-1', undefined);
  assert.deepEqual(
    out.map((r) => r.name),
    [
      'bookstore-v1.bookstore.svc.cluster.local:14001',
      'bookstore-v2.bookstore.svc.cluster.local:14001',
      'bookstore.bookstore.svc.cluster.local:14001',
      'bookwarehouse.bookwarehouse.svc.cluster.local:14001',
      'bookwarehouse.bookwarehouse.svc.cluster.local:3306',
      'mysql.bookwarehouse.svc.cluster.local:3306',
    ],
  );
});

test('a server pod gets one mTLS listener per target port, with RBAC from every service on it', () => {
  const mesh = bookstoreMesh({ bookstoreMatches: GRPC_MATCHES });
  const out = generate(mesh, 'bookstore-v1-1', undefined);
  const server = out.filter((r) => r.name.startsWith('grpc/server'));
  assert.deepEqual(
    server.map((r) => r.name),
    [V1_SERVER],
  );
  assert.deepEqual(resourceProblems(server), []);
  const l = decoded(obj(server[0]?.message));
  assert.deepEqual(l['address'], { socket_address: { address: '10.244.1.10', port_value: 14001 } });
  const chains = list(l['filter_chains']);
  assert.equal(chains.length, 1);
  const chain = obj(chains[0]);
  const tls = obj(chain['transport_socket']);
  assert.equal(tls['name'], 'envoy.transport_sockets.tls');
  assert.deepEqual(obj(tls['typed_config']), {
    '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext',
    require_client_certificate: { value: true },
    common_tls_context: {
      tls_certificate_provider_instance: { instance_name: 'default' },
      validation_context: { ca_certificate_provider_instance: { instance_name: 'default' } },
    },
  });
  const hcm = obj(obj(list(chain['filters'])[0])['typed_config']);
  const vhost = obj(list(obj(hcm['route_config'])['virtual_hosts'])[0]);
  assert.deepEqual(vhost['domains'], ['*']);
  assert.deepEqual(list(vhost['routes'])[0], { match: { prefix: '/' }, non_forwarding_action: {} });
  const filters = list(hcm['http_filters']).map(obj);
  assert.deepEqual(
    filters.map((f) => f['name']),
    ['envoy.filters.http.rbac', 'envoy.filters.http.router'],
  );
  const policies = obj(obj(obj(filters[0]?.['typed_config'])['rules'])['policies']);
  // The apex and bookstore-v1 both select this pod on target port 14001: the
  // rule of each comes along (the same TrafficTarget, so a suffixed name).
  assert.deepEqual(Object.keys(policies).sort(), [
    'TrafficTarget bookstore/bookstore',
    'TrafficTarget bookstore/bookstore#1',
  ]);
  const policy = obj(Object.values(policies)[0]);
  assert.deepEqual(policy['principals'], [
    { authenticated: { principal_name: { exact: 'spiffe://cluster.local/ns/bookbuyer/sa/bookbuyer' } } },
  ]);
  assert.deepEqual(policy['permissions'], [
    {
      and_rules: {
        rules: [
          { url_path: { path: { safe_regex: { regex: '(?:/bookstore\\.Bookstore/Buy).*' } } } },
          { header: { name: ':method', string_match: { exact: 'POST' } } },
        ],
      },
    },
    {
      and_rules: {
        rules: [
          { url_path: { path: { safe_regex: { regex: '(?:/bookstore\\.Bookstore/Restock).*' } } } },
          { header: { name: 'x-role', string_match: { safe_regex: { regex: '(?:clerk|manager)' } } } },
        ],
      },
    },
  ]);
});

test('permissive mode allows any caller on the server listener', () => {
  const mesh = bookstoreMesh({ permissive: true });
  const [server] = generate(mesh, 'bookstore-v2-1', undefined).filter((r) =>
    r.name.startsWith('grpc/server'),
  );
  const rules = obj(
    obj(
      list(
        obj(obj(list(obj(list(obj(server?.message)['filter_chains'])[0])['filters'])[0])['typed_config'])[
          'http_filters'
        ],
      )[0],
    )['typed_config'],
  )['rules'];
  const policies = Object.values(obj(obj(rules)['policies'])).map(obj);
  assert.ok(policies.length > 0);
  for (const p of policies) assert.deepEqual(p, { permissions: [EVERY_REQUEST], principals: [EVERY_PEER] });
});

test('requested server listeners: pod IP or unspecified IP on a pod port only', () => {
  const mesh = bookstoreMesh({ targetPorts: { v1: 15001 } });
  const out = generate(mesh, 'bookstore-v1-1', [
    'grpc/server?xds.resource.listening_address=0.0.0.0:15001',
    'grpc/server?xds.resource.listening_address=10.9.9.9:15001',
    'grpc/server?xds.resource.listening_address=10.244.1.10:15002',
    'grpc/server?xds.resource.listening_address=10.244.1.10:0',
    'not-a-listener',
  ]);
  assert.deepEqual(
    out.filter((r) => !UNRESOLVED.has(r.name)).map((r) => r.name),
    [
      'grpc/server?xds.resource.listening_address=0.0.0.0:15001',
      'grpc/server?xds.resource.listening_address=10.244.1.10:15001',
    ],
  );
  const unspecified = decoded(obj(out[0]?.message));
  assert.deepEqual(unspecified['address'], { socket_address: { address: '0.0.0.0', port_value: 15001 } });
  // A client pod backs no service: no server listener at all.
  assert.deepEqual(
    generate(mesh, 'bookbuyer-1', undefined).filter((r) => r.name.startsWith('grpc/server')),
    [],
  );
});

test('a proxy whose pod is not in the mesh keeps a deny-all mTLS server listener instead of losing it', () => {
  const mesh = bookstoreMesh();
  const proxy = { ...proxyFor(mesh, 'bookstore-v1-1', 'grpc') };
  // As proxyContext leaves it when the pod is gone (its namespace left the mesh).
  delete proxy.pod;
  delete proxy.podIP;
  proxy.services = [];
  const out = proxylessListenerGenerator.generate(
    proxy,
    generationContext(mesh),
    new Set([V1_SERVER, 'not-a-listener']),
  );
  assert.deepEqual(
    out.map((r) => r.name),
    [V1_SERVER, 'not-a-listener'],
  );
  const l = decoded(obj(out[0]?.message));
  const chain = obj(list(l['filter_chains'])[0]);
  assert.equal(obj(chain['transport_socket'])['name'], 'envoy.transport_sockets.tls');
  const hcm = obj(obj(list(chain['filters'])[0])['typed_config']);
  assert.deepEqual(obj(list(hcm['http_filters'])[0])['typed_config'], {
    '@type': 'type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC',
    rules: { action: 'ALLOW' },
  });
});

test('no rules → ALLOW with no policies (deny all), and the RBAC rules message is still encoded', () => {
  const l = decoded(proxylessServerListener(V1_SERVER, '10.244.1.10', 14001, [], 'cluster.local'));
  const hcm = obj(obj(list(obj(list(l['filter_chains'])[0])['filters'])[0])['typed_config']);
  const rbac = obj(obj(list(hcm['http_filters'])[0])['typed_config']);
  // grpc-js-xds skips an RBAC filter whose `rules` is absent (fails open):
  // the policy-less rules must survive encoding as present.
  assert.deepEqual(rbac, {
    '@type': 'type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC',
    rules: { action: 'ALLOW' },
  });
});

test('a requested client target that names no mesh service gets a Listener with no route instead of none', () => {
  const mesh = bookstoreMesh();
  const out = generate(mesh, 'bookbuyer-1', [FQDN, 'nope.bookstore:14001', 'bookstore.bookstore:9999']);
  assert.deepEqual(
    out.map((r) => r.name),
    ['bookstore.bookstore.svc.cluster.local:14001', 'bookstore.bookstore:9999', 'nope.bookstore:14001'],
  );
  assert.deepEqual(resourceProblems(out), []);
  for (const r of out.slice(1)) {
    const hcm = obj(obj(decoded(r.message)['api_listener'])['api_listener']);
    // Inline: it names no RouteConfiguration and so no Cluster, which grpc-js-xds
    // then subscribes afresh when the real Listener comes back.
    assert.equal(hcm['rds'], undefined);
    const hosts = list(obj(hcm['route_config'])['virtual_hosts']).map(obj);
    assert.equal(hosts.length, 1);
    assert.equal(hosts[0]?.['name'], `skein: no route to ${r.name}: it is not a service in the mesh`);
    assert.deepEqual(hosts[0]?.['domains'], ['*']);
    assert.equal(hosts[0]?.['routes'], undefined);
  }
  // When the service exists again, the real Listener differs from the placeholder.
  assert.notDeepEqual(decoded(obj(out[0]?.message)), decoded(obj(out[2]?.message)));
});

test('a proxyless workload whose namespace left the mesh: deny-all servers, no route to any target', () => {
  const { mesh, proxy } = leftTheMesh('bookbuyer-1', 'grpc');
  assert.equal(proxy.outsideMesh, true);
  const out = proxylessListenerGenerator.generate(
    proxy,
    generationContext(mesh),
    new Set([FQDN, 'grpc/server?xds.resource.listening_address=10.244.2.10:14001']),
  );
  assert.deepEqual(
    out.map((r) => r.name),
    [
      'bookstore.bookstore.svc.cluster.local:14001',
      'grpc/server?xds.resource.listening_address=10.244.2.10:14001',
    ],
  );
  const hcm = obj(obj(decoded(obj(out[0]?.message))['api_listener'])['api_listener']);
  const host = obj(list(obj(hcm['route_config'])['virtual_hosts'])[0]);
  assert.equal(host['name'], `skein: no route to ${FQDN}: namespace bookbuyer is not in the mesh`);
  assert.equal(host['routes'], undefined);
});
