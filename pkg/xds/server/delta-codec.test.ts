import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cluster } from '../../../test/support/xds/testing.js';
import { TypeUrl } from '../../envoy/types.js';
import { encodeResource } from '../cache/encoded.js';
import { decodeMessage } from '../proto/codec.js';
import {
  decodeDeltaDiscoveryRequest,
  decodeDeltaDiscoveryResponse,
  encodeDeltaDiscoveryRequest,
  encodeDeltaDiscoveryResponse,
} from './delta-codec.js';

test('DeltaDiscoveryRequest round-trips every field the server reads', () => {
  const req = {
    node: { id: 'node-1', cluster: 'c' },
    typeUrl: TypeUrl.ClusterLoadAssignment,
    resourceNamesSubscribe: ['a', 'b'],
    resourceNamesUnsubscribe: ['c'],
    initialResourceVersions: new Map([
      ['a', 'v1'],
      ['__proto__', 'v2'],
    ]),
    responseNonce: '7',
    errorDetail: { code: 3, message: 'bad' },
  };
  assert.deepEqual(decodeDeltaDiscoveryRequest(encodeDeltaDiscoveryRequest(req)), req);
  const bare = decodeDeltaDiscoveryRequest(
    encodeDeltaDiscoveryRequest({
      typeUrl: TypeUrl.Cluster,
      resourceNamesSubscribe: [],
      resourceNamesUnsubscribe: [],
      initialResourceVersions: new Map(),
      responseNonce: '',
    }),
  );
  assert.equal(bare.node, undefined);
  assert.equal(bare.errorDetail, undefined);
  assert.equal(bare.initialResourceVersions.size, 0);
});

test('the hand-framed DeltaDiscoveryResponse decodes as Envoy reads it', () => {
  const a = encodeResource(cluster('a', 4));
  const b = encodeResource(cluster('b'));
  const bytes = encodeDeltaDiscoveryResponse({
    systemVersionInfo: 'sys-1',
    resources: [a, b],
    removedResources: ['gone', 'also-gone'],
    typeUrl: TypeUrl.Cluster,
    nonce: 'n1',
    controlPlaneId: 'skein-test',
  });
  const res = decodeDeltaDiscoveryResponse(bytes);
  assert.equal(res.systemVersionInfo, 'sys-1');
  assert.equal(res.typeUrl, TypeUrl.Cluster);
  assert.equal(res.nonce, 'n1');
  assert.equal(res.controlPlaneId, 'skein-test');
  assert.deepEqual(res.removedResources, ['gone', 'also-gone']);
  assert.deepEqual(
    res.resources.map((r) => [r.name, r.version, r.typeUrl, r.aliases]),
    [
      ['a', a.hash, TypeUrl.Cluster, []],
      ['b', b.hash, TypeUrl.Cluster, []],
    ],
  );
  assert.deepEqual(
    decodeMessage(TypeUrl.Cluster, res.resources[0]?.value ?? new Uint8Array())['connect_timeout'],
    {
      seconds: 4,
    },
  );
  // An empty response is still a valid message with its nonce.
  const empty = decodeDeltaDiscoveryResponse(
    encodeDeltaDiscoveryResponse({
      systemVersionInfo: '',
      resources: [],
      removedResources: [],
      typeUrl: TypeUrl.Listener,
      nonce: 'n2',
      controlPlaneId: 'skein',
    }),
  );
  assert.deepEqual([empty.resources, empty.removedResources, empty.nonce], [[], [], 'n2']);
});
