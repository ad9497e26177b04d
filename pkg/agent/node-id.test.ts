import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { encodeDeltaDiscoveryRequest } from '../xds/server/delta-codec.js';
import { encodeDiscoveryRequest } from '../xds/server/service.js';
import { NODE_FIELD, nodeIdOf } from './node-id.js';

const CN = '6d1f3c58-0b0e-4c8a-9a43-3f6f0c2b9a11.grpc.buyer.shop.cluster.local';

describe('nodeIdOf', () => {
  it('reads node.id from a SotW request the way the server decodes it', () => {
    const bytes = encodeDiscoveryRequest({
      versionInfo: 'v1',
      resourceNames: ['a'],
      typeUrl: 'type.googleapis.com/envoy.config.listener.v3.Listener',
      responseNonce: '',
      node: { id: CN, cluster: 'skein' },
    });
    assert.equal(nodeIdOf(bytes, NODE_FIELD.sotw), CN);
  });

  it('reads node.id from a Delta request', () => {
    const bytes = encodeDeltaDiscoveryRequest({
      typeUrl: 'type.googleapis.com/envoy.config.cluster.v3.Cluster',
      resourceNamesSubscribe: ['x'],
      resourceNamesUnsubscribe: [],
      initialResourceVersions: new Map(),
      responseNonce: '',
      node: { id: CN, cluster: 'skein' },
    });
    assert.equal(nodeIdOf(bytes, NODE_FIELD.delta), CN);
  });

  it('is undefined without a node, empty for a node without id', () => {
    const noNode = encodeDiscoveryRequest({
      versionInfo: '',
      resourceNames: [],
      typeUrl: 't',
      responseNonce: '',
    });
    assert.equal(nodeIdOf(noNode, NODE_FIELD.sotw), undefined);
    const noId = encodeDiscoveryRequest({
      versionInfo: '',
      resourceNames: [],
      typeUrl: 't',
      responseNonce: '',
      node: { id: '', cluster: 'c' },
    });
    assert.equal(nodeIdOf(noId, NODE_FIELD.sotw) ?? '', '');
  });

  it('throws on bytes that are not a message', () => {
    assert.throws(() => nodeIdOf(Buffer.from([0x12, 0x40, 0x01]), NODE_FIELD.sotw));
  });
});
