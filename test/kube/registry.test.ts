// The Kubernetes registry against a real kube-apiserver, kube-controller-manager
// (EndpointSlice, namespace, GC, service-account controllers) and etcd: CRDs
// accepted and enforced, namespace membership by label, endpoints published by
// the real EndpointSlice controller, Events for invalid objects, and recovery
// from an API server restart.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  ApiException,
  CoreV1Api,
  CustomObjectsApi,
  DiscoveryV1Api,
  type KubeConfig,
} from '@kubernetes/client-node';
import { parse } from 'yaml';
import { buildMeshView, policyProblems } from '../../pkg/catalog/view.js';
import { ProblemLog } from '../../pkg/controller/problem-log.js';
import { silentLogger } from '../../pkg/logger/logger.js';
import { LABEL_MONITORED_BY } from '../../pkg/mesh/constants.js';
import { KubeApiError, KubeClient } from '../../pkg/registry/kube/client.js';
import { KubeEventReporter, storeLookup, teeReporter } from '../../pkg/registry/kube/events.js';
import { KubeRegistry } from '../../pkg/registry/kube/registry.js';
import { ProblemCollector } from '../../pkg/registry/problems.js';
import { crdDirectory } from '../../pkg/schema/crds.js';
import { acquireCluster, type ClusterEndpoint, TestCluster } from '../support/cluster.js';
import { createNamespace, createNode, createPod, markPodRunning, waitFor } from '../support/kube.js';
import { spawnNode } from '../support/processes.js';

const MESH = 'skein-e2e';
const suffix = randomBytes(3).toString('hex');
const CP = `skein-system-${suffix}`;
const SHOP = `shop-${suffix}`;

const SMI_ACCESS = { group: 'access.smi-spec.io', version: 'v1alpha3', plural: 'traffictargets' };
const SMI_SPLIT = { group: 'split.smi-spec.io', version: 'v1alpha4', plural: 'trafficsplits' };

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function trafficTarget(name: string, destNs: string): Record<string, unknown> {
  return {
    apiVersion: 'access.smi-spec.io/v1alpha3',
    kind: 'TrafficTarget',
    metadata: { name, namespace: SHOP },
    spec: {
      destination: { kind: 'ServiceAccount', name: 'web', namespace: destNs },
      sources: [{ kind: 'ServiceAccount', name: 'client', namespace: SHOP }],
      rules: [{ kind: 'TCPRoute', name: 'all' }],
    },
  };
}

async function eventually(what: string, check: () => void | Promise<void>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      await check();
      return;
    } catch (err) {
      if (Date.now() > deadline)
        throw new Error(`${what}: ${err instanceof Error ? err.message : String(err)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

describe('KubeRegistry against a real API server', { timeout: 180_000 }, () => {
  let endpoint: ClusterEndpoint;
  let kc: KubeConfig;
  let release: () => Promise<void>;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let discovery: DiscoveryV1Api;
  let registry: KubeRegistry;
  let events: KubeEventReporter;
  const problems = new ProblemCollector();

  before(async () => {
    ({ endpoint, kubeConfig: kc, release } = await acquireCluster());
    core = kc.makeApiClient(CoreV1Api);
    custom = kc.makeApiClient(CustomObjectsApi);
    discovery = kc.makeApiClient(DiscoveryV1Api);
    await applyCrds(kc);
    await createNode(core);
    await createNamespace(core, CP);
    events = new KubeEventReporter({ client: new KubeClient({ kubeConfig: kc }), logger: silentLogger() });
    registry = new KubeRegistry({
      kubeConfig: kc,
      meshName: MESH,
      controlPlaneNamespace: CP,
      reporter: teeReporter(problems, events),
      logger: silentLogger(),
      qps: 50,
      burst: 50,
      backoff: { initialMs: 100, maxMs: 2000 },
    });
    await registry.start();
  });
  after(async () => {
    await registry?.stop();
    await events?.flush();
    for (const ns of [SHOP, CP]) await core?.deleteNamespace({ name: ns }).catch(() => undefined);
    await release?.();
  });

  test('the CRDs are served and enforce their schemas', async () => {
    await assert.rejects(
      custom.createNamespacedCustomObject({
        ...SMI_ACCESS,
        namespace: CP,
        body: {
          ...trafficTarget('bad', CP),
          metadata: { name: 'bad', namespace: CP },
          spec: { sources: [] },
        },
      }),
      (err: unknown) => err instanceof ApiException && err.code === 422,
    );
    assert.equal(registry.synced, true);
  });

  test('labelling a namespace brings its services into the store; unlabelling takes them out', async () => {
    await createNamespace(core, SHOP);
    await core.createNamespacedServiceAccount({ namespace: SHOP, body: { metadata: { name: 'web' } } });
    await core.createNamespacedService({
      namespace: SHOP,
      body: {
        metadata: { name: 'web' },
        spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
      },
    });
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(registry.store.keys('Service'), [], 'an unlabelled namespace stays out');

    await core.patchNamespace({
      name: SHOP,
      body: [{ op: 'add', path: '/metadata/labels', value: { [LABEL_MONITORED_BY]: MESH } }],
    });
    await eventually('service in the store', () =>
      assert.deepEqual(registry.store.keys('Service'), [`${SHOP}/web`]),
    );
    assert.ok(registry.store.keys('ServiceAccount').includes(`${SHOP}/web`));
    assert.deepEqual(registry.store.keys('Namespace'), [SHOP]);

    await core.patchNamespace({
      name: SHOP,
      body: [{ op: 'remove', path: `/metadata/labels/${LABEL_MONITORED_BY.replace('/', '~1')}` }],
    });
    await eventually('service gone', () => assert.deepEqual(registry.store.keys('Service'), []));
    assert.deepEqual(registry.store.keys('Namespace'), []);

    await core.patchNamespace({
      name: SHOP,
      body: [{ op: 'add', path: '/metadata/labels', value: { [LABEL_MONITORED_BY]: MESH } }],
    });
    await eventually('service back', () => assert.deepEqual(registry.store.keys('Service'), [`${SHOP}/web`]));
  });

  test('pods created, scaled up and deleted reach the store through real EndpointSlices', async () => {
    const storeAddresses = (): string[] =>
      registry.store
        .list('EndpointSlice')
        .filter(
          (s) => s.metadata.namespace === SHOP && s.metadata.labels?.['kubernetes.io/service-name'] === 'web',
        )
        .flatMap((s) =>
          (s.endpoints ?? []).filter((e) => e.conditions?.ready === true).flatMap((e) => e.addresses),
        )
        .sort();
    for (const [i, ip] of [
      [1, '10.244.1.1'],
      [2, '10.244.1.2'],
    ] as const) {
      await createPod(core, { namespace: SHOP, name: `web-${i}`, labels: { app: 'web' }, ports: [8080] });
      await markPodRunning(core, SHOP, `web-${i}`, ip);
    }
    await eventually('two endpoints', () => assert.deepEqual(storeAddresses(), ['10.244.1.1', '10.244.1.2']));
    assert.equal(registry.store.get('Pod', `${SHOP}/web-1`)?.status?.podIP, '10.244.1.1');

    await createPod(core, { namespace: SHOP, name: 'web-3', labels: { app: 'web' }, ports: [8080] });
    await markPodRunning(core, SHOP, 'web-3', '10.244.1.3');
    await eventually('scaled up', () =>
      assert.deepEqual(storeAddresses(), ['10.244.1.1', '10.244.1.2', '10.244.1.3']),
    );

    await core.deleteNamespacedPod({ namespace: SHOP, name: 'web-1', gracePeriodSeconds: 0 });
    await eventually('deleted pod gone', () => {
      assert.deepEqual(storeAddresses(), ['10.244.1.2', '10.244.1.3']);
      assert.equal(registry.store.get('Pod', `${SHOP}/web-1`), undefined);
    });
  });

  test('an invalid TrafficTarget gets an Event and stays out; a valid one is stored', async () => {
    await custom.createNamespacedCustomObject({
      ...SMI_ACCESS,
      namespace: SHOP,
      body: trafficTarget('ok', SHOP),
    });
    await custom.createNamespacedCustomObject({
      ...SMI_ACCESS,
      namespace: SHOP,
      body: trafficTarget('elsewhere', CP),
    });
    await eventually('valid TrafficTarget stored', () =>
      assert.deepEqual(registry.store.keys('TrafficTarget'), [`${SHOP}/ok`]),
    );
    await eventually('Event on the invalid TrafficTarget', async () => {
      await events.flush();
      const list = await core.listNamespacedEvent({
        namespace: SHOP,
        fieldSelector: 'involvedObject.kind=TrafficTarget,involvedObject.name=elsewhere',
      });
      const [e] = list.items;
      assert.ok(e, 'no Event yet');
      assert.equal(e.type, 'Warning');
      assert.equal(e.reason, 'InvalidObject');
      assert.equal(e.source?.component, 'skein-controller');
      assert.ok(e.involvedObject.uid, 'names the object by uid (kubectl describe)');
      assert.match(e.message ?? '', /destination's namespace/);
    });
  });

  test('a TrafficSplit whose backends do not exist is a policy problem recorded as an Event', async () => {
    await custom.createNamespacedCustomObject({
      ...SMI_SPLIT,
      namespace: SHOP,
      body: {
        apiVersion: 'split.smi-spec.io/v1alpha4',
        kind: 'TrafficSplit',
        metadata: { name: 'web-split', namespace: SHOP },
        spec: { service: 'web', backends: [{ service: 'web-v9', weight: 100 }] },
      },
    });
    await eventually('split stored', () =>
      assert.deepEqual(registry.store.keys('TrafficSplit'), [`${SHOP}/web-split`]),
    );
    // What the controller does on each view rebuild (pkg/controller/controller.ts).
    const policyEvents = new KubeEventReporter({
      client: new KubeClient({ kubeConfig: kc }),
      logger: silentLogger(),
      lookup: storeLookup(registry.store),
    });
    new ProblemLog(silentLogger(), policyEvents).update(
      policyProblems(buildMeshView(registry.store, { meshName: MESH })),
    );
    await policyEvents.flush();
    const list = await core.listNamespacedEvent({
      namespace: SHOP,
      fieldSelector: 'involvedObject.kind=TrafficSplit,involvedObject.name=web-split',
    });
    assert.equal(list.items[0]?.reason, 'PolicyProblem');
    assert.ok(list.items[0]?.involvedObject.uid);
  });

  test('skein-controller --kubeconfig syncs from the cluster, becomes ready and logs invalid objects', async () => {
    const stateDir = await mkdtemp(path.join(tmpdir(), 'skein-kube-controller-'));
    const controller = spawnNode(
      'skein-controller',
      fileURLToPath(new URL('../../cmd/skein-controller/main.js', import.meta.url)),
      [
        '--kubeconfig',
        endpoint.kubeconfigPath,
        '--mesh-name',
        MESH,
        '--namespace',
        CP,
        '--host',
        '127.0.0.1',
        '--ads-port',
        '0',
        '--http-port',
        '0',
        '--state-dir',
        stateDir,
      ],
      { SKEIN_LOG_LEVEL: 'info' },
    );
    try {
      const ready = await controller.waitFor((l) => l['msg'] === 'skein controller ready', 30_000);
      assert.equal(ready['kubernetes'], endpoint.kubeconfigPath);
      assert.equal(ready['local'], undefined);
      const res = await fetch(`http://127.0.0.1:${String(ready['http'])}/readyz`);
      assert.equal(res.status, 200);
      const skipped = await controller.waitFor(
        (l) => l['msg'] === 'object skipped' && l['kind'] === 'TrafficTarget',
      );
      assert.equal(skipped['name'], `${SHOP}/elsewhere`);
    } finally {
      await controller.stop();
      await rm(stateDir, { recursive: true, force: true });
    }
  });

  test('after an API server restart and changes right after it, the store equals the server', async (t) => {
    if (!(endpoint instanceof TestCluster)) {
      t.skip('shared cluster: its API server cannot be restarted from here');
      return;
    }
    const cluster = endpoint;
    await cluster.stopApiServer();
    await new Promise((r) => setTimeout(r, 500));
    await cluster.startApiServer();
    // Right after: remove a policy, add one, change endpoints.
    await custom.deleteNamespacedCustomObject({ ...SMI_ACCESS, namespace: SHOP, name: 'ok' });
    await custom.createNamespacedCustomObject({
      ...SMI_ACCESS,
      namespace: SHOP,
      body: trafficTarget('ok-2', SHOP),
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

  test('after an etcd restart, changes made right after it reach the store', async (t) => {
    if (!(endpoint instanceof TestCluster)) {
      t.skip('shared cluster: its etcd cannot be restarted from here');
      return;
    }
    const cluster = endpoint;
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
            body: trafficTarget('after-etcd', SHOP),
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
        .filter((k) => k !== `${SHOP}/elsewhere`) // invalid: never stored
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

/**
 * Creates skein's CRDs (charts/skein/crds) as raw JSON — client-node's typed
 * serializer would drop `x-kubernetes-*` schema keys — and waits until each is Established.
 */
async function applyCrds(kc: KubeConfig): Promise<void> {
  const client = new KubeClient({ kubeConfig: kc });
  const base = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
  const dir = crdDirectory();
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.yaml'))) {
    const body: unknown = parse(readFileSync(path.join(dir, file), 'utf8'));
    if (!isRecord(body) || !isRecord(body['metadata'])) throw new Error(`${file}: not a CRD`);
    const name = String(body['metadata']['name']);
    try {
      await client.request('POST', base, { body });
    } catch (err) {
      if (!(err instanceof KubeApiError && err.status === 409)) throw err;
    }
    await waitFor(`CRD ${name} Established`, async () => {
      const crd = await client.request('GET', `${base}/${name}`);
      const status = isRecord(crd) ? crd['status'] : undefined;
      const conditions = isRecord(status) && Array.isArray(status['conditions']) ? status['conditions'] : [];
      return conditions.some((c) => isRecord(c) && c['type'] === 'Established' && c['status'] === 'True');
    });
  }
}
