// The egress resources (listener chains, egress route configs, STRICT_DNS and
// ORIGINAL_DST clusters) pass Envoy's own validation rules.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bookbuyerEgresses, egressMesh } from '../support/envoy/egress-fixtures.js';
import { fetchSidecarConfig } from '../support/envoy/fetch.js';
import { generationContext, proxyFor } from '../support/envoy/mesh.js';
import { encodeResources, validateWithEnvoy } from '../support/envoy-validate.js';

test("egress resources pass Envoy's validation rules", async () => {
  assert.ok(bookbuyerEgresses().length > 0);
  const mesh = egressMesh();
  const s = fetchSidecarConfig(proxyFor(mesh, 'bookbuyer-1'), generationContext(mesh));
  const all = [...s.listeners, ...s.routes, ...s.clusters];
  const names = all.map((r) => r.name);
  for (const n of ['rds-egress.80', 'api.example.com:80', 'passthrough-outbound'])
    assert.ok(names.includes(n), `${n} missing: ${names.join()}`);
  assert.deepEqual(await validateWithEnvoy(encodeResources(all, 'egress bookbuyer')), []);
});
