// The ingress resources (lds/ingress.ts, rbac/ingress.ts, the ingress
// validation context in sds.ts) pass Envoy's own validation rules, in SMI
// and permissive mode.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fetchSidecarConfig } from '../support/envoy/fetch.js';
import { ingressObjects } from '../support/envoy/ingress.js';
import { generationContext, proxyFor, storeOf, viewOf } from '../support/envoy/mesh.js';
import { type EncodedResource, encodeResources, validateWithEnvoy } from '../support/envoy-validate.js';

test("ingress chains, RBAC and secrets pass Envoy's validation rules", async () => {
  const encoded: EncodedResource[] = [];
  let ingressChains = 0;
  for (const permissive of [false, true]) {
    const mesh = viewOf(storeOf(ingressObjects({ permissive })));
    const ctx = generationContext(mesh);
    for (const pod of ['bookstore-v1-1', 'bookwarehouse-1'] as const) {
      const s = fetchSidecarConfig(proxyFor(mesh, pod), ctx);
      const json = JSON.stringify(s.listeners);
      ingressChains += (json.match(/"name":"(ingress_|inbound-plaintext_)\d+/g) ?? []).length;
      encoded.push(
        ...encodeResources(
          [...s.listeners, ...s.routes, ...s.clusters, ...s.secrets],
          `${permissive} ${pod}`,
        ),
      );
    }
  }
  assert.ok(ingressChains >= 6, `ingress chains: ${ingressChains}`);
  assert.deepEqual(await validateWithEnvoy(encoded), []);
});
