// What the generated types buy: the encoder (like protobufjs fromObject)
// silently drops a misspelt field, while the types refuse it at compile time;
// an enum name the enum lacks is refused by both. Each @ts-expect-error fails
// the build if the line ever compiles.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeMessage, encodeMessage } from '../../xds/proto/codec.js';
import { AnyType, durationSeconds, ExtName, httpProtocolOptions, typed } from '../common/xds.js';
import { TypeUrl } from '../types.js';
import type { Cluster, Listener } from './envoy.js';

function roundTrip(typeUrl: string, message: Cluster | Listener): unknown {
  return decodeMessage(typeUrl, encodeMessage(typeUrl, message));
}

test('a typed Cluster is the fromObject form the encoder takes: enums by name or number, Durations, Anys', () => {
  const cluster: Cluster = {
    name: 'c',
    type: 'STRICT_DNS',
    lb_policy: 0,
    connect_timeout: durationSeconds(2),
    typed_extension_protocol_options: httpProtocolOptions(true),
  };
  assert.deepEqual(roundTrip(TypeUrl.Cluster, cluster), {
    name: 'c',
    type: 'STRICT_DNS',
    lb_policy: 'ROUND_ROBIN',
    connect_timeout: { seconds: 2 },
    typed_extension_protocol_options: {
      [ExtName.HttpProtocolOptions]: {
        '@type': AnyType.HttpProtocolOptions,
        explicit_http_config: { http2_protocol_options: {} },
      },
    },
  });
});

test('what the types refuse, the encoder drops without a word or refuses at run time', () => {
  // @ts-expect-error: Cluster has connect_timeout, not conect_timeout
  const misspelt: Cluster = { name: 'c', conect_timeout: durationSeconds(1) };
  assert.deepEqual(roundTrip(TypeUrl.Cluster, misspelt), { name: 'c' });

  // @ts-expect-error: stat_prefix belongs to the HttpConnectionManager, not the Router payload
  const wrongPayload = typed(AnyType.Router, { stat_prefix: 'x' });
  const listener: Listener = {
    name: 'l',
    filter_chains: [
      {
        filters: [
          {
            name: ExtName.HttpConnectionManager,
            typed_config: typed(AnyType.HttpConnectionManager, {
              stat_prefix: 'l',
              http_filters: [{ name: ExtName.Router, typed_config: wrongPayload }],
            }),
          },
        ],
      },
    ],
  };
  const decoded = JSON.stringify(roundTrip(TypeUrl.Listener, listener));
  assert.match(
    decoded,
    /"@type":"type\.googleapis\.com\/envoy\.extensions\.filters\.http\.router\.v3\.Router"\}/,
  );
  assert.doesNotMatch(decoded, /"stat_prefix":"x"/);

  // @ts-expect-error: Envoy has no discovery type EDSS
  const badEnum: Cluster = { name: 'c', type: 'EDSS' };
  // protobufjs dropped it (the cluster would have been STATIC, the proto3 default); the encoder refuses it.
  assert.throws(
    () => encodeMessage(TypeUrl.Cluster, badEnum),
    /envoy\.config\.cluster\.v3\.Cluster\.type: EDSS is not a value of \.envoy\.config\.cluster\.v3\.Cluster\.DiscoveryType/,
  );
});
