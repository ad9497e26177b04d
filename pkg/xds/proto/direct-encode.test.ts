import assert from 'node:assert/strict';
import { test } from 'node:test';
import protobuf from 'protobufjs';
import { bookbuyerEgresses } from '../../../test/support/envoy/egress-fixtures.js';
import {
  fetchByKind,
  gatewayContext,
  gatewayObjects,
  gatewayProxy,
} from '../../../test/support/envoy/gateway.js';
import { ingressObjects } from '../../../test/support/envoy/ingress.js';
import {
  bookstoreObjects,
  fakeSecrets,
  POD_NAMES,
  proxyFor,
  storeOf,
  viewOf,
} from '../../../test/support/envoy/mesh.js';
import { bookbuyerRetries } from '../../../test/support/envoy/retry.js';
import { upstreamSetting } from '../../../test/support/envoy/upstream.js';
import { EVERY_REQUEST } from '../../envoy/rbac/rbac.js';
import type { Resource } from '../../envoy/types.js';
import { encodeResource, hashContent } from '../cache/encoded.js';
import { encodeDirect } from './direct-encode.js';
import { envoyRoot, messageType } from './root.js';

type Plain = { [k: string]: unknown };

/** Circuit breakers, outlier detection, timeouts, each load-balancing policy and hash policies. */
const UPSTREAM_SETTINGS = [
  upstreamSetting('bookstore', 'bookstore-v1', {
    connectionSettings: {
      tcp: { maxConnections: 1, connectTimeout: '1s' },
      http: { maxRequests: 1, maxPendingRequests: 1, maxRetries: 2, maxRequestsPerConnection: 5 },
    },
    outlierDetection: { consecutive5xx: 2, interval: '2s', baseEjectionTime: '10s', maxEjectionPercent: 100 },
    loadBalancer: { policy: 'LeastRequest', choiceCount: 2 },
    requestTimeout: '300ms',
  }),
  upstreamSetting('bookstore', 'bookstore', {
    loadBalancer: { policy: 'RingHash', hashOn: [{ header: 'x-user' }, { sourceIP: true }] },
  }),
  upstreamSetting('bookwarehouse', 'bookwarehouse', {
    loadBalancer: { policy: 'Maglev', hashOn: [{ cookie: { name: 'id', ttl: '30m' } }] },
  }),
];

/** What protobufjs writes for the same input: the reference the direct encoder must equal byte for byte. */
function byProtobufjs(type: protobuf.Type, message: Plain): Buffer {
  return Buffer.from(type.encode(type.fromObject(message)).finish());
}

function sameAsProtobufjs(typeName: string, message: Plain, where = typeName): void {
  const type = messageType(typeName);
  assert.deepEqual(Buffer.from(encodeDirect(type, message)), byProtobufjs(type, message), where);
}

/** Every resource of every sidecar and of the gateway, in the meshes the generator tests use. */
function everyResource(): Resource[] {
  const out: Resource[] = [];
  const meshes = [
    bookstoreObjects(),
    bookstoreObjects({ permissive: true }),
    bookstoreObjects({ weights: { v1: 30, v2: 70 }, tcpSplitPort: { port: 9000, targetPort: 9001 } }),
    [...bookstoreObjects(), ...bookbuyerEgresses()],
    [...bookstoreObjects(), ...bookbuyerRetries(), ...UPSTREAM_SETTINGS],
    ingressObjects(),
  ];
  for (const objects of meshes) {
    const mesh = viewOf(storeOf(objects));
    for (const name of POD_NAMES) {
      const res = fetchByKind(proxyFor(mesh, name), { mesh, secrets: fakeSecrets('all') });
      out.push(...res.listeners, ...res.routes, ...res.clusters, ...res.endpoints, ...res.secrets);
    }
  }
  const gw = viewOf(storeOf(gatewayObjects()));
  const res = fetchByKind(gatewayProxy(gw), gatewayContext(gw, ['bookstore/shop-tls']));
  out.push(...res.listeners, ...res.routes, ...res.clusters, ...res.endpoints, ...res.secrets);
  return out;
}

test('every generated resource encodes to the bytes protobufjs writes', () => {
  const all = everyResource();
  const types = new Set(all.map((r) => r.typeUrl));
  assert.equal(types.size, 5, [...types].join());
  assert.ok(all.length > 300, `only ${all.length} resources`);
  for (const r of all)
    sameAsProtobufjs(r.typeUrl.replace(/^type\.googleapis\.com\//, ''), r.message, `${r.typeUrl} ${r.name}`);
});

test('scalars, enums, maps, packed and unpacked repeats, 64-bit and bytes as protobufjs writes them', () => {
  // Zero values present in the object are written (protobufjs writes every own property).
  sameAsProtobufjs('envoy.config.cluster.v3.Cluster', {
    name: '',
    type: 0,
    lb_policy: 'MAGLEV',
    respect_dns_ttl: false,
    per_connection_buffer_limit_bytes: { value: 0 },
    connect_timeout: { seconds: '30', nanos: 5 },
    metadata: { filter_metadata: { a: { fields: { k: { stringValue: 'v' }, n: { numberValue: 1.5 } } } } },
  });
  // Packed (proto3 numeric repeats), enum repeats, string repeats.
  sameAsProtobufjs('envoy.config.route.v3.RetryPolicy', {
    retry_on: '5xx',
    retriable_status_codes: [503, 504, 0],
    retriable_request_headers: [{ name: 'x', string_match: { exact: 'y' } }],
  });
  sameAsProtobufjs('envoy.config.core.v3.HealthCheck', {
    timeout: { seconds: 1 },
    interval: { seconds: 2 },
    http_health_check: {
      path: '/',
      expected_statuses: [{ start: 200, end: 300 }],
      codec_client_type: 'HTTP2',
    },
  });
  // int64 from numbers and decimal strings, negative included.
  sameAsProtobufjs('envoy.type.v3.Int64Range', { start: -5, end: '9007199254740993' });
  // bytes from base64 strings and from Uint8Array.
  sameAsProtobufjs('envoy.config.core.v3.DataSource', { inline_bytes: 'aGVsbG8=' });
  sameAsProtobufjs('envoy.config.core.v3.DataSource', { inline_bytes: new Uint8Array([0, 1, 255]) });
  sameAsProtobufjs('envoy.config.core.v3.DataSource', { inline_bytes: [7, 8] });
  sameAsProtobufjs('google.protobuf.Any', { type_url: 'type.googleapis.com/envoy.Nope', value: [] });
  // Nested Anys, a map of Anys, an Any without @type.
  sameAsProtobufjs('envoy.config.cluster.v3.Cluster', {
    name: 'c',
    typed_extension_protocol_options: {
      'envoy.extensions.upstreams.http.v3.HttpProtocolOptions': {
        '@type': 'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
        explicit_http_config: { http2_protocol_options: {} },
      },
    },
    transport_socket: { name: 'tls', typed_config: { type_url: 'x/y', value: new Uint8Array([8, 1]) } },
  });
});

test('a frozen Any is packed once and encodes as an unfrozen one does', () => {
  const payload = {
    '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router',
    suppress_envoy_headers: true,
  };
  const frozen = Object.freeze({ ...payload });
  const filter = (typed_config: object) => ({ name: 'envoy.filters.http.router', typed_config });
  const type = messageType('envoy.extensions.filters.network.http_connection_manager.v3.HttpFilter');
  const first = Buffer.from(encodeDirect(type, filter(frozen)));
  assert.deepEqual(first, byProtobufjs(type, filter(payload)));
  assert.deepEqual(Buffer.from(encodeDirect(type, filter(frozen))), first);
  // One that is not frozen may change, and is packed again each time.
  const open: Plain = { ...payload };
  const before = Buffer.from(encodeDirect(type, filter(open)));
  open['suppress_envoy_headers'] = false;
  const after = Buffer.from(encodeDirect(type, filter(open)));
  assert.notDeepEqual(after, before);
  assert.deepEqual(after, byProtobufjs(type, filter(open)));
});

test('what protobufjs would drop or empty is refused, naming the field', () => {
  const cluster = messageType('envoy.config.cluster.v3.Cluster');
  assert.throws(
    () => encodeDirect(cluster, { name: 'c', lb_policy: 'ROUND_ROBBIN' }),
    /envoy\.config\.cluster\.v3\.Cluster\.lb_policy: ROUND_ROBBIN is not a value of/,
  );
  // An enum table is no plain object: inherited names are no values.
  assert.throws(() => encodeDirect(cluster, { lb_policy: 'toString' }), /toString is not a value/);
  // Repeated enums too, names and numbers as protobufjs takes them.
  const statuses = messageType('envoy.config.core.v3.HealthStatusSet');
  assert.throws(
    () => encodeDirect(statuses, { statuses: ['HEALTHY', 'toString'] }),
    /toString is not a value/,
  );
  sameAsProtobufjs('envoy.config.core.v3.HealthStatusSet', { statuses: ['HEALTHY', 3, 'DRAINING'] });
  assert.throws(
    () =>
      encodeDirect(cluster, {
        transport_socket: { name: 't', typed_config: { '@type': 'type.googleapis.com/no.such.Type' } },
      }),
    /no loaded message type for @type type\.googleapis\.com\/no\.such\.Type/,
  );
  assert.throws(
    () => encodeDirect(cluster, { connect_timeout: 5 }),
    /Cluster\.connect_timeout: object expected/,
  );
  assert.throws(() => encodeDirect(cluster, { health_checks: {} }), /Cluster\.health_checks: array expected/);
  // Depth is bounded as protobufjs bounds it: a cyclic input throws instead of overflowing the stack.
  const permission = messageType('envoy.config.rbac.v3.Permission');
  const cyclic: Plain = { ...EVERY_REQUEST };
  cyclic['and_rules'] = { rules: [cyclic] };
  assert.throws(() => encodeDirect(permission, cyclic), /max depth exceeded/);
  assert.throws(() => byProtobufjs(permission, cyclic), /depth exceeded/);
  assert.ok(envoyRoot());
});

test('a framed resource is protobufjs framing protobufjs bytes, hashed over the message bytes', () => {
  for (const r of everyResource().slice(0, 80)) {
    const typeName = r.typeUrl.replace(/^type\.googleapis\.com\//, '');
    const value = byProtobufjs(messageType(typeName), r.message);
    const framed = protobuf.Writer.create()
      .uint32(18)
      .fork()
      .uint32(10)
      .string(r.typeUrl)
      .uint32(18)
      .bytes(value)
      .ldelim()
      .finish();
    const encoded = encodeResource(r);
    assert.deepEqual(Buffer.from(encoded.framed), Buffer.from(framed), `${r.typeUrl} ${r.name}`);
    assert.equal(encoded.hash, hashContent(r.name, value));
  }
});
