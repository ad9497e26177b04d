import assert from 'node:assert/strict';
import { test } from 'node:test';
import { meshConfig } from '../../../test/support/catalog-fixtures.js';
import { gatewayContext, gatewayObjects, gatewayProxy } from '../../../test/support/envoy/gateway.js';
import {
  bookstoreObjects,
  fakeSecrets,
  type PodName,
  proxyFor,
  storeOf,
} from '../../../test/support/envoy/mesh.js';
import { at, list, named } from '../../../test/support/envoy/pick.js';
import type { MeshView } from '../../catalog/types.js';
import { buildMeshView } from '../../catalog/view.js';
import { DEFAULT_MESH_NAME } from '../../mesh/constants.js';
import type { AnyObject, MeshConfigSpec, MeshTracing } from '../../model/objects.js';
import { gatewayCdsGenerator } from '../cds/gateway.js';
import { sidecarCdsGenerator } from '../cds/sidecar.js';
import { DiscoveryType, ZipkinEndpointVersion } from '../common/enums.js';
import { TRACING_CLUSTER } from '../names.js';
import type { ProtoValue } from '../types.js';
import { gatewayLdsGenerator } from './gateway.js';
import { sidecarLdsGenerator } from './sidecar.js';

/** The one address of the collector cluster. */
function collectorAddress(cluster: Parameters<typeof at>[0]): ReturnType<typeof at> {
  return at(
    cluster,
    'load_assignment',
    'endpoints',
    0,
    'lb_endpoints',
    0,
    'endpoint',
    'address',
    'socket_address',
  );
}

const withMeshConfig = (spec: MeshConfigSpec, base: AnyObject[] = bookstoreObjects()): AnyObject[] => [
  ...base.filter((o) => o.kind !== 'MeshConfig'),
  meshConfig(DEFAULT_MESH_NAME, 'skein-system', spec),
];
const tracingOn = (t: MeshTracing): MeshConfigSpec => ({
  observability: { tracing: { enable: true, ...t } },
});
const viewWith = (spec: MeshConfigSpec) =>
  buildMeshView(storeOf(withMeshConfig(spec)), { meshName: DEFAULT_MESH_NAME });

function generate(mesh: MeshView, pod: PodName) {
  const proxy = proxyFor(mesh, pod);
  const ctx = { mesh, secrets: fakeSecrets('all') };
  return {
    listeners: sidecarLdsGenerator.generate(proxy, ctx, undefined),
    clusters: sidecarCdsGenerator.generate(proxy, ctx, undefined),
  };
}

/** The HCMs of a listener, every chain. */
function hcms(listener: ProtoValue | undefined): (ProtoValue | undefined)[] {
  const chains = [...list(listener, 'filter_chains'), at(listener, 'default_filter_chain')];
  return chains
    .flatMap((c) => list(c, 'filters'))
    .filter((f) => at(f, 'name') === 'envoy.filters.network.http_connection_manager')
    .map((f) => at(f, 'typed_config'));
}

test('off by default: no HCM traces and there is no collector cluster', () => {
  for (const spec of [{}, { observability: { tracing: { enable: false, address: 'zipkin.tracing' } } }]) {
    const { listeners, clusters } = generate(viewWith(spec), 'bookstore-v1-1');
    for (const l of listeners) for (const h of hcms(l.message)) assert.equal(at(h, 'tracing'), undefined);
    assert.ok(!clusters.some((c) => c.name === TRACING_CLUSTER));
  }
});

test('zipkin: every HCM of both listeners reports to the collector cluster, which resolves the name', () => {
  const mesh = viewWith(tracingOn({ address: 'zipkin.tracing.svc.cluster.local', sampling: 12.5 }));
  const { listeners, clusters } = generate(mesh, 'bookstore-v1-1');
  for (const name of ['outbound-listener', 'inbound-listener']) {
    const found = hcms(named(listeners, name));
    assert.ok(found.length > 0, name);
    for (const h of found) {
      assert.deepEqual(at(h, 'tracing', 'random_sampling'), { value: 12.5 });
      assert.equal(at(h, 'tracing', 'provider', 'name'), 'envoy.tracers.zipkin');
      const cfg = at(h, 'tracing', 'provider', 'typed_config');
      assert.equal(at(cfg, '@type'), 'type.googleapis.com/envoy.config.trace.v3.ZipkinConfig');
      assert.equal(at(cfg, 'collector_cluster'), TRACING_CLUSTER);
      assert.equal(at(cfg, 'collector_endpoint'), '/api/v2/spans');
      assert.equal(at(cfg, 'collector_endpoint_version'), ZipkinEndpointVersion.HTTP_JSON);
      assert.equal(at(cfg, 'collector_hostname'), 'zipkin.tracing.svc.cluster.local');
      // Request ids stay Envoy's default (generated when absent): never turned off.
      assert.equal(at(h, 'generate_request_id'), undefined);
    }
  }
  const cluster = named(clusters, TRACING_CLUSTER);
  assert.equal(at(cluster, 'type'), DiscoveryType.LOGICAL_DNS);
  assert.deepEqual(collectorAddress(cluster), {
    address: 'zipkin.tracing.svc.cluster.local',
    port_value: 9411,
  });
});

test('opentelemetry: OTLP over gRPC to an HTTP/2 collector cluster, named after the proxy; an IPv4 address is STATIC', () => {
  const mesh = viewWith(tracingOn({ provider: 'opentelemetry', address: '10.1.2.3' }));
  const { listeners, clusters } = generate(mesh, 'bookbuyer-1');
  const h = hcms(named(listeners, 'outbound-listener'))[0];
  assert.equal(at(h, 'tracing', 'provider', 'name'), 'envoy.tracers.opentelemetry');
  const cfg = at(h, 'tracing', 'provider', 'typed_config');
  assert.equal(at(cfg, 'grpc_service', 'envoy_grpc', 'cluster_name'), TRACING_CLUSTER);
  assert.equal(at(cfg, 'service_name'), 'bookbuyer.bookbuyer');
  assert.deepEqual(at(h, 'tracing', 'random_sampling'), { value: 100 });
  const cluster = named(clusters, TRACING_CLUSTER);
  assert.equal(at(cluster, 'type'), DiscoveryType.STATIC);
  assert.equal(at(collectorAddress(cluster), 'port_value'), 4317);
  assert.ok(at(cluster, 'typed_extension_protocol_options'), 'gRPC needs HTTP/2 upstream');
});

test('an unrelated MeshConfig change keeps listeners and cluster the same objects; a new sampling changes them', () => {
  const store = storeOf(withMeshConfig(tracingOn({ address: 'zipkin.tracing' })));
  const first = buildMeshView(store, { meshName: DEFAULT_MESH_NAME });
  const a = generate(first, 'bookbuyer-1');
  store.upsert(
    meshConfig(DEFAULT_MESH_NAME, 'skein-system', {
      observability: { tracing: { enable: true, address: 'zipkin.tracing' }, logLevel: 'debug' },
    }),
  );
  const second = buildMeshView(store, { meshName: DEFAULT_MESH_NAME, previous: first });
  const b = generate(second, 'bookbuyer-1');
  assert.equal(named(b.listeners, 'outbound-listener'), named(a.listeners, 'outbound-listener'));
  assert.equal(named(b.clusters, TRACING_CLUSTER), named(a.clusters, TRACING_CLUSTER));
  store.upsert(
    meshConfig(DEFAULT_MESH_NAME, 'skein-system', tracingOn({ address: 'zipkin.tracing', sampling: 0 })),
  );
  const third = buildMeshView(store, { meshName: DEFAULT_MESH_NAME, previous: second });
  const c = generate(third, 'bookbuyer-1');
  assert.notEqual(named(c.listeners, 'outbound-listener'), named(b.listeners, 'outbound-listener'));
  assert.deepEqual(at(hcms(named(c.listeners, 'outbound-listener'))[0], 'tracing', 'random_sampling'), {
    value: 0,
  });
});

test("the ingress gateway's HCM traces and its CDS carries the collector", () => {
  const mesh = buildMeshView(
    storeOf(withMeshConfig(tracingOn({ address: 'zipkin.tracing' }), gatewayObjects())),
    {
      meshName: DEFAULT_MESH_NAME,
    },
  );
  const proxy = gatewayProxy(mesh);
  const ctx = gatewayContext(mesh, []);
  const h = hcms(named(gatewayLdsGenerator.generate(proxy, ctx, undefined), 'gateway-http'))[0];
  assert.equal(at(h, 'tracing', 'provider', 'name'), 'envoy.tracers.zipkin');
  const clusters = gatewayCdsGenerator.generate(proxy, ctx, undefined);
  assert.ok(clusters.some((c) => c.name === TRACING_CLUSTER));
});
