import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  bookstoreMesh,
  bookstoreObjects,
  fakeSecrets,
  leftTheMesh,
  type PodName,
  proxyFor,
  storeOf,
  viewOf,
} from '../../../test/support/envoy/mesh.js';
import { at, list, named } from '../../../test/support/envoy/pick.js';
import type { RetryRule } from '../../catalog/retry.js';
import type { MeshView } from '../../catalog/types.js';
import { decodeMessage, encodeMessage } from '../../xds/proto/codec.js';
import type { Cluster } from '../api/envoy.js';
import { type ProtoValue, TypeUrl } from '../types.js';
import { sidecarCdsGenerator, withRetryBudget } from './sidecar.js';

function cds(mesh: MeshView, pod: PodName) {
  return sidecarCdsGenerator.generate(proxyFor(mesh, pod), { mesh, secrets: fakeSecrets('all') }, undefined);
}

test('bookbuyer: backend clusters of the split (even bookstore-v2), no apex cluster, no passthrough', () => {
  const clusters = cds(bookstoreMesh(), 'bookbuyer-1');
  assert.deepEqual(
    clusters.map((r) => r.name),
    ['blackhole', 'bookstore/bookstore-v1|14001', 'bookstore/bookstore-v2|14001'],
  );
  assert.deepEqual(named(clusters, 'bookstore/bookstore-v2|14001'), {
    name: 'bookstore/bookstore-v2|14001',
    type: 3, // EDS
    eds_cluster_config: { eds_config: { ads: {}, resource_api_version: 2 } },
    connect_timeout: { seconds: 1 },
    transport_socket: {
      name: 'envoy.transport_sockets.tls',
      typed_config: {
        '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext',
        common_tls_context: {
          tls_certificate_sds_secret_configs: [
            { name: 'service-cert:self', sds_config: { ads: {}, resource_api_version: 2 } },
          ],
          // The service's identities pinned here; the CA from the proxy's one trust-bundle secret.
          combined_validation_context: {
            default_validation_context: {
              match_typed_subject_alt_names: [
                { san_type: 3, matcher: { exact: 'spiffe://cluster.local/ns/bookstore/sa/bookstore-v2' } },
              ],
            },
            validation_context_sds_secret_config: {
              name: 'root-cert-for-mtls-outbound',
              sds_config: { ads: {}, resource_api_version: 2 },
            },
          },
        },
        sni: 'bookstore-v2.bookstore.svc.cluster.local',
      },
    },
  });
});

test('local clusters for every served port: HTTP/2 only for gRPC ports, idle connections closed before the app closes them', () => {
  const clusters = cds(bookstoreMesh(), 'bookwarehouse-1');
  assert.deepEqual(
    clusters.map((r) => r.name),
    [
      'blackhole',
      'bookwarehouse/bookwarehouse|13306|local',
      'bookwarehouse/bookwarehouse|14001|local',
      'bookwarehouse/mysql|3306',
    ],
  );
  const grpcLocal = named(clusters, 'bookwarehouse/bookwarehouse|14001|local');
  assert.equal(grpcLocal['type'], 0); // STATIC
  assert.deepEqual(
    at(grpcLocal, 'load_assignment', 'endpoints', 0, 'lb_endpoints', 0, 'endpoint', 'address'),
    {
      socket_address: { address: '127.0.0.1', port_value: 14001 },
    },
  );
  assert.deepEqual(
    at(
      grpcLocal,
      'typed_extension_protocol_options',
      'envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
    ),
    {
      '@type': 'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
      common_http_protocol_options: { idle_timeout: { seconds: 1, nanos: 0 } },
      explicit_http_config: { http2_protocol_options: {} },
    },
  );
  // TCP: no HTTP options; tcp_proxy would not read them.
  assert.equal(
    at(named(clusters, 'bookwarehouse/bookwarehouse|13306|local'), 'typed_extension_protocol_options'),
    undefined,
  );
  const httpLocal = named(cds(bookstoreMesh(), 'bookstore-v1-1'), 'bookstore/bookstore-v1|14001|local');
  assert.deepEqual(
    at(
      httpLocal,
      'typed_extension_protocol_options',
      'envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
    ),
    {
      '@type': 'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
      common_http_protocol_options: { idle_timeout: { seconds: 1, nanos: 0 } },
      explicit_http_config: { http_protocol_options: {} },
    },
  );
  const upstream = named(cds(bookstoreMesh(), 'bookstore-v2-1'), 'bookwarehouse/bookwarehouse|14001');
  assert.ok(at(upstream, 'typed_extension_protocol_options'));
});

test('bookthief: only the blackhole in SMI mode; permissive mode adds every service and the passthrough cluster', () => {
  // Where its outbound listener sends denied TCP (lds/sidecar.ts): no endpoints, so closed at once.
  assert.deepEqual(cds(bookstoreMesh(), 'bookthief-1'), [
    {
      name: 'blackhole',
      typeUrl: 'type.googleapis.com/envoy.config.cluster.v3.Cluster',
      message: { name: 'blackhole', type: 0, connect_timeout: { seconds: 1 } }, // STATIC
    },
  ]);
  const clusters = cds(bookstoreMesh({ permissive: true }), 'bookthief-1');
  const names = clusters.map((r) => r.name);
  assert.ok(!names.includes('blackhole'), 'permissive mode lets unmatched traffic out instead');
  assert.ok(names.includes('bookstore/bookstore-v1|14001'));
  assert.ok(!names.includes('bookstore/bookstore|14001'), 'split apex has no cluster of its own');
  assert.deepEqual(named(clusters, 'passthrough-outbound'), {
    name: 'passthrough-outbound',
    type: 4, // ORIGINAL_DST
    lb_policy: 6, // CLUSTER_PROVIDED
    connect_timeout: { seconds: 1 },
  });
});

test('a sidecar whose namespace left the mesh gets the passthrough cluster alone, in either mode', () => {
  for (const pod of ['bookbuyer-1', 'bookstore-v1-1'] as const) {
    const { mesh, proxy } = leftTheMesh(pod);
    const clusters = sidecarCdsGenerator.generate(proxy, { mesh, secrets: fakeSecrets('all') }, undefined);
    assert.deepEqual(
      clusters.map((r) => r.name),
      ['passthrough-outbound'],
    );
  }
});

test("a Retry's budget joins an UpstreamTrafficSetting's thresholds instead of replacing them", () => {
  const rule: RetryRule = {
    origin: 'Retry bookbuyer/to-bookstore',
    retryOn: ['5xx'],
    numRetries: 3,
    retriableStatusCodes: [],
    budget: { percent: 20, minConcurrency: 2 },
  };
  const limited: Cluster = {
    name: 'bookstore/bookstore|14001',
    circuit_breakers: { thresholds: [{ max_connections: { value: 10 }, max_requests: { value: 5 } }] },
  };
  assert.deepEqual(withRetryBudget(limited, rule).circuit_breakers, {
    thresholds: [
      {
        max_connections: { value: 10 },
        max_requests: { value: 5 },
        retry_budget: { budget_percent: { value: 20 }, min_retry_concurrency: { value: 2 } },
      },
    ],
  });
  // Without a budget, or without a Retry, the cluster is left as it was.
  const plain: Cluster = { name: 'c' };
  assert.equal(withRetryBudget(plain, { ...rule, budget: undefined }).circuit_breakers, undefined);
  assert.equal(withRetryBudget(plain, undefined).circuit_breakers, undefined);
});

/** The SAN matchers a cluster's upstream TLS context accepts the server with. */
function clusterSans(cluster: ProtoValue | undefined) {
  return list(
    cluster,
    'transport_socket',
    'typed_config',
    'common_tls_context',
    'combined_validation_context',
    'default_validation_context',
    'match_typed_subject_alt_names',
  );
}

test("every caller's cluster for a service is the same message, and the SANs follow the service's identities", () => {
  const mesh = bookstoreMesh({ permissive: true });
  const name = 'bookstore/bookstore-v1|14001';
  // Different identities calling: one message (the trust bundle is not in it).
  assert.equal(named(cds(mesh, 'bookbuyer-1'), name), named(cds(mesh, 'bookthief-1'), name));
  assert.deepEqual(clusterSans(named(cds(mesh, 'bookbuyer-1'), name)), [
    { san_type: 3, matcher: { exact: 'spiffe://cluster.local/ns/bookstore/sa/bookstore-v1' } },
  ]);
  assert.deepEqual(clusterSans(named(cds(mesh, 'bookbuyer-1'), 'bookwarehouse/bookwarehouse|14001')), [
    { san_type: 3, matcher: { exact: 'spiffe://cluster.local/ns/bookwarehouse/sa/bookwarehouse' } },
  ]);
});

test('a service without pods pins a SAN no certificate carries, rather than accepting any of the CA', () => {
  // An empty matcher list would accept every certificate the mesh CA signed.
  const mesh = viewOf(
    storeOf(
      bookstoreObjects({ permissive: true }).filter(
        (o) => !(o.kind === 'Pod' && o.metadata.name === 'bookstore-v2-1'),
      ),
    ),
  );
  assert.deepEqual(clusterSans(named(cds(mesh, 'bookbuyer-1'), 'bookstore/bookstore-v2|14001')), [
    { san_type: 3, matcher: { exact: 'spiffe://cluster.local/skein/no-identity/bookstore/bookstore-v2' } },
  ]);
});

test('the combined validation context survives encoding (protobufjs drops fields the loaded protos lack)', () => {
  const message = named(cds(bookstoreMesh(), 'bookbuyer-1'), 'bookstore/bookstore-v2|14001');
  const decoded = decodeMessage(TypeUrl.Cluster, encodeMessage(TypeUrl.Cluster, message));
  const combined = at(
    decoded,
    'transport_socket',
    'typed_config',
    'common_tls_context',
    'combined_validation_context',
  );
  assert.deepEqual(list(combined, 'default_validation_context', 'match_typed_subject_alt_names'), [
    { san_type: 'URI', matcher: { exact: 'spiffe://cluster.local/ns/bookstore/sa/bookstore-v2' } },
  ]);
  assert.equal(at(combined, 'validation_context_sds_secret_config', 'name'), 'root-cert-for-mtls-outbound');
});
