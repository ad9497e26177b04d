import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AnyType, adsConfigSource, ExtName, socketAddress, typed } from '../../pkg/envoy/common/xds.js';
import { type Resource, TypeUrl } from '../../pkg/envoy/types.js';
import { encodeResource } from '../../pkg/xds/cache/encoded.js';
import { encodeDeltaDiscoveryResponse } from '../../pkg/xds/server/delta-codec.js';
import { encodeDiscoveryResponse } from '../../pkg/xds/server/service.js';
import { addressMarker, decodeDeltaEnvelope, decodeEnvelope, FactsCache } from './xds-decode.js';

const cluster: Resource = {
  name: 'bench-1/svc-1|8080',
  typeUrl: TypeUrl.Cluster,
  message: {
    name: 'bench-1/svc-1|8080',
    type: 'EDS',
    eds_cluster_config: { eds_config: adsConfigSource() },
    transport_socket: {
      name: ExtName.Tls,
      typed_config: typed(AnyType.UpstreamTlsContext, {
        common_tls_context: {
          tls_certificate_sds_secret_configs: [
            { name: 'service-cert:bench-2/svc-2', sds_config: adsConfigSource() },
          ],
          validation_context_sds_secret_config: {
            name: 'root-cert-for-mtls-outbound:bench-1/svc-1',
            sds_config: adsConfigSource(),
          },
        },
      }),
    },
  },
};

function cla(ip: string): Resource {
  return {
    name: 'bench-1/svc-1|8080',
    typeUrl: TypeUrl.ClusterLoadAssignment,
    message: {
      cluster_name: 'bench-1/svc-1|8080',
      endpoints: [{ lb_endpoints: [{ endpoint: { address: socketAddress(ip, 8080) } }] }],
    },
  };
}

test('envelope fields and resources come back as sent', () => {
  const bytes = encodeDiscoveryResponse({
    versionInfo: 'v7',
    resources: [encodeResource(cluster)],
    typeUrl: TypeUrl.Cluster,
    nonce: 'n3',
    controlPlaneId: 'skein',
  });
  const env = decodeEnvelope(bytes);
  assert.equal(env.versionInfo, 'v7');
  assert.equal(env.typeUrl, TypeUrl.Cluster);
  assert.equal(env.nonce, 'n3');
  assert.equal(env.resources.length, 1);
  assert.equal(env.resources[0]?.typeUrl, TypeUrl.Cluster);
});

test('delta envelope: versions, names, resources and removals come back as sent', () => {
  const encoded = encodeResource(cluster);
  const env = decodeDeltaEnvelope(
    encodeDeltaDiscoveryResponse({
      systemVersionInfo: 'sys',
      resources: [encoded],
      removedResources: ['gone'],
      typeUrl: TypeUrl.Cluster,
      nonce: 'n4',
      controlPlaneId: 'skein',
    }),
  );
  assert.deepEqual(
    [env.systemVersionInfo, env.typeUrl, env.nonce, env.removed],
    ['sys', TypeUrl.Cluster, 'n4', ['gone']],
  );
  const r = env.resources[0];
  assert.equal(env.resources.length, 1);
  assert.deepEqual([r?.name, r?.version, r?.typeUrl], [cluster.name, encoded.hash, TypeUrl.Cluster]);
  assert.equal(new FactsCache().of(r ?? { typeUrl: '', value: new Uint8Array() }).name, cluster.name);
});

test('facts: EDS cluster and secrets a cluster references, decoded once per content', () => {
  const facts = new FactsCache();
  const env = decodeEnvelope(
    encodeDiscoveryResponse({
      versionInfo: '1',
      resources: [encodeResource(cluster)],
      typeUrl: TypeUrl.Cluster,
      nonce: 'a',
      controlPlaneId: 'skein',
    }),
  );
  const res = env.resources[0];
  assert.ok(res);
  const f = facts.of(res);
  assert.equal(f.name, 'bench-1/svc-1|8080');
  assert.deepEqual(f.edsClusters, ['bench-1/svc-1|8080']);
  assert.deepEqual([...f.secrets].sort(), [
    'root-cert-for-mtls-outbound:bench-1/svc-1',
    'service-cert:bench-2/svc-2',
  ]);
  facts.of({ typeUrl: res.typeUrl, value: Uint8Array.from(res.value) });
  assert.equal(facts.decoded, 1);
  const claFacts = facts.of(
    decodeEnvelope(
      encodeDiscoveryResponse({
        versionInfo: '1',
        resources: [encodeResource(cla('127.11.0.1'))],
        typeUrl: TypeUrl.ClusterLoadAssignment,
        nonce: 'b',
        controlPlaneId: 'skein',
      }),
    ).resources[0] ?? { typeUrl: '', value: new Uint8Array() },
  );
  assert.equal(claFacts.name, 'bench-1/svc-1|8080');
});

test('address marker: found for its IP only, not for a longer IP with the same prefix', () => {
  const withIp = Buffer.from(encodeResource(cla('127.11.0.1')).framed);
  const longer = Buffer.from(encodeResource(cla('127.11.0.12')).framed);
  assert.ok(withIp.includes(addressMarker('127.11.0.1')));
  assert.ok(!longer.includes(addressMarker('127.11.0.1')));
  assert.ok(longer.includes(addressMarker('127.11.0.12')));
});
