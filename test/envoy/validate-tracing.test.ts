// Tracing (common/tracing.ts) passes Envoy's own validation rules: the HCMs'
// tracing with the Zipkin and the OpenTelemetry provider, and the collector
// cluster (LOGICAL_DNS for a name, STATIC for an address), on a sidecar and
// on the ingress gateway.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_MESH_NAME } from '../../pkg/mesh/constants.js';
import type { AnyObject, MeshTracing } from '../../pkg/model/objects.js';
import { meshConfig } from '../support/catalog-fixtures.js';
import { fetchSidecarConfig } from '../support/envoy/fetch.js';
import { fetchByKind, gatewayContext, gatewayObjects, gatewayProxy } from '../support/envoy/gateway.js';
import { bookstoreObjects, generationContext, proxyFor, storeOf, viewOf } from '../support/envoy/mesh.js';
import { encodeResources, validateWithEnvoy } from '../support/envoy-validate.js';

const cases: [string, MeshTracing][] = [
  ['zipkin', { enable: true, address: 'zipkin.tracing.svc.cluster.local', sampling: 12.5 }],
  ['opentelemetry', { enable: true, provider: 'opentelemetry', address: '10.1.2.3', sampling: 0 }],
];

for (const [provider, tracing] of cases) {
  test(`${provider} tracing on sidecar and gateway HCMs and its collector cluster pass Envoy's validation rules`, async () => {
    const withTracing = (objects: AnyObject[]): AnyObject[] => [
      ...objects.filter((o) => o.kind !== 'MeshConfig'),
      meshConfig(DEFAULT_MESH_NAME, 'skein-system', { observability: { tracing } }),
    ];
    const sidecarMesh = viewOf(storeOf(withTracing(bookstoreObjects())));
    const s = fetchSidecarConfig(proxyFor(sidecarMesh, 'bookbuyer-1'), generationContext(sidecarMesh));
    const gatewayMesh = viewOf(storeOf(withTracing(gatewayObjects())));
    const g = fetchByKind(gatewayProxy(gatewayMesh), gatewayContext(gatewayMesh, []));
    const sidecar = [...s.listeners, ...s.clusters];
    const gateway = [...g.listeners, ...g.clusters];
    const text = JSON.stringify([...sidecar, ...gateway].map((r) => r.message));
    // What this test is for is actually in the input.
    assert.ok(text.includes(`envoy.tracers.${provider}`), provider);
    assert.ok(text.includes('"skein-tracing"'));
    const encoded = [
      ...encodeResources(sidecar, `tracing ${provider} sidecar`),
      ...encodeResources(gateway, `tracing ${provider} gateway`),
    ];
    assert.deepEqual(await validateWithEnvoy(encoded), []);
  });
}
