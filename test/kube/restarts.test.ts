// Restarts of the API server and of etcd, on a cluster of this file's own (a
// shared one cannot be restarted under the other files' feet): the test
// cluster comes back on the same addresses with its data, and KubeRegistry
// ends equal to the server after changes made right after each restart.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ApiException, CoreV1Api, CustomObjectsApi, DiscoveryV1Api } from '@kubernetes/client-node';
import { LABEL_MONITORED_BY } from '../../pkg/mesh/constants.js';
import type { KubeRegistry } from '../../pkg/registry/kube/registry.js';
import { ProblemCollector } from '../../pkg/registry/problems.js';
import { TestCluster } from '../support/cluster.js';
import { createNamespace, createPod, markPodRunning, waitFor } from '../support/kube.js';
import {
  eventually,
  prepareMeshCluster,
  SMI_ACCESS,
  testKubeRegistry,
  trafficTargetBody,
} from '../support/kube-registry-fixture.js';

const MESH = 'skein-restarts';
const CP = 'skein-system';
const SHOP = 'shop';

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

describe('API server and etcd restarts', { timeout: 180_000 }, () => {
  let cluster: TestCluster;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let discovery: DiscoveryV1Api;
  let registry: KubeRegistry;

  before(async () => {
    cluster = await TestCluster.start();
    const kc = cluster.kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    custom = kc.makeApiClient(CustomObjectsApi);
    discovery = kc.makeApiClient(DiscoveryV1Api);
    await prepareMeshCluster(kc, core, CP);
    await createNamespace(core, SHOP, { [LABEL_MONITORED_BY]: MESH });
    await core.createNamespacedServiceAccount({ namespace: SHOP, body: { metadata: { name: 'web' } } });
    await core.createNamespacedService({
      namespace: SHOP,
      body: {
        metadata: { name: 'web' },
        spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
      },
    });
    for (const [name, ip] of [
      ['web-2', '10.244.1.2'],
      ['web-3', '10.244.1.3'],
    ] as const) {
      await createPod(core, { namespace: SHOP, name, labels: { app: 'web' }, ports: [8080] });
      await markPodRunning(core, SHOP, name, ip);
    }
    await custom.createNamespacedCustomObject({
      ...SMI_ACCESS,
      namespace: SHOP,
      body: trafficTargetBody(SHOP, 'ok'),
    });
    registry = testKubeRegistry({
      kubeConfig: kc,
      meshName: MESH,
      controlPlaneNamespace: CP,
      reporter: new ProblemCollector(),
    });
    await registry.start();
    await eventually('store equal to the server before any restart', async () => {
      const server = await serverState();
      assert.equal(server.addresses.length, 2, 'both pods published');
      assert.deepEqual(storeState(), server);
    });
  });
  after(async () => {
    await registry?.stop();
    await cluster?.stop();
  });

  test('after an API server restart and changes right after it, the store equals the server', async (t) => {
    await cluster.stopApiServer();
    await new Promise((r) => setTimeout(r, 500));
    await cluster.startApiServer();
    // Right after: remove a policy, add one, change endpoints.
    await custom.deleteNamespacedCustomObject({ ...SMI_ACCESS, namespace: SHOP, name: 'ok' });
    await custom.createNamespacedCustomObject({
      ...SMI_ACCESS,
      namespace: SHOP,
      body: trafficTargetBody(SHOP, 'ok-2'),
    });
    await core.deleteNamespacedPod({ namespace: SHOP, name: 'web-2', gracePeriodSeconds: 0 });
    await createPod(core, { namespace: SHOP, name: 'web-4', labels: { app: 'web' }, ports: [8080] });
    await markPodRunning(core, SHOP, 'web-4', '10.244.1.4');
    await waitFor('server-side endpoints', async () => {
      const state = await serverState();
      return state.addresses.join() === '10.244.1.3,10.244.1.4';
    });
    await eventually(
      'store equal to the server',
      async () => {
        const server = await serverState();
        assert.deepEqual(storeState(), server);
      },
      60_000,
    );
    const stats = registry.stats();
    for (const [type, s] of Object.entries(stats))
      assert.ok(s.watches >= 2, `${type}: watch re-opened after the restart (${JSON.stringify(s)})`);
    t.diagnostic(`relists after 410: ${Object.values(stats).reduce((n, s) => n + s.expired, 0)}`);
  });

  test('after an etcd restart, changes made right after it reach the store', async () => {
    await cluster.stopEtcd();
    await new Promise((r) => setTimeout(r, 500));
    await cluster.startEtcd();
    await waitFor(
      'API server writable again',
      async () => {
        try {
          await custom.createNamespacedCustomObject({
            ...SMI_ACCESS,
            namespace: SHOP,
            body: trafficTargetBody(SHOP, 'after-etcd'),
          });
          return true;
        } catch (err) {
          if (err instanceof ApiException && err.code === 409) return true;
          return false;
        }
      },
      60_000,
    );
    await core.deleteNamespacedService({ namespace: SHOP, name: 'web' });
    await eventually(
      'store equal to the server',
      async () => {
        const server = await serverState();
        assert.deepEqual(storeState(), server);
      },
      60_000,
    );
    assert.ok(registry.store.keys('TrafficTarget').includes(`${SHOP}/after-etcd`));
    assert.ok(!registry.store.keys('Service').includes(`${SHOP}/web`));
  });

  test('the API server and etcd restart on the same addresses and keep the data', async () => {
    const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'keep' }, data: { k: 'v' } };
    assert.equal((await cluster.request('POST', '/api/v1/namespaces/default/configmaps', cm)).status, 201);

    await cluster.stopApiServer();
    await assert.rejects(cluster.get('/readyz'), /ECONNREFUSED/);
    await cluster.startApiServer();
    assert.equal((await cluster.get('/api/v1/namespaces/default/configmaps/keep')).status, 200);

    await cluster.stopEtcd();
    await cluster.startEtcd();
    // A write succeeds only once the API server reaches the restarted etcd.
    await waitFor('a write after the etcd restart', async () => {
      const again = { ...cm, metadata: { name: 'after-etcd-restart' } };
      return (await cluster.request('POST', '/api/v1/namespaces/default/configmaps', again)).status === 201;
    });
    const res = await cluster.get('/api/v1/namespaces/default/configmaps/keep');
    assert.equal(res.status, 200);
    assert.match(res.body, /"k":"v"/);
  });

  /** What the API server holds for the shop namespace, in the store's terms. */
  async function serverState() {
    const [services, pods, tts, slices] = await Promise.all([
      core.listNamespacedService({ namespace: SHOP }),
      core.listNamespacedPod({ namespace: SHOP }),
      custom.listNamespacedCustomObject({ ...SMI_ACCESS, namespace: SHOP }),
      discovery.listNamespacedEndpointSlice({ namespace: SHOP }),
    ]);
    const items = isRecord(tts) && Array.isArray(tts['items']) ? tts['items'] : [];
    return {
      services: services.items.map((s) => `${SHOP}/${s.metadata?.name}`).sort(),
      pods: pods.items.map((p) => `${SHOP}/${p.metadata?.name}`).sort(),
      trafficTargets: items
        .map((o) =>
          isRecord(o) && isRecord(o['metadata']) ? `${SHOP}/${String(o['metadata']['name'])}` : '',
        )
        .sort(),
      addresses: slices.items
        .flatMap((s) =>
          (s.endpoints ?? []).filter((e) => e.conditions?.ready === true).flatMap((e) => e.addresses),
        )
        .sort(),
    };
  }

  function storeState() {
    const inShop = (k: string) => k.startsWith(`${SHOP}/`);
    return {
      services: registry.store.keys('Service').filter(inShop).sort(),
      pods: registry.store.keys('Pod').filter(inShop).sort(),
      trafficTargets: registry.store.keys('TrafficTarget').filter(inShop).sort(),
      addresses: registry.store
        .list('EndpointSlice')
        .filter((s) => s.metadata.namespace === SHOP)
        .flatMap((s) =>
          (s.endpoints ?? []).filter((e) => e.conditions?.ready === true).flatMap((e) => e.addresses),
        )
        .sort(),
    };
  }
});
