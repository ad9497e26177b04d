// Retry policies (route retry_policy, cluster retry_budget) and access logs
// (stdout, JSON and text) pass Envoy's own validation rules.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_MESH_NAME } from '../../pkg/mesh/constants.js';
import type { AnyObject } from '../../pkg/model/objects.js';
import { meshConfig } from '../support/catalog-fixtures.js';
import { fetchSidecarConfig } from '../support/envoy/fetch.js';
import { bookstoreObjects, generationContext, proxyFor, storeOf, viewOf } from '../support/envoy/mesh.js';
import { bookbuyerRetries } from '../support/envoy/retry.js';
import { encodeResources, validateWithEnvoy } from '../support/envoy-validate.js';

for (const format of ['json', 'text'] as const) {
  test(`retry policies, retry budgets and ${format} access logs pass Envoy's validation rules`, async () => {
    const objects: AnyObject[] = [
      ...bookstoreObjects().filter((o) => o.kind !== 'MeshConfig'),
      meshConfig(DEFAULT_MESH_NAME, 'skein-system', { observability: { accessLog: { format } } }),
      ...bookbuyerRetries(),
    ];
    const mesh = viewOf(storeOf(objects));
    const s = fetchSidecarConfig(proxyFor(mesh, 'bookbuyer-1'), generationContext(mesh));
    const all = [...s.listeners, ...s.routes, ...s.clusters];
    const encoded = encodeResources(all, `retries bookbuyer ${format}`);
    const text = JSON.stringify(all.map((r) => r.message));
    for (const needle of [
      'retry_budget',
      'retriable_status_codes',
      'per_try_timeout',
      'envoy.access_loggers.stdout',
    ])
      assert.ok(text.includes(needle), needle);
    assert.deepEqual(await validateWithEnvoy(encoded), []);
  });
}
