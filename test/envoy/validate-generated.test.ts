// Everything the generators produce for the shared bookstore test mesh — every
// pod, as an Envoy sidecar and as a proxyless gRPC workload (whose resources
// are Envoy types too), in every mode of bookstoreVariants (SMI, permissive,
// TCP split, two outbound TCP ports) — passes Envoy's own validation rules
// (go-control-plane's ValidateAll, nested Anys included).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { MeshView, ProxyContext } from '../../pkg/catalog/types.js';
import { meshGenerators } from '../../pkg/envoy/generators.js';
import { type GenerationContext, type Resource, TypeUrl } from '../../pkg/envoy/types.js';
import { referencesOf } from '../support/envoy/crossref.js';
import { fetchSidecarConfig } from '../support/envoy/fetch.js';
import { ingressObjects } from '../support/envoy/ingress.js';
import {
  bookstoreVariants,
  generationContext,
  POD_NAMES,
  proxyFor,
  storeOf,
  viewOf,
} from '../support/envoy/mesh.js';
import { type EncodedResource, encodeResources, validateWithEnvoy } from '../support/envoy-validate.js';

/** A proxyless client's view: every listener and cluster, then the routes and endpoints they name. */
function proxylessConfig(proxy: ProxyContext, ctx: GenerationContext): Resource[] {
  const gen = meshGenerators();
  const run = (t: TypeUrl, requested?: ReadonlySet<string>) =>
    gen.get(t)?.generate(proxy, ctx, requested) ?? [];
  const listeners = run(TypeUrl.Listener);
  const clusters = run(TypeUrl.Cluster);
  const routes = run(TypeUrl.RouteConfiguration, referencesOf(listeners).routes);
  const endpoints = run(TypeUrl.ClusterLoadAssignment, referencesOf(clusters).edsClusters);
  return [...listeners, ...routes, ...clusters, ...endpoints];
}

test("every generated resource of every pod passes Envoy's validation rules", async () => {
  const encoded: EncodedResource[] = [];
  const counts = { sidecar: 0, grpc: 0 };
  const ingressRoutes = new Set<string>();
  // With IngressBackends and Ingresses: http and https ingress chains and their route configs.
  const withIngress: [string, MeshView] = ['smi+ingress', viewOf(storeOf(ingressObjects()))];
  for (const [mode, mesh] of [...bookstoreVariants(), withIngress]) {
    const ctx = generationContext(mesh);
    for (const pod of POD_NAMES) {
      const s = fetchSidecarConfig(proxyFor(mesh, pod), ctx);
      const sidecar = [...s.listeners, ...s.routes, ...s.clusters, ...s.endpoints, ...s.secrets];
      const proxyless = proxylessConfig(proxyFor(mesh, pod, 'grpc'), ctx);
      counts.sidecar += sidecar.length;
      for (const r of s.routes) if (r.name.startsWith('rds-ingress.')) ingressRoutes.add(r.name);
      counts.grpc += proxyless.length;
      encoded.push(...encodeResources(sidecar, `${mode} ${pod} sidecar`));
      encoded.push(...encodeResources(proxyless, `${mode} ${pod} grpc`));
    }
  }
  // Every type of each kind is present, so none escapes the check.
  const types = new Set(encoded.map((e) => `${e.label?.split(' ').at(-1)} ${e.typeUrl}`));
  for (const t of Object.values(TypeUrl)) assert.ok(types.has(`sidecar ${t}`), `no sidecar ${t}`);
  for (const t of [
    TypeUrl.Listener,
    TypeUrl.RouteConfiguration,
    TypeUrl.Cluster,
    TypeUrl.ClusterLoadAssignment,
  ])
    assert.ok(types.has(`grpc ${t}`), `no proxyless ${t}`);
  assert.ok(counts.sidecar > 100 && counts.grpc > 50, JSON.stringify(counts));
  assert.ok(ingressRoutes.has('rds-ingress.14001.https'), [...ingressRoutes].join(', '));
  assert.deepEqual(await validateWithEnvoy(encoded), []);
});
