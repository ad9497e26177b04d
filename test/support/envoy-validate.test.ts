// The Envoy validation tool reports what Envoy would reject: top-level rule
// violations, violations inside nested Anys at any depth, Anys of unknown type
// and fields Envoy's protos do not have; and nothing for a valid resource.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AnyType, adsConfigSource, ExtName, typed } from '../../pkg/envoy/common/xds.js';
import { type ProtoObject, TypeUrl } from '../../pkg/envoy/types.js';
import { encodeMessage } from '../../pkg/xds/proto/codec.js';
import { type EncodedResource, validateWithEnvoy } from './envoy-validate.js';

function cluster(fields: ProtoObject): EncodedResource {
  return { typeUrl: TypeUrl.Cluster, bytes: encodeMessage(TypeUrl.Cluster, fields) };
}

/** A listener whose one filter is this HCM body (rds + router unless overridden). */
function listenerWithHcm(hcm: ProtoObject): EncodedResource {
  const message: ProtoObject = {
    name: 'l',
    address: { socket_address: { address: '0.0.0.0', port_value: 15001 } },
    filter_chains: [
      {
        filters: [
          {
            name: ExtName.HttpConnectionManager,
            typed_config: typed(AnyType.HttpConnectionManager, {
              rds: { route_config_name: 'r', config_source: adsConfigSource() },
              http_filters: [{ name: ExtName.Router, typed_config: typed(AnyType.Router) }],
              ...hcm,
            }),
          },
        ],
      },
    ],
  };
  return { typeUrl: TypeUrl.Listener, bytes: encodeMessage(TypeUrl.Listener, message) };
}

const GOOD_CLUSTER = { name: 'c', type: 'EDS', eds_cluster_config: { eds_config: adsConfigSource() } };

test('valid resources pass', async () => {
  assert.deepEqual(
    await validateWithEnvoy([cluster(GOOD_CLUSTER), listenerWithHcm({ stat_prefix: 'out' })]),
    [],
  );
  assert.deepEqual(await validateWithEnvoy([]), []);
});

test('a top-level violation: a Cluster with an empty name and a negative connect_timeout', async () => {
  const got = await validateWithEnvoy([
    cluster({ ...GOOD_CLUSTER, name: '', connect_timeout: { seconds: -1 } }),
  ]);
  assert.deepEqual(got, [
    'Cluster "": Name: value length must be at least 1 runes',
    'Cluster "": ConnectTimeout: value must be greater than 0s',
  ]);
});

test('a violation inside an Any: an HttpConnectionManager without stat_prefix', async () => {
  const got = await validateWithEnvoy([listenerWithHcm({})]);
  assert.deepEqual(got, [
    'Listener "l": filter_chains[0].filters[0].typed_config<HttpConnectionManager>.StatPrefix: value length must be at least 1 runes',
  ]);
});

test('a violation two Anys deep: an RBAC policy without principals inside the HCM', async () => {
  const rbac = typed(AnyType.HttpRbac, {
    rules: { policies: { p: { permissions: [{ any: true }] } } },
  });
  const got = await validateWithEnvoy([
    listenerWithHcm({
      stat_prefix: 'out',
      http_filters: [
        { name: ExtName.HttpRbac, typed_config: rbac },
        { name: ExtName.Router, typed_config: typed(AnyType.Router) },
      ],
    }),
  ]);
  assert.equal(got.length, 1, got.join('\n'));
  assert.match(
    got[0] ?? '',
    /^Listener "l": filter_chains\[0\]\.filters\[0\]\.typed_config<HttpConnectionManager>\.http_filters\[0\]\.typed_config<RBAC>\.Rules\.Policies\[p\]\.Principals: value must contain at least 1 item/,
  );
});

test('an Any whose type is not linked in, unknown fields and undecodable bytes are violations', async () => {
  const unlinked = encodeMessage(TypeUrl.Listener, {
    name: 'l',
    listener_filters: [
      { name: 'x', typed_config: { type_url: 'type.googleapis.com/envoy.Nope', value: [] } },
    ],
  });
  // Field 9999, varint 1: not a field of Cluster.
  const unknown = Buffer.concat([
    encodeMessage(TypeUrl.Cluster, GOOD_CLUSTER),
    Buffer.from([0xf8, 0xf0, 0x04, 1]),
  ]);
  const got = await validateWithEnvoy([
    { typeUrl: TypeUrl.Listener, bytes: unlinked, label: 'proxy-a' },
    { typeUrl: TypeUrl.Cluster, bytes: unknown },
    { typeUrl: TypeUrl.Cluster, bytes: Uint8Array.from([0xff]) },
  ]);
  assert.equal(got.length, 3, got.join('\n'));
  assert.match(
    got[0] ?? '',
    /^proxy-a Listener "l": listener_filters\[0\]\.typed_config: type "type\.googleapis\.com\/envoy\.Nope" is not linked/,
  );
  assert.match(
    got[1] ?? '',
    /^Cluster "c": \.: fields unknown to envoy\.config\.cluster\.v3\.Cluster: \[9999\]$/,
  );
  assert.match(got[2] ?? '', /^Cluster \?: does not unmarshal/);
});
