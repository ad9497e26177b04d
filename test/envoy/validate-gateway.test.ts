// The ingress gateway's resources (lds/rds/cds/gateway.ts, its secrets in
// sds.ts) pass Envoy's own validation rules: both listeners (the TLS one with
// a chain per Secret), both route configurations (403 direct responses in SMI
// mode, weighted clusters, the wildcard :authority regex, require_tls),
// the clusters and the TLS Secret, in SMI and permissive mode.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fetchByKind, gatewayContext, gatewayObjects, gatewayProxy } from '../support/envoy/gateway.js';
import { storeOf, viewOf } from '../support/envoy/mesh.js';
import { type EncodedResource, encodeResources, validateWithEnvoy } from '../support/envoy-validate.js';

test("ingress gateway listeners, routes, clusters and secrets pass Envoy's validation rules", async () => {
  const encoded: EncodedResource[] = [];
  const seen = new Set<string>();
  for (const permissive of [false, true]) {
    const mesh = viewOf(storeOf(gatewayObjects({ permissive })));
    const ctx = gatewayContext(mesh, ['bookstore/shop-tls', 'bookwarehouse/warehouse-tls']);
    const s = fetchByKind(gatewayProxy(mesh), ctx);
    const all = [...s.listeners, ...s.routes, ...s.clusters, ...s.endpoints, ...s.secrets];
    for (const r of all) seen.add(r.name);
    const json = JSON.stringify(all.map((r) => r.message));
    // What this test is for is actually in the input.
    assert.match(json, /"server_names"/);
    assert.match(json, /"safe_regex"/);
    assert.match(json, /"require_tls"/);
    assert.match(json, /"weighted_clusters"/);
    if (!permissive) assert.match(json, /"direct_response"/);
    encoded.push(...encodeResources(all, `gateway permissive=${permissive}`));
  }
  for (const n of [
    'gateway-http',
    'gateway-https',
    'bookstore/bookstore-v1|14001',
    'bookwarehouse/bookwarehouse|14001',
    'ingress-tls:bookstore/shop-tls',
    'ingress-tls:bookwarehouse/warehouse-tls',
    'service-cert:self',
  ])
    assert.ok(seen.has(n), `${n} missing: ${[...seen].join()}`);
  assert.deepEqual(await validateWithEnvoy(encoded), []);
});
