import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TypeUrl } from '../../envoy/types.js';
import { encodeMessage } from '../proto/codec.js';
import { anyJson, bytesToProto3Json, durationJson } from './proto-json.js';

test('durations print as proto3 JSON strings with 0, 3, 6 or 9 fractional digits', () => {
  assert.equal(durationJson(1, 0), '1s');
  assert.equal(durationJson(0, 250_000_000), '0.250s');
  assert.equal(durationJson(3, 1_500), '3.000001500s');
  assert.equal(durationJson(0, 120_000), '0.000120s');
  assert.equal(durationJson(-2, -500_000_000), '-2.500s');
});

test('a cluster: Duration as a string, wrapper unwrapped, enum by name, 64-bit as a string, Any with @type', () => {
  const cluster = {
    name: 'bookstore/bookstore|14001',
    type: 3, // EDS
    connect_timeout: { seconds: 1, nanos: 500_000_000 },
    eds_cluster_config: { eds_config: { ads: {} } },
    per_connection_buffer_limit_bytes: { value: 32768 },
    typed_extension_protocol_options: {
      'envoy.extensions.upstreams.http.v3.HttpProtocolOptions': {
        '@type': 'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
        explicit_http_config: { http2_protocol_options: {} },
      },
    },
    lb_subset_config: {},
  };
  const json = bytesToProto3Json(TypeUrl.Cluster, encodeMessage(TypeUrl.Cluster, cluster));
  assert.deepEqual(json, {
    name: 'bookstore/bookstore|14001',
    type: 'EDS',
    connect_timeout: '1.500s',
    eds_cluster_config: { eds_config: { ads: {} } },
    per_connection_buffer_limit_bytes: 32768,
    typed_extension_protocol_options: {
      'envoy.extensions.upstreams.http.v3.HttpProtocolOptions': {
        '@type': 'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
        explicit_http_config: { http2_protocol_options: {} },
      },
    },
    lb_subset_config: {},
  });
});

test('Struct, bytes, int64 and a wrapper holding its default', () => {
  const listener = {
    name: 'l',
    metadata: {
      filter_metadata: {
        skein: { fields: { a: { stringValue: 'x' }, n: { numberValue: 2 }, ok: { boolValue: true } } },
      },
    },
    per_connection_buffer_limit_bytes: {},
  };
  const json = bytesToProto3Json(TypeUrl.Listener, encodeMessage(TypeUrl.Listener, listener));
  assert.deepEqual(json, {
    name: 'l',
    metadata: { filter_metadata: { skein: { a: 'x', n: 2, ok: true } } },
    per_connection_buffer_limit_bytes: 0,
  });
  const secret = {
    name: 's',
    session_ticket_keys: { keys: [{ inline_bytes: Buffer.from('hello').toString('base64') }] },
  };
  assert.deepEqual(bytesToProto3Json(TypeUrl.Secret, encodeMessage(TypeUrl.Secret, secret)), {
    name: 's',
    session_ticket_keys: { keys: [{ inline_bytes: Buffer.from('hello').toString('base64') }] },
  });
  const route = {
    name: 'r',
    virtual_hosts: [
      {
        name: 'v',
        domains: ['*'],
        routes: [
          { match: { prefix: '/' }, route: { cluster: 'c', timeout: { seconds: 0 } }, stat_prefix: 's' },
        ],
      },
    ],
    max_direct_response_body_size_bytes: { value: 4096 },
  };
  const rjson = bytesToProto3Json(
    TypeUrl.RouteConfiguration,
    encodeMessage(TypeUrl.RouteConfiguration, route),
  );
  assert.deepEqual(rjson, {
    name: 'r',
    virtual_hosts: [
      {
        name: 'v',
        domains: ['*'],
        routes: [{ match: { prefix: '/' }, route: { cluster: 'c', timeout: '0s' }, stat_prefix: 's' }],
      },
    ],
    max_direct_response_body_size_bytes: 4096,
  });
});

test('an Any of a well-known type puts its JSON under value; an unknown type keeps its bytes', () => {
  const duration = encodeMessage('google.protobuf.Duration', { seconds: 5 });
  assert.deepEqual(anyJson('type.googleapis.com/google.protobuf.Duration', duration), {
    '@type': 'type.googleapis.com/google.protobuf.Duration',
    value: '5s',
  });
  assert.deepEqual(anyJson('type.googleapis.com/no.such.Type', Uint8Array.of(1, 2, 3)), {
    '@type': 'type.googleapis.com/no.such.Type',
    value: 'AQID',
  });
});

test('a 64-bit integer prints as a decimal string', () => {
  const cla = {
    cluster_name: 'c',
    policy: { overprovisioning_factor: { value: 140 } },
    endpoints: [
      {
        lb_endpoints: [
          { endpoint: { address: { socket_address: { address: '10.0.0.1', port_value: 80 } } } },
        ],
      },
    ],
  };
  const json = bytesToProto3Json(
    TypeUrl.ClusterLoadAssignment,
    encodeMessage(TypeUrl.ClusterLoadAssignment, cla),
  );
  assert.deepEqual(json, {
    cluster_name: 'c',
    policy: { overprovisioning_factor: 140 },
    endpoints: [
      {
        lb_endpoints: [
          { endpoint: { address: { socket_address: { address: '10.0.0.1', port_value: 80 } } } },
        ],
      },
    ],
  });
  const big = bytesToProto3Json(
    'envoy.config.core.v3.RuntimeFractionalPercent',
    encodeMessage('envoy.config.core.v3.RuntimeFractionalPercent', {
      default_value: { numerator: 3, denominator: 'MILLION' },
    }),
  );
  assert.deepEqual(big, { default_value: { numerator: 3, denominator: 'MILLION' } });
  const cb = bytesToProto3Json(
    'envoy.config.cluster.v3.OutlierDetection',
    encodeMessage('envoy.config.cluster.v3.OutlierDetection', {
      max_ejection_time_jitter: { seconds: '12345678901234' },
    }),
  );
  assert.deepEqual(cb, { max_ejection_time_jitter: '12345678901234s' });
});
