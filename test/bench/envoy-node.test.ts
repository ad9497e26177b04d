import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TypeUrl } from '../../pkg/envoy/types.js';
import { messageType } from '../../pkg/xds/proto/root.js';
import {
  decodeDeltaDiscoveryRequest,
  encodeDeltaDiscoveryRequest,
} from '../../pkg/xds/server/delta-codec.js';
import { decodeDiscoveryRequest, encodeDiscoveryRequest } from '../../pkg/xds/server/service.js';
import { parseRequest } from '../support/stub-ads.js';
import { NODE_TYPE, nodeField, readNodeFixture, sharedNodeBytes } from './envoy-node.js';

const fixture = readNodeFixture();
const CN = '0b8a4c3e-8d1f-4c3a-9a53-2f2d7a1f6e10.sidecar.sa-1.ns-1.cluster.local';

test('the fixture is the Node Envoy 1.40.0 sent, byte for byte once re-encoded', () => {
  assert.equal(fixture.envoyVersion, '1.40.0');
  const type = messageType(NODE_TYPE);
  assert.equal(type.encode(type.fromObject(fixture.node)).finish().length, fixture.capturedBytes);
  assert.equal(fixture.node['user_agent_name'], 'envoy');
  const extensions = fixture.node['extensions'];
  assert.ok(
    Array.isArray(extensions) && extensions.length > 100,
    'the extension list is what makes it large',
  );
});

test("a proxy's node: its own id and cluster, the rest of Envoy's; the controller's decoder reads both", (t) => {
  const shared = sharedNodeBytes(fixture);
  const first = { versionInfo: '', resourceNames: [], typeUrl: TypeUrl.Cluster, responseNonce: '' };
  const bare = Buffer.from(encodeDiscoveryRequest(first));
  const full = Buffer.concat([bare, nodeField(2, shared, CN, 'sa-1.ns-1')]);
  const minimal = Buffer.concat([bare, nodeField(2, new Uint8Array(), CN, 'sa-1.ns-1')]);

  assert.deepEqual(decodeDiscoveryRequest(full).node, { id: CN, cluster: 'sa-1.ns-1' });
  assert.deepEqual(decodeDiscoveryRequest(minimal).node, { id: CN, cluster: 'sa-1.ns-1' });
  const node = parseRequest('sotw', 1, full).node;
  assert.ok(node);
  const type = messageType(NODE_TYPE);
  const decoded: Record<string, unknown> = type.toObject(type.decode(node));
  assert.equal(decoded['id'], CN);
  const count = (v: unknown): number => (Array.isArray(v) ? v.length : -1);
  assert.equal(count(decoded['extensions']), count(fixture.node['extensions']));
  // The fixture's own id and cluster are replaced, not sent as well (all lengths fit one varint byte).
  const length = (v: unknown): number => Buffer.byteLength(String(v));
  assert.equal(
    node.length,
    fixture.capturedBytes -
      length(fixture.node['id']) -
      length(fixture.node['cluster']) +
      length(CN) +
      length('sa-1.ns-1'),
  );
  assert.ok(full.length > 60_000 && minimal.length < 200, `${full.length} / ${minimal.length}`);

  const delta = {
    typeUrl: TypeUrl.Cluster,
    resourceNamesSubscribe: [],
    resourceNamesUnsubscribe: [],
    initialResourceVersions: new Map<string, string>(),
    responseNonce: '',
  };
  const deltaFull = Buffer.concat([
    Buffer.from(encodeDeltaDiscoveryRequest(delta)),
    nodeField(1, shared, CN, 'sa-1.ns-1'),
  ]);
  assert.deepEqual(decodeDeltaDiscoveryRequest(deltaFull).node, { id: CN, cluster: 'sa-1.ns-1' });
  t.diagnostic(
    `first CDS request: ${full.length} bytes with the Envoy node, ${minimal.length} with id and cluster only, ${bare.length} without a node`,
  );
});
