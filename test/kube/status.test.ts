// The controller in Kubernetes mode writes what it made of each SMI object and
// of its MeshConfig into their status.conditions (an Accepted condition with
// reason, message and observedGeneration), through the CRDs' status
// subresource, against the real API server: valid objects True, an object
// skein refuses False (InvalidObject), one a policy problem affects False
// (PolicyProblem) until the problem is fixed, and observedGeneration follows
// spec edits. Conditions another controller wrote stay.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { KubeClient } from '../../pkg/registry/kube/client.js';
import { acquireCluster } from '../support/cluster.js';
import { createNamespace } from '../support/kube.js';
import { type KubeController, startKubeController } from '../support/kube-controller.js';
import {
  eventually,
  prepareMeshCluster,
  SMI_ACCESS,
  SMI_SPLIT,
  trafficTargetBody,
} from '../support/kube-registry-fixture.js';

const sfx = randomBytes(3).toString('hex');
const MESH = `skein-st-${sfx}`;
const CP = `skein-system-st-${sfx}`;
const SHOP = `shop-st-${sfx}`;
const MESHCONFIG = { group: 'config.skein.dev', version: 'v1alpha1', plural: 'meshconfigs' };

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  observedGeneration?: number;
  lastTransitionTime?: string;
}
interface Stored {
  metadata: { generation?: number };
  status?: { conditions?: Condition[] };
}

describe('status.conditions of SMI objects and the MeshConfig (Kubernetes mode)', {
  timeout: 120_000,
}, () => {
  let release: (() => Promise<void>) | undefined;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let controller: KubeController | undefined;
  let kube: KubeClient;

  async function read(api: typeof SMI_ACCESS, name: string, namespace = SHOP): Promise<Stored> {
    return (await custom.getNamespacedCustomObject({ ...api, namespace, name })) as Stored;
  }
  async function accepted(api: typeof SMI_ACCESS, name: string, namespace = SHOP) {
    const o = await read(api, name, namespace);
    const c = o.status?.conditions?.find((x) => x.type === 'Accepted');
    assert.ok(c, `${name}: no Accepted condition yet (${JSON.stringify(o.status)})`);
    return { condition: c, generation: o.metadata.generation ?? -1, all: o.status?.conditions ?? [] };
  }

  before(async () => {
    const cluster = await acquireCluster();
    release = cluster.release;
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    kube = new KubeClient({ kubeConfig: cluster.kubeConfig });
    await prepareMeshCluster(cluster.kubeConfig, core, CP);
    await createNamespace(core, SHOP, { 'skein.dev/monitored-by': MESH });
    await custom.createNamespacedCustomObject({
      ...MESHCONFIG,
      namespace: CP,
      body: {
        apiVersion: 'config.skein.dev/v1alpha1',
        kind: 'MeshConfig',
        metadata: { name: MESH, namespace: CP },
        spec: { traffic: { permissive: false } },
      },
    });
    await custom.createNamespacedCustomObject({
      group: 'specs.smi-spec.io',
      version: 'v1alpha4',
      plural: 'tcproutes',
      namespace: SHOP,
      body: {
        apiVersion: 'specs.smi-spec.io/v1alpha4',
        kind: 'TCPRoute',
        metadata: { name: 'all', namespace: SHOP },
        spec: {},
      },
    });
    await custom.createNamespacedCustomObject({
      ...SMI_ACCESS,
      namespace: SHOP,
      body: trafficTargetBody(SHOP, 'ok'),
    });
    // Valid for the API server's schema, refused by skein: the destination is in another namespace.
    await custom.createNamespacedCustomObject({
      ...SMI_ACCESS,
      namespace: SHOP,
      body: trafficTargetBody(SHOP, 'elsewhere', CP),
    });
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
    controller = await startKubeController({
      kubeconfigPath: cluster.endpoint.kubeconfigPath,
      meshName: MESH,
      namespace: CP,
      stateDirPrefix: 'skein-status-',
      args: ['--min-push-interval', '50ms'],
    });
  });
  after(async () => {
    await controller?.stop();
    await core?.deleteNamespace({ name: SHOP }).catch(() => undefined);
    await core?.deleteNamespace({ name: CP }).catch(() => undefined);
    await release?.();
  });

  test('valid objects are Accepted, with the generation observed', async () => {
    await eventually('TrafficTarget ok Accepted', async () => {
      const { condition, generation } = await accepted(SMI_ACCESS, 'ok');
      assert.equal(condition.status, 'True', JSON.stringify(condition));
      assert.equal(condition.reason, 'Accepted');
      assert.equal(condition.observedGeneration, generation);
      assert.ok(!Number.isNaN(Date.parse(condition.lastTransitionTime ?? '')));
    });
    await eventually('MeshConfig Accepted', async () => {
      const { condition, generation } = await accepted(MESHCONFIG, MESH, CP);
      assert.equal(condition.status, 'True');
      assert.equal(condition.observedGeneration, generation);
    });
  });

  test('an object skein refuses is not Accepted, and says why', async () => {
    await eventually('TrafficTarget elsewhere refused', async () => {
      const { condition } = await accepted(SMI_ACCESS, 'elsewhere');
      assert.equal(condition.status, 'False');
      assert.equal(condition.reason, 'InvalidObject');
      assert.match(condition.message ?? '', /destination's namespace/);
    });
  });

  test('a policy problem makes its object not Accepted until it is fixed', async () => {
    await eventually('split with a missing backend', async () => {
      const { condition } = await accepted(SMI_SPLIT, 'web-split');
      assert.equal(condition.status, 'False');
      assert.equal(condition.reason, 'PolicyProblem');
      // Neither the apex nor its backend exists yet.
      assert.match(condition.message ?? '', /\/web does not exist/);
    });
    const before = (await accepted(SMI_SPLIT, 'web-split')).condition;
    for (const name of ['web', 'web-v9'])
      await core.createNamespacedService({
        namespace: SHOP,
        body: { metadata: { name }, spec: { ports: [{ port: 80, name: 'http' }], selector: { app: name } } },
      });
    await eventually('split Accepted once its services exist', async () => {
      const { condition, generation } = await accepted(SMI_SPLIT, 'web-split');
      assert.equal(condition.status, 'True', JSON.stringify(condition));
      assert.equal(condition.observedGeneration, generation);
      // The status moved, so the transition time did.
      assert.notEqual(condition.lastTransitionTime, before.lastTransitionTime);
    });
  });

  test('observedGeneration follows a spec edit; conditions of other writers stay', async () => {
    const { generation } = await accepted(SMI_ACCESS, 'ok');
    // Another controller's condition on the same object (its own field manager).
    await kube.request(
      'PATCH',
      `/apis/access.smi-spec.io/v1alpha3/namespaces/${SHOP}/traffictargets/ok/status`,
      {
        query: { fieldManager: 'someone-else', force: 'true' },
        contentType: 'application/apply-patch+yaml',
        body: {
          apiVersion: 'access.smi-spec.io/v1alpha3',
          kind: 'TrafficTarget',
          metadata: { name: 'ok', namespace: SHOP },
          status: {
            conditions: [
              {
                type: 'Audited',
                status: 'True',
                reason: 'Checked',
                message: 'x',
                lastTransitionTime: new Date().toISOString(),
              },
            ],
          },
        },
      },
    );
    const body = trafficTargetBody(SHOP, 'ok') as {
      spec: { sources: { kind: string; name: string; namespace: string }[] };
    };
    body.spec.sources.push({ kind: 'ServiceAccount', name: 'client-2', namespace: SHOP });
    await kube.request('PATCH', `/apis/access.smi-spec.io/v1alpha3/namespaces/${SHOP}/traffictargets/ok`, {
      contentType: 'application/merge-patch+json',
      body: { spec: body.spec },
    });
    await eventually('observedGeneration of the edited TrafficTarget', async () => {
      const { condition, generation: now, all } = await accepted(SMI_ACCESS, 'ok');
      assert.ok(now > generation, `generation ${now} after ${generation}`);
      assert.equal(condition.observedGeneration, now);
      assert.equal(condition.status, 'True');
      assert.ok(
        all.some((c) => c.type === 'Audited'),
        JSON.stringify(all),
      );
    });
  });
});
