import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bookstoreMesh, generationContext, proxyFor } from '../../../test/support/envoy/mesh.js';
import { resourceProblems } from '../../../test/support/envoy/roundtrip.js';
import type { MeshView } from '../../catalog/types.js';
import { decodeMessage, encodeMessage } from '../../xds/proto/codec.js';
import { TypeUrl } from '../types.js';
import { proxylessClusterGenerator } from './proxyless.js';

const spiffe = (sa: string) => `spiffe://cluster.local/ns/bookstore/sa/${sa}`;

function clusters(mesh: MeshView, requested?: string[]) {
  const proxy = proxyFor(mesh, 'bookbuyer-1', 'grpc');
  return proxylessClusterGenerator.generate(proxy, generationContext(mesh), requested && new Set(requested));
}

test('requested clusters that exist: EDS over ADS, round robin, mTLS pinned to the backing identities', () => {
  const out = clusters(bookstoreMesh(), [
    'bookstore/bookstore-v1|14001',
    'bookstore/bookstore|14001',
    'bookstore/bookstore|9999',
    'bookstore/nope|14001',
    'garbage',
  ]);
  assert.deepEqual(
    out.map((r) => r.name),
    ['bookstore/bookstore-v1|14001', 'bookstore/bookstore|14001'],
  );
  assert.deepEqual(resourceProblems(out), []);
  const [v1, apex] = out.map((r) =>
    decodeMessage(TypeUrl.Cluster, encodeMessage(TypeUrl.Cluster, r.message)),
  );
  assert.deepEqual(v1, {
    name: 'bookstore/bookstore-v1|14001',
    type: 'EDS',
    eds_cluster_config: { eds_config: { ads: {}, resource_api_version: 'V3' } },
    lb_policy: 'ROUND_ROBIN',
    transport_socket: {
      name: 'envoy.transport_sockets.tls',
      typed_config: {
        '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext',
        common_tls_context: {
          tls_certificate_provider_instance: { instance_name: 'default' },
          validation_context: {
            ca_certificate_provider_instance: { instance_name: 'default' },
            match_subject_alt_names: [{ exact: spiffe('bookstore-v1') }],
          },
        },
      },
    },
  });
  // The apex is served by both versions' pods: either identity is acceptable.
  const sans = JSON.stringify(apex);
  assert.ok(sans.includes(spiffe('bookstore-v1')) && sans.includes(spiffe('bookstore-v2')));
});

test('without a request list every service port has a cluster', () => {
  assert.deepEqual(
    clusters(bookstoreMesh(), undefined).map((r) => r.name),
    [
      'bookstore/bookstore-v1|14001',
      'bookstore/bookstore-v2|14001',
      'bookstore/bookstore|14001',
      'bookwarehouse/bookwarehouse|14001',
      'bookwarehouse/bookwarehouse|3306',
      'bookwarehouse/mysql|3306',
    ],
  );
});
