// The controller in Kubernetes mode writes what it made of each SMI object, of
// IngressBackend and Egress, and of its MeshConfig into their status.conditions (an Accepted condition with
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
const INGRESS_BACKEND = { group: 'policy.skein.dev', version: 'v1alpha1', plural: 'ingressbackends' };
const EGRESS = { group: 'policy.skein.dev', version: 'v1alpha1', plural: 'egresses' };

function ingressBackendBody(name: string, spec: Record<string, unknown>) {
  return {
    apiVersion: 'policy.skein.dev/v1alpha1',
    kind: 'IngressBackend',
    metadata: { name, namespace: SHOP },
    spec,
  };
}
function egressBody(name: string, spec: Record<string, unknown>) {
  const sources = [{ kind: 'ServiceAccount', name: 'client', namespace: SHOP }];
  return {
    apiVersion: 'policy.skein.dev/v1alpha1',
    kind: 'Egress',
    metadata: { name, namespace: SHOP },
    spec: { sources, ...spec },
  };
}

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

describe('status.conditions of SMI objects, IngressBackend, Egress and the MeshConfig (Kubernetes mode)', {
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
    // IngressBackend and Egress: one accepted, one refused, one with a policy problem each.
    await core.createNamespacedService({
      namespace: SHOP,
      body: {
        metadata: { name: 'api' },
        spec: { ports: [{ port: 80, targetPort: 8080, name: 'http' }], selector: { app: 'api' } },
      },
    });
    await custom.createNamespacedCustomObject({
      group: 'specs.smi-spec.io',
      version: 'v1alpha4',
      plural: 'httproutegroups',
      namespace: SHOP,
      body: {
        apiVersion: 'specs.smi-spec.io/v1alpha4',
        kind: 'HTTPRouteGroup',
        metadata: { name: 'reads', namespace: SHOP },
        spec: { matches: [{ name: 'get', pathRegex: '/.*', methods: ['GET'] }] },
      },
    });
    const apiBackend = (protocol: string, tls?: Record<string, unknown>) => [
      { name: 'api', port: { number: 8080, protocol }, ...(tls ? { tls } : {}) },
    ];
    const policyBodies = [
      ingressBackendBody('ib-ok', {
        backends: apiBackend('http'),
        sources: [{ kind: 'IPRange', name: '10.0.9.0/24' }],
        matches: [{ kind: 'HTTPRouteGroup', name: 'reads', matches: ['get'] }],
      }),
      // Valid for the API server's schema, refused by skein: a principal no certificate check proves.
      ingressBackendBody('ib-unchecked', {
        backends: apiBackend('https', { skipClientCertValidation: true }),
        sources: [
          { kind: 'IPRange', name: '10.0.9.0/24' },
          { kind: 'AuthenticatedPrincipal', name: 'ingress.example.com' },
        ],
      }),
      ingressBackendBody('ib-no-match', {
        backends: [{ name: 'api', port: { number: 9090, protocol: 'http' } }],
        sources: [{ kind: 'IPRange', name: '10.0.9.0/24' }],
        matches: [{ kind: 'HTTPRouteGroup', name: 'reads', matches: ['put'] }],
      }),
      egressBody('eg-ok', { hosts: ['api.example.com'], ports: [{ number: 80, protocol: 'http' }] }),
      egressBody('eg-hostless', { ports: [{ number: 80, protocol: 'http' }] }),
      egressBody('eg-no-group', {
        hosts: ['api.example.com'],
        ports: [{ number: 8000, protocol: 'http' }],
        matches: [{ kind: 'HTTPRouteGroup', name: 'missing' }],
      }),
    ];
    for (const body of policyBodies)
      await custom.createNamespacedCustomObject({
        ...(body.kind === 'Egress' ? EGRESS : INGRESS_BACKEND),
        namespace: SHOP,
        body,
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

  test('IngressBackend and Egress: accepted, refused (InvalidObject) and PolicyProblem, each saying why', async () => {
    const cases: [typeof SMI_ACCESS, string, 'True' | 'False', string, RegExp][] = [
      [INGRESS_BACKEND, 'ib-ok', 'True', 'Accepted', /valid and in force/],
      [INGRESS_BACKEND, 'ib-unchecked', 'False', 'InvalidObject', /need client certificate validation/],
      [INGRESS_BACKEND, 'ib-no-match', 'False', 'PolicyProblem', /no port of the Service targets port 9090/],
      [EGRESS, 'eg-ok', 'True', 'Accepted', /valid and in force/],
      [EGRESS, 'eg-hostless', 'False', 'InvalidObject', /an http port needs spec\.hosts/],
      [EGRESS, 'eg-no-group', 'False', 'PolicyProblem', /HTTPRouteGroup .*\/missing does not exist/],
    ];
    for (const [api, name, status, reason, message] of cases)
      await eventually(`${api.plural} ${name}: ${reason}`, async () => {
        const { condition, generation } = await accepted(api, name);
        assert.equal(condition.status, status, JSON.stringify(condition));
        assert.equal(condition.reason, reason, JSON.stringify(condition));
        assert.match(condition.message ?? '', message);
        assert.equal(condition.observedGeneration, generation);
      });
    // The IngressBackend's missing match name is a problem of its own, reported with the port's.
    assert.match(
      (await accepted(INGRESS_BACKEND, 'ib-no-match')).condition.message ?? '',
      /no match named "put"/,
    );
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
