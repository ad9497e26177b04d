// The Kubernetes registry against a real kube-apiserver, kube-controller-manager
// (EndpointSlice, namespace, GC, service-account controllers) and etcd: CRDs
// accepted and enforced, namespace membership by label, endpoints published by
// the real EndpointSlice controller, and Events for invalid objects. It runs on
// the shared test cluster when there is one (acquireCluster); the recovery tests,
// which restart the API server and etcd, are in restarts.test.ts on a cluster of
// their own.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { ApiException, CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { buildMeshView, policyProblems } from '../../pkg/catalog/view.js';
import { ProblemLog } from '../../pkg/controller/problem-log.js';
import { silentLogger } from '../../pkg/logger/logger.js';
import { LABEL_MONITORED_BY } from '../../pkg/mesh/constants.js';
import { KubeClient } from '../../pkg/registry/kube/client.js';
import { KubeEventReporter, storeLookup } from '../../pkg/registry/kube/events.js';
import type { KubeRegistry } from '../../pkg/registry/kube/registry.js';
import { ProblemCollector, teeReporter } from '../../pkg/registry/problems.js';
import { acquireCluster, type ClusterEndpoint } from '../support/cluster.js';
import { createNamespace, createPod, markPodRunning } from '../support/kube.js';
import { startKubeController } from '../support/kube-controller.js';
import {
  eventually,
  prepareMeshCluster,
  SMI_ACCESS,
  SMI_SPLIT,
  testKubeRegistry,
  trafficTargetBody,
} from '../support/kube-registry-fixture.js';

const suffix = randomBytes(3).toString('hex');
// Its own mesh name too: on a shared cluster, other files label their namespaces.
const MESH = `skein-e2e-${suffix}`;
const CP = `skein-system-${suffix}`;
const SHOP = `shop-${suffix}`;

describe('KubeRegistry against a real API server', { timeout: 180_000 }, () => {
  let endpoint: ClusterEndpoint;
  let kc: KubeConfig;
  let release: () => Promise<void>;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let registry: KubeRegistry;
  let events: KubeEventReporter;
  const problems = new ProblemCollector();

  before(async () => {
    ({ endpoint, kubeConfig: kc, release } = await acquireCluster());
    core = kc.makeApiClient(CoreV1Api);
    custom = kc.makeApiClient(CustomObjectsApi);
    await prepareMeshCluster(kc, core, CP);
    events = new KubeEventReporter({ client: new KubeClient({ kubeConfig: kc }), logger: silentLogger() });
    registry = testKubeRegistry({
      kubeConfig: kc,
      meshName: MESH,
      controlPlaneNamespace: CP,
      reporter: teeReporter(problems, events),
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
          ...trafficTargetBody(SHOP, 'bad', CP),
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
      body: trafficTargetBody(SHOP, 'ok'),
    });
    await custom.createNamespacedCustomObject({
      ...SMI_ACCESS,
      namespace: SHOP,
      body: trafficTargetBody(SHOP, 'elsewhere', CP),
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
    const {
      process: controller,
      ready,
      stop,
    } = await startKubeController({
      kubeconfigPath: endpoint.kubeconfigPath,
      meshName: MESH,
      namespace: CP,
    });
    try {
      assert.equal(ready['kubernetes'], endpoint.kubeconfigPath);
      assert.equal(ready['local'], undefined);
      const res = await fetch(`http://127.0.0.1:${String(ready['http'])}/readyz`);
      assert.equal(res.status, 200);
      const skipped = await controller.waitFor(
        (l) => l['msg'] === 'object skipped' && l['kind'] === 'TrafficTarget',
      );
      assert.equal(skipped['name'], `${SHOP}/elsewhere`);
    } finally {
      await stop();
    }
  });
});
