import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { silentLogger } from '../../logger/logger.js';
import { ProblemCollector } from '../problems.js';
import { LocalRegistry } from './registry.js';

function exampleDir(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (let dir = here; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'examples', 'bookstore');
    if (existsSync(candidate)) return candidate;
  }
  throw new Error('examples/bookstore not found');
}

it('examples/bookstore loads without problems', async () => {
  const reporter = new ProblemCollector();
  const registry = new LocalRegistry({
    dir: exampleDir(),
    reporter,
    logger: silentLogger(),
    meshName: 'skein',
  });
  try {
    await registry.start();
    const { store } = registry;
    assert.deepEqual(reporter.problems, []);
    assert.deepEqual(
      store
        .list('Namespace')
        .filter((n) => n.metadata.labels?.['skein.dev/monitored-by'] === 'skein')
        .map((n) => n.metadata.name)
        .sort(),
      ['bookbuyer', 'bookstore', 'bookthief', 'bookwarehouse'],
    );
    assert.deepEqual(store.keys('ServiceAccount').sort(), [
      'bookbuyer/bookbuyer',
      'bookstore/bookstore',
      'bookthief/bookthief',
      'bookwarehouse/bookwarehouse',
    ]);
    assert.deepEqual(store.keys('TrafficTarget').sort(), [
      'bookstore/bookbuyer-access-bookstore',
      'bookwarehouse/bookstore-access-bookwarehouse',
    ]);
    assert.deepEqual(store.get('TrafficSplit', 'bookstore/bookstore-split')?.spec.backends, [
      { service: 'bookstore-v1', weight: 75 },
      { service: 'bookstore-v2', weight: 25 },
    ]);
    assert.equal(store.get('MeshConfig', 'skein-system/skein')?.spec.traffic?.permissive, false);
    // Derived endpoints: the apex selects both versions; they listen on different
    // ports (one port per workload on a shared loopback), so Kubernetes-style
    // they land in two slices.
    const ips = (key: string): string[] | undefined =>
      store.get('EndpointSlice', key)?.endpoints.flatMap((e) => e.addresses);
    const apex = store
      .list('EndpointSlice')
      .filter((s) => s.metadata.labels?.['kubernetes.io/service-name'] === 'bookstore')
      .flatMap((s) => s.endpoints.flatMap((e) => e.addresses.map((a) => `${a}:${s.ports?.[0]?.port}`)))
      .sort();
    assert.deepEqual(apex, ['127.0.0.21:14021', '127.0.0.22:14022']);
    assert.deepEqual(ips('bookstore/bookstore-v1-local'), ['127.0.0.21']);
    assert.deepEqual(ips('bookstore/bookstore-v2-local'), ['127.0.0.22']);
    assert.deepEqual(ips('bookbuyer/bookbuyer-local'), ['127.0.0.11']);
    assert.deepEqual(ips('bookthief/bookthief-local'), ['127.0.0.12']);
    assert.deepEqual(ips('bookwarehouse/bookwarehouse-local'), ['127.0.0.31']);
    assert.deepEqual(store.get('EndpointSlice', 'bookstore/bookstore-v1-local')?.ports, [
      { name: 'grpc-api', port: 14021, protocol: 'TCP', appProtocol: 'grpc' },
    ]);
  } finally {
    await registry.stop();
  }
});
