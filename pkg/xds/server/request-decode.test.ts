import assert from 'node:assert/strict';
import { test } from 'node:test';
import { messageType } from '../proto/root.js';
import { decodeDeltaDiscoveryRequest, decodeDiscoveryRequest } from './request-decode.js';

// A Node as a real Envoy sends it: the fields the server ignores come first and
// last, so skipping them must land exactly on id and cluster.
const NODE = {
  user_agent_name: 'envoy',
  user_agent_build_version: { version: { major_number: 1, minor_number: 40 }, metadata: { fields: {} } },
  extensions: Array.from({ length: 300 }, (_, i) => ({
    name: `envoy.filters.x${i}`,
    category: 'envoy.filters.http',
    type_urls: [`type.googleapis.com/x.v3.X${i}`],
  })),
  id: '0b0c.sidecar.bookbuyer.shop.cluster.local',
  metadata: { fields: { pod: { string_value: 'bookbuyer-1' }, n: { number_value: 3 } } },
  locality: { region: 'r', zone: 'z' },
  cluster: 'bookbuyer',
  client_features: ['envoy.lb.does_not_support_overprovisioning'],
};

function encode(type: string, obj: Record<string, unknown>): Uint8Array {
  const t = messageType(type);
  return t.encode(t.fromObject(obj)).finish();
}

test('DiscoveryRequest: the fields the server reads, the rest of a full Envoy Node skipped', () => {
  const bytes = encode('envoy.service.discovery.v3.DiscoveryRequest', {
    version_info: 'v1',
    node: NODE,
    resource_names: ['a', 'b'],
    type_url: 'type.googleapis.com/envoy.config.cluster.v3.Cluster',
    response_nonce: '7',
    error_detail: { code: 3, message: 'bad cluster', details: [{ type_url: 'x', value: Buffer.from('y') }] },
    resource_locators: [{ name: 'a' }],
  });
  assert.ok(bytes.length > 10_000);
  assert.deepEqual(decodeDiscoveryRequest(bytes), {
    versionInfo: 'v1',
    node: { id: NODE.id, cluster: NODE.cluster },
    resourceNames: ['a', 'b'],
    typeUrl: 'type.googleapis.com/envoy.config.cluster.v3.Cluster',
    responseNonce: '7',
    errorDetail: { code: 3, message: 'bad cluster' },
  });
  // An ACK: no node, no error.
  assert.deepEqual(
    decodeDiscoveryRequest(encode('envoy.service.discovery.v3.DiscoveryRequest', { type_url: 't' })),
    {
      versionInfo: '',
      resourceNames: [],
      typeUrl: 't',
      responseNonce: '',
    },
  );
});

test('DeltaDiscoveryRequest: subscriptions, initial versions, node and NACK', () => {
  const bytes = encode('envoy.service.discovery.v3.DeltaDiscoveryRequest', {
    node: NODE,
    type_url: 't',
    resource_names_subscribe: ['a', 'b'],
    resource_names_unsubscribe: ['c'],
    initial_resource_versions: { a: '1', b: '2' },
    response_nonce: 'n',
    error_detail: { code: 13, message: 'no' },
  });
  const req = decodeDeltaDiscoveryRequest(bytes);
  assert.deepEqual(req, {
    node: { id: NODE.id, cluster: NODE.cluster },
    typeUrl: 't',
    resourceNamesSubscribe: ['a', 'b'],
    resourceNamesUnsubscribe: ['c'],
    initialResourceVersions: new Map([
      ['a', '1'],
      ['b', '2'],
    ]),
    responseNonce: 'n',
    errorDetail: { code: 13, message: 'no' },
  });
});

test('malformed bytes throw instead of yielding a half-read request', () => {
  const whole = encode('envoy.service.discovery.v3.DiscoveryRequest', { node: NODE, type_url: 't' });
  assert.throws(() => decodeDiscoveryRequest(whole.subarray(0, whole.length - 40)));
  // type_url (field 4) as a varint: not the message we expect.
  assert.throws(() => decodeDiscoveryRequest(Uint8Array.from([4 << 3, 1])), /type_url: wire type 0/);
  // A node whose length points past the end.
  assert.throws(() => decodeDeltaDiscoveryRequest(Uint8Array.from([(1 << 3) | 2, 50, 0x0a, 1, 0x61])));
});
