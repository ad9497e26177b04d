// The Helm chart (charts/skein) with the real helm (test/helm/bin/helm, built by
// `make helm-bin`) against the real API server: lint, render, install with
// default values and with permissive/replicas=2, every object accepted and
// holding what the values say, RBAC proved least-privilege with
// SubjectAccessReviews, an upgrade that keeps the controller-written caBundle,
// waitForController's progress, and uninstall removing everything it created.
// Pods never run (no kubelet), so nothing waits for them. Each install has its
// own namespace and mesh name: on the shared cluster, other files label theirs.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { applyCrds } from '../../pkg/install/crds.js';
import {
  type ControllerProgress,
  type HelmContext,
  HelmError,
  HelmNotFoundError,
  helmManifest,
  helmStatus,
  helmUninstall,
  helmUpgradeInstall,
  runHelm,
  waitForController,
} from '../../pkg/install/helm.js';
import { KubeApiError, KubeClient } from '../../pkg/registry/kube/client.js';
import { isRecord } from '../../pkg/schema/guards.js';
import { acquireCluster, type ClusterEndpoint } from '../support/cluster.js';
import { waitFor } from '../support/kube.js';

// dist/test/kube → repository root.
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const HELM = path.join(repoRoot, 'test', 'helm', 'bin', 'helm');
const CHART = path.join(repoRoot, 'charts', 'skein');

type Obj = Record<string, unknown>;

/** obj.a.b.c for plain JSON, undefined when any step is missing. */
function at(obj: unknown, ...keys: (string | number)[]): unknown {
  let cur: unknown = obj;
  for (const k of keys) {
    if (typeof k === 'number') cur = Array.isArray(cur) ? cur[k] : undefined;
    else cur = isRecord(cur) ? cur[k] : undefined;
  }
  return cur;
}

function docs(yamlText: string): Obj[] {
  return parseAllDocuments(yamlText)
    .map((d) => d.toJSON())
    .filter(isRecord);
}

/** The API path of one rendered object (only the kinds this chart renders). */
function objectPath(o: Obj): string {
  const kind = String(o['kind']);
  const name = String(at(o, 'metadata', 'name'));
  const ns = at(o, 'metadata', 'namespace');
  const collections: Record<string, [string, string, boolean]> = {
    ServiceAccount: ['/api/v1', 'serviceaccounts', true],
    Service: ['/api/v1', 'services', true],
    Deployment: ['/apis/apps/v1', 'deployments', true],
    PodDisruptionBudget: ['/apis/policy/v1', 'poddisruptionbudgets', true],
    Role: ['/apis/rbac.authorization.k8s.io/v1', 'roles', true],
    RoleBinding: ['/apis/rbac.authorization.k8s.io/v1', 'rolebindings', true],
    ClusterRole: ['/apis/rbac.authorization.k8s.io/v1', 'clusterroles', false],
    ClusterRoleBinding: ['/apis/rbac.authorization.k8s.io/v1', 'clusterrolebindings', false],
    MutatingWebhookConfiguration: [
      '/apis/admissionregistration.k8s.io/v1',
      'mutatingwebhookconfigurations',
      false,
    ],
    ValidatingAdmissionPolicy: [
      '/apis/admissionregistration.k8s.io/v1',
      'validatingadmissionpolicies',
      false,
    ],
    ValidatingAdmissionPolicyBinding: [
      '/apis/admissionregistration.k8s.io/v1',
      'validatingadmissionpolicybindings',
      false,
    ],
    MeshConfig: ['/apis/config.skein.dev/v1alpha1', 'meshconfigs', true],
  };
  const c = collections[kind];
  if (!c) throw new Error(`no API path for kind ${kind}`);
  const [prefix, plural, namespaced] = c;
  if (namespaced && typeof ns !== 'string') throw new Error(`${kind} ${name} has no namespace`);
  return namespaced ? `${prefix}/namespaces/${ns}/${plural}/${name}` : `${prefix}/${plural}/${name}`;
}

describe('charts/skein with helm against the real API server', () => {
  let endpoint: ClusterEndpoint;
  let kc: KubeConfig;
  let client: KubeClient;
  let release: () => Promise<void>;
  let helmHome: string;
  let ctx: HelmContext;
  const suffix = randomBytes(3).toString('hex');
  const cleanups: (() => Promise<unknown>)[] = [];

  before(async () => {
    if (!existsSync(HELM))
      throw new Error(`${HELM} is missing: run \`make helm-bin\` (\`make test\` builds it first)`);
    const acquired = await acquireCluster();
    ({ endpoint, release } = acquired);
    kc = acquired.kubeConfig;
    client = new KubeClient({ kubeConfig: kc });
    helmHome = await mkdtemp(path.join(tmpdir(), 'skein-helm-home-'));
    ctx = {
      helmPath: HELM,
      kubeconfig: endpoint.kubeconfigPath,
      // Keep helm's caches and repository config out of the user's home.
      env: {
        HELM_CACHE_HOME: path.join(helmHome, 'cache'),
        HELM_CONFIG_HOME: path.join(helmHome, 'config'),
        HELM_DATA_HOME: path.join(helmHome, 'data'),
      },
    };
  });
  after(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
    if (helmHome) await rm(helmHome, { recursive: true, force: true });
    await release?.();
  });

  const get = (p: string): Promise<Obj> =>
    client.request('GET', p).then((v) => {
      if (!isRecord(v)) throw new Error(`${p}: not an object`);
      return v;
    });
  const gone = (p: string): Promise<boolean> =>
    client.request('GET', p).then(
      () => false,
      (err: unknown) => {
        if (err instanceof KubeApiError && err.status === 404) return true;
        throw err;
      },
    );

  /** Installs a release in a namespace of its own; uninstalled at the end even if a test fails. */
  async function install(name: string, values: Obj, opts: { skipCrds?: boolean } = {}) {
    const namespace = `${name}-${suffix}`;
    const meshName = `${name}-${suffix}`;
    cleanups.push(() => client.request('DELETE', `/api/v1/namespaces/${namespace}`));
    cleanups.push(() => helmUninstall({ ...ctx, release: name, namespace }));
    const lines: string[] = [];
    const status = await helmUpgradeInstall({
      ...ctx,
      release: name,
      namespace,
      chart: CHART,
      values: { meshName, ...values },
      ...(opts.skipCrds ? { skipCrds: true } : {}),
      onLine: (l) => lines.push(l),
    });
    return { namespace, meshName, status, lines };
  }

  /** Whether the controller's ServiceAccount may do this (SubjectAccessReview, as `kubectl auth can-i --as`). */
  async function saCan(
    cpNamespace: string,
    attrs: {
      verb: string;
      resource: string;
      subresource?: string;
      group?: string;
      namespace?: string;
      name?: string;
    },
  ): Promise<boolean> {
    const review = await client.request('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
      body: {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: {
          user: `system:serviceaccount:${cpNamespace}:skein-controller`,
          groups: ['system:serviceaccounts', `system:serviceaccounts:${cpNamespace}`, 'system:authenticated'],
          resourceAttributes: { group: '', ...attrs },
        },
      },
    });
    return at(review, 'status', 'allowed') === true;
  }

  /** A client acting as the controller's ServiceAccount (impersonated, as admin may). */
  function impersonatedController(cpNamespace: string): KubeClient {
    const asController = new KubeConfig();
    asController.loadFromOptions({
      clusters: kc.clusters,
      users: [
        {
          name: 'impersonated',
          token: kc.getCurrentUser()?.token ?? '',
          impersonateUser: `system:serviceaccount:${cpNamespace}:skein-controller`,
        },
      ],
      contexts: [{ name: 'sa', cluster: kc.getCurrentCluster()?.name ?? '', user: 'impersonated' }],
      currentContext: 'sa',
    });
    return new KubeClient({ kubeConfig: asController });
  }

  /** 'allowed', or why the API server refused (RBAC: 403; a ValidatingAdmissionPolicy: 422). */
  async function refusal(p: Promise<unknown>): Promise<string> {
    try {
      await p;
      return 'allowed';
    } catch (err) {
      if (err instanceof KubeApiError && (err.status === 403 || err.status === 422)) return err.message;
      throw err;
    }
  }

  /**
   * As the controller's ServiceAccount: bootstrap Secrets may be created and deleted anywhere,
   * any other Secret neither (the admission policy), the CA Secret only in its namespace.
   */
  async function secretPolicyHolds(cpNamespace: string, other: string): Promise<void> {
    const sa = impersonatedController(cpNamespace);
    const secret = (name: string) => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name } });
    const victim = `victim-${suffix}`;
    // What pkg/certificate/ingress-gateway.ts puts on the certificate's Secret.
    const ingressCertLabels = {
      'app.kubernetes.io/managed-by': 'skein',
      'app.kubernetes.io/component': 'ingress-gateway',
    };
    await client.request('POST', `/api/v1/namespaces/${other}/secrets`, { body: secret(victim) });
    cleanups.push(() => client.request('DELETE', `/api/v1/namespaces/${other}/secrets/${victim}`));
    // The policy is enforced once the API server's policy informer has it (about a second):
    // probe with a create that is harmless when it still goes through.
    let probe = 0;
    await waitFor(
      'the admission policy to refuse creating another Secret',
      async () => {
        const name = `probe-${suffix}-${probe++}`;
        const outcome = await refusal(
          sa.request('POST', `/api/v1/namespaces/${other}/secrets`, { body: secret(name) }),
        );
        if (outcome !== 'allowed') return true;
        await client.request('DELETE', `/api/v1/namespaces/${other}/secrets/${name}`);
        return false;
      },
      10_000,
    );
    assert.match(
      await refusal(sa.request('DELETE', `/api/v1/namespaces/${other}/secrets/${victim}`)),
      /may create, update and delete only skein-bootstrap-<uuid> Secrets/,
    );
    assert.match(
      await refusal(
        sa.request('POST', `/api/v1/namespaces/${other}/secrets`, { body: secret('not-bootstrap') }),
      ),
      /may create, update and delete only skein-bootstrap/,
    );
    assert.match(
      await refusal(sa.request('POST', `/api/v1/namespaces/${other}/secrets`, { body: secret('skein-ca') })),
      /may create, update and delete only skein-bootstrap/,
    );
    assert.match(
      await refusal(
        sa.request('PATCH', `/api/v1/namespaces/${other}/secrets/${victim}`, {
          body: { metadata: { labels: ingressCertLabels }, data: { x: 'eA==' } },
          contentType: 'application/merge-patch+json',
        }),
      ),
      /create\s+ingress-gateway certificate Secrets .*and update only those/s,
      'a patch cannot take over an unlabelled Secret by adding the label',
    );
    const ingressCert = `ingress-cert-${suffix}`;
    cleanups.push(() => client.request('DELETE', `/api/v1/namespaces/${other}/secrets/${ingressCert}`));
    await sa.request('POST', `/api/v1/namespaces/${other}/secrets`, {
      body: { ...secret(ingressCert), metadata: { name: ingressCert, labels: ingressCertLabels } },
    });
    await sa.request('PATCH', `/api/v1/namespaces/${other}/secrets/${ingressCert}`, {
      body: { data: { x: 'eQ==' } },
      contentType: 'application/merge-patch+json',
    });
    assert.match(
      await refusal(sa.request('DELETE', `/api/v1/namespaces/${other}/secrets/${ingressCert}`)),
      /may create, update and delete only skein-bootstrap/,
    );
    const bootstrap = `skein-bootstrap-${suffix}`;
    await sa.request('POST', `/api/v1/namespaces/${other}/secrets`, { body: secret(bootstrap) });
    // Bootstrap rotation replaces the ADS client certificate in place (a merge patch).
    await sa.request('PATCH', `/api/v1/namespaces/${other}/secrets/${bootstrap}`, {
      body: { data: { 'tls.crt': 'eQ==' } },
      contentType: 'application/merge-patch+json',
    });
    await sa.request('DELETE', `/api/v1/namespaces/${other}/secrets/${bootstrap}`);
    assert.ok(await gone(`/api/v1/namespaces/${other}/secrets/${bootstrap}`));
    assert.ok(!(await gone(`/api/v1/namespaces/${other}/secrets/${victim}`)), 'the other Secret survived');
  }

  /**
   * As the controller's ServiceAccount: its evidence Leases `skein-replica-*` may be created,
   * renewed and deleted, the leader's Lease renewed but not deleted, any other Lease neither.
   */
  async function leasePolicyHolds(cpNamespace: string): Promise<void> {
    const sa = impersonatedController(cpNamespace);
    const leases = `/apis/coordination.k8s.io/v1/namespaces/${cpNamespace}/leases`;
    const lease = (name: string) => ({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name },
      spec: { holderIdentity: 'x' },
    });
    const renew = { body: { spec: { holderIdentity: 'y' } }, contentType: 'application/merge-patch+json' };
    const foreign = `someone-elses-${suffix}`;
    await client.request('POST', leases, { body: lease(foreign) });
    await client.request('POST', leases, { body: lease('skein-controller-leader') });
    await waitFor(
      'the admission policy to refuse patching another Lease',
      async () => (await refusal(sa.request('PATCH', `${leases}/${foreign}`, renew))) !== 'allowed',
      10_000,
    );
    const message = /may write only its Leases skein-controller-leader and\s+skein-replica-<pod>/;
    assert.match(await refusal(sa.request('DELETE', `${leases}/${foreign}`)), message);
    assert.match(await refusal(sa.request('POST', leases, { body: lease(`other-${suffix}`) })), message);
    assert.match(await refusal(sa.request('DELETE', `${leases}/skein-controller-leader`)), message);
    await sa.request('PATCH', `${leases}/skein-controller-leader`, renew);
    const mine = `skein-replica-${suffix}`;
    await sa.request('POST', leases, { body: lease(mine) });
    await sa.request('PATCH', `${leases}/${mine}`, renew);
    assert.ok(((await sa.request('GET', leases)) as { items: unknown[] }).items.length >= 3, 'list');
    await sa.request('DELETE', `${leases}/${mine}`);
    assert.ok(await gone(`${leases}/${mine}`));
    assert.ok(!(await gone(`${leases}/${foreign}`)), 'the other Lease survived');
  }

  test('helm lint is clean, also with --strict', async () => {
    for (const args of [
      ['lint', CHART],
      ['lint', '--strict', CHART],
    ]) {
      const { stdout } = await runHelm(args, ctx);
      assert.match(stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
      assert.doesNotMatch(stdout, /\[(WARNING|ERROR)\]/, stdout);
    }
  });

  test('helm template renders every object; the PodDisruptionBudget only with replicas > 1', async () => {
    const kinds = async (set: string[]) =>
      docs((await runHelm(['template', 'r', CHART, '--namespace', 'skein-system', ...set], ctx)).stdout)
        .map((d) => `${d['kind']}/${at(d, 'metadata', 'name')}`)
        .sort();
    const base = [
      'ClusterRole/skein-controller-skein',
      'ClusterRoleBinding/skein-controller-skein',
      'Deployment/skein-controller',
      'MeshConfig/skein',
      'MutatingWebhookConfiguration/skein-sidecar-injector-skein',
      'Role/skein-controller',
      'RoleBinding/skein-controller',
      'Service/skein-controller',
      'ServiceAccount/skein-controller',
      'ValidatingAdmissionPolicy/skein-controller-skein-leases',
      'ValidatingAdmissionPolicy/skein-controller-skein-secrets',
      'ValidatingAdmissionPolicyBinding/skein-controller-skein-leases',
      'ValidatingAdmissionPolicyBinding/skein-controller-skein-secrets',
    ];
    assert.deepEqual(await kinds([]), base);
    assert.deepEqual(
      await kinds(['--set', 'replicas=2']),
      [...base, 'PodDisruptionBudget/skein-controller'].sort(),
    );
    // One value turns the ingress gateway on: its Deployment, Service, ServiceAccount and IngressClass.
    const gateway = ['--namespace', 'skein-system', '--set', 'ingressGateway.enabled=true'];
    assert.deepEqual(
      await kinds(gateway.slice(2)),
      [
        ...base,
        'Deployment/skein-ingress-gateway',
        'IngressClass/skein',
        'Service/skein-ingress-gateway',
        'ServiceAccount/skein-ingress-gateway',
      ].sort(),
    );
    const rendered = docs((await runHelm(['template', 'r', CHART, ...gateway], ctx)).stdout);
    const secretRules = (ds: Obj[]) =>
      ds
        .filter((d) => d['kind'] === 'ClusterRole')
        .flatMap((d) => (d['rules'] as { resources: string[]; verbs: string[] }[]) ?? [])
        .filter((r) => r.resources.includes('secrets'))
        .flatMap((r) => r.verbs);
    assert.ok(secretRules(rendered).includes('watch'), 'the gateway reads the Ingresses’ TLS Secrets');
    const plain = docs((await runHelm(['template', 'r', CHART, '--namespace', 'skein-system'], ctx)).stdout);
    assert.ok(!secretRules(plain).includes('watch'), 'without the gateway no Secret is readable');
    const webhooks = rendered.find((d) => d['kind'] === 'MutatingWebhookConfiguration')?.['webhooks'] as {
      name: string;
      objectSelector?: unknown;
    }[];
    assert.deepEqual(
      webhooks.map((w) => w.name),
      ['sidecar-injector.skein.dev', 'ingress-gateway.skein.dev'],
    );
    const deploy = rendered.find(
      (d) => d['kind'] === 'Deployment' && at(d, 'metadata', 'name') === 'skein-controller',
    );
    assert.match(JSON.stringify(deploy), /--ingress-gateway/);
  });

  test('values the API server or the controller would refuse fail at render time', async () => {
    const render = (set: string) => runHelm(['template', 'r', CHART, '--set', set], ctx);
    await assert.rejects(
      render('webhook.failurePolicy=Maybe'),
      /failurePolicy "Maybe": must be Fail or Ignore/,
    );
    await assert.rejects(render('webhook.timeoutSeconds=31'), /timeoutSeconds 31: must be between 1 and 30/);
    await assert.rejects(
      render('webhook.nativeSidecars=true'),
      /webhook.nativeSidecars "true": must be auto, always or never/,
    );
    await assert.rejects(
      render('tracing.enable=true'),
      /tracing.address: required when tracing.enable is true/,
    );
    await assert.rejects(
      render('tracing.provider=jaeger'),
      /tracing.provider "jaeger": must be zipkin or opentelemetry/,
    );
    await assert.rejects(
      render('sidecar.logLevel=verbose'),
      /sidecar.logLevel "verbose": must be trace, debug, info, warning, warn, error, critical or off/,
    );
    await assert.rejects(
      render('traffic.outboundIPRangeExclusionList={10.0.0.0/8,10.0.0.0/33}'),
      /traffic.outboundIPRangeExclusionList: "10.0.0.0\/33" is not an IPv4 address or CIDR/,
    );
    await assert.rejects(
      render('traffic.outboundIPRangeInclusionList={fd00::/8}'),
      /traffic.outboundIPRangeInclusionList: "fd00::\/8" is not an IPv4 address or CIDR/,
    );
    await assert.rejects(
      render('traffic.inboundPortExclusionList={8443,70000}'),
      /traffic.inboundPortExclusionList: 70000 is not a port in 1-65535/,
    );
    await assert.rejects(render('meshName=Not_A_Label'), (err: unknown) => {
      assert.ok(err instanceof HelmError);
      assert.match(err.message, /meshName "Not_A_Label": must be a DNS label/);
      return true;
    });
  });

  test('install with default values: every object accepted, with the expected content; least privilege; uninstall removes it all', async () => {
    const { namespace: ns, meshName, status } = await install('skdef', {});
    assert.equal(status.status, 'deployed');
    assert.equal(status.revision, 1);
    assert.equal(status.appVersion, '0.1.0');
    assert.match(status.notes ?? '', /skein namespace add <namespace> --mesh-name skdef-/);
    assert.match(status.notes ?? '', /SMI mode/);

    const dep = await get(`/apis/apps/v1/namespaces/${ns}/deployments/skein-controller`);
    assert.equal(at(dep, 'spec', 'replicas'), 1);
    const container = at(dep, 'spec', 'template', 'spec', 'containers', 0);
    const args = at(container, 'args');
    assert.ok(Array.isArray(args));
    for (const a of [
      `--mesh-name=${meshName}`,
      `--namespace=${ns}`,
      '--webhook-port=9090',
      `--webhook-config-name=skein-sidecar-injector-${meshName}`,
      '--service-name=skein-controller',
      '--ca-secret=skein-ca',
      '--envoy-image=envoyproxy/envoy:v1.40.0',
      '--init-image=skein/controller:0.1.0',
      '--agent-image=skein/controller:0.1.0',
      '--native-sidecars=auto',
    ])
      assert.ok(args.includes(a), `args include ${a}: ${JSON.stringify(args)}`);
    assert.equal(at(container, 'image'), 'skein/controller:0.1.0');
    // The MeshConfig's logLevel governs at runtime: the chart gives the startup level by env, never --log-level.
    assert.ok(!args.some((a) => String(a).startsWith('--log-level')), JSON.stringify(args));
    assert.deepEqual(
      (at(container, 'env') as { name: string; value?: string }[]).find((e) => e.name === 'SKEIN_LOG_LEVEL'),
      { name: 'SKEIN_LOG_LEVEL', value: 'info' },
    );
    assert.equal(at(container, 'readinessProbe', 'httpGet', 'path'), '/readyz');
    assert.equal(at(container, 'livenessProbe', 'httpGet', 'path'), '/healthz');
    assert.equal(at(container, 'livenessProbe', 'httpGet', 'port'), 'http');
    assert.deepEqual(at(container, 'env', 0), {
      name: 'POD_NAMESPACE',
      valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } },
    });
    assert.equal(at(container, 'securityContext', 'readOnlyRootFilesystem'), true);
    assert.equal(at(dep, 'spec', 'template', 'spec', 'securityContext', 'runAsNonRoot'), true);
    assert.equal(at(dep, 'spec', 'template', 'spec', 'serviceAccountName'), 'skein-controller');

    const svc = await get(`/api/v1/namespaces/${ns}/services/skein-controller`);
    const ports = at(svc, 'spec', 'ports');
    assert.ok(Array.isArray(ports));
    assert.deepEqual(
      ports.map((p) => [at(p, 'name'), at(p, 'port'), at(p, 'targetPort')]),
      [
        ['ads', 15128, 'ads'],
        ['webhook', 443, 'webhook'],
        ['http', 9091, 'http'],
        ['rest-xds', 15127, 'rest-xds'],
      ],
    );

    const mc = await get(`/apis/config.skein.dev/v1alpha1/namespaces/${ns}/meshconfigs/${meshName}`);
    assert.deepEqual(mc['spec'], {
      traffic: { permissive: false },
      certificate: { validity: '24h', trustDomain: 'cluster.local' },
      xds: { minPushInterval: '100ms' },
      sidecar: { xdsTransport: 'sotw', maxDownstreamConnections: 50000, logLevel: 'warn' },
      observability: { logLevel: 'info', enableDebugServer: false },
    });

    const mwc = await get(
      `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/skein-sidecar-injector-${meshName}`,
    );
    const hook = at(mwc, 'webhooks', 0);
    assert.equal(at(hook, 'name'), 'sidecar-injector.skein.dev');
    assert.deepEqual(at(hook, 'clientConfig'), {
      service: { name: 'skein-controller', namespace: ns, path: '/mutate-pod-creation', port: 443 },
    });
    assert.deepEqual(at(hook, 'rules'), [
      {
        operations: ['CREATE'],
        apiGroups: [''],
        apiVersions: ['v1'],
        resources: ['pods'],
        scope: 'Namespaced',
      },
    ]);
    assert.deepEqual(at(hook, 'namespaceSelector', 'matchLabels'), { 'skein.dev/monitored-by': meshName });
    assert.equal(at(hook, 'failurePolicy'), 'Fail');
    assert.equal(at(hook, 'timeoutSeconds'), 5);
    assert.equal(at(hook, 'sideEffects'), 'NoneOnDryRun');
    assert.deepEqual(at(hook, 'admissionReviewVersions'), ['v1']);
    assert.equal(at(hook, 'reinvocationPolicy'), 'IfNeeded');

    assert.ok(await gone(`/apis/policy/v1/namespaces/${ns}/poddisruptionbudgets/skein-controller`), 'no PDB');

    // Least privilege, asked of the API server's own authorizer.
    const other = 'default';
    const can = (a: Parameters<typeof saCan>[1]) => saCan(ns, a);
    const allowed: Parameters<typeof saCan>[1][] = [
      { verb: 'list', resource: 'pods' },
      { verb: 'watch', resource: 'pods' },
      { verb: 'watch', resource: 'namespaces' },
      { verb: 'get', resource: 'namespaces', name: 'default' },
      { verb: 'list', resource: 'endpointslices', group: 'discovery.k8s.io' },
      { verb: 'watch', resource: 'traffictargets', group: 'access.smi-spec.io' },
      { verb: 'list', resource: 'httproutegroups', group: 'specs.smi-spec.io' },
      { verb: 'list', resource: 'trafficsplits', group: 'split.smi-spec.io' },
      { verb: 'list', resource: 'ingresses', group: 'networking.k8s.io' },
      { verb: 'watch', resource: 'meshconfigs', group: 'config.skein.dev', namespace: ns },
      { verb: 'create', resource: 'events', namespace: other },
      { verb: 'patch', resource: 'events', namespace: other },
      // status.conditions (pkg/registry/kube/status.ts), through the status subresource only.
      ...(
        [
          ['access.smi-spec.io', 'traffictargets'],
          ['specs.smi-spec.io', 'httproutegroups'],
          ['specs.smi-spec.io', 'tcproutes'],
          ['split.smi-spec.io', 'trafficsplits'],
        ] as const
      ).map(([group, resource]) => ({
        verb: 'patch',
        resource,
        subresource: 'status',
        group,
        namespace: other,
      })),
      {
        verb: 'patch',
        resource: 'meshconfigs',
        subresource: 'status',
        group: 'config.skein.dev',
        namespace: ns,
      },
      { verb: 'create', resource: 'secrets', namespace: other },
      // Bootstrap Secrets of deleted pods (pkg/injector/secret-gc.ts): delete by name, never read.
      { verb: 'delete', resource: 'secrets', namespace: other, name: 'skein-bootstrap-x' },
      { verb: 'get', resource: 'secrets', namespace: ns, name: 'skein-ca' },
      { verb: 'update', resource: 'secrets', namespace: ns, name: 'skein-ca' },
      // The ingress gateway's client certificate (MeshConfig-named, so not narrowable by RBAC;
      // the admission policy limits patches to Secrets already labelled as that certificate).
      { verb: 'patch', resource: 'secrets', namespace: other },
      // Leader election (pkg/leader): one Lease in the control-plane namespace.
      { verb: 'create', resource: 'leases', group: 'coordination.k8s.io', namespace: ns },
      ...['get', 'update'].map((verb) => ({
        verb,
        resource: 'leases',
        group: 'coordination.k8s.io',
        namespace: ns,
        name: 'skein-controller-leader',
      })),
      // Root rotation evidence (pkg/certificate/replica-reports.ts): a Lease per replica, named
      // per pod (the admission policy narrows the names).
      ...['list', 'patch', 'delete'].map((verb) => ({
        verb,
        resource: 'leases',
        group: 'coordination.k8s.io',
        namespace: ns,
      })),
      ...['patch', 'list', 'watch'].map((verb) => ({
        verb,
        resource: 'mutatingwebhookconfigurations',
        group: 'admissionregistration.k8s.io',
        // A list/watch with fieldSelector metadata.name=<it> is authorized as this name.
        name: `skein-sidecar-injector-${meshName}`,
      })),
    ];
    const denied: Parameters<typeof saCan>[1][] = [
      { verb: 'delete', resource: 'pods', namespace: other },
      { verb: 'create', resource: 'pods', namespace: other },
      { verb: 'update', resource: 'services', namespace: other },
      { verb: 'get', resource: 'secrets', namespace: other, name: 'anything' },
      { verb: 'list', resource: 'secrets', namespace: ns },
      { verb: 'list', resource: 'secrets' },
      { verb: 'get', resource: 'secrets', namespace: ns, name: 'not-the-ca' },
      { verb: 'get', resource: 'secrets', namespace: other, name: 'skein-bootstrap-x' },
      ...['list', 'watch', 'update', 'deletecollection'].map((verb) => ({
        verb,
        resource: 'secrets',
        namespace: other,
      })),
      { verb: 'watch', resource: 'secrets' },
      { verb: 'update', resource: 'secrets', namespace: ns, name: 'not-the-ca' },
      { verb: 'update', resource: 'leases', group: 'coordination.k8s.io', namespace: ns, name: 'another' },
      { verb: 'create', resource: 'leases', group: 'coordination.k8s.io', namespace: other },
      ...['list', 'patch', 'delete', 'watch'].map((verb) => ({
        verb,
        resource: 'leases',
        group: 'coordination.k8s.io',
        namespace: other,
      })),
      { verb: 'watch', resource: 'leases', group: 'coordination.k8s.io', namespace: ns },
      { verb: 'list', resource: 'meshconfigs', group: 'config.skein.dev', namespace: other },
      { verb: 'update', resource: 'meshconfigs', group: 'config.skein.dev', namespace: ns },
      { verb: 'create', resource: 'traffictargets', group: 'access.smi-spec.io', namespace: other },
      // The status subresource, never the object (its spec).
      { verb: 'patch', resource: 'traffictargets', group: 'access.smi-spec.io', namespace: other },
      { verb: 'update', resource: 'trafficsplits', group: 'split.smi-spec.io', namespace: other },
      {
        verb: 'update',
        resource: 'trafficsplits',
        subresource: 'status',
        group: 'split.smi-spec.io',
        namespace: other,
      },
      { verb: 'patch', resource: 'meshconfigs', group: 'config.skein.dev', namespace: ns },
      {
        verb: 'patch',
        resource: 'meshconfigs',
        subresource: 'status',
        group: 'config.skein.dev',
        namespace: other,
      },
      {
        verb: 'patch',
        resource: 'mutatingwebhookconfigurations',
        group: 'admissionregistration.k8s.io',
        name: 'someone-elses-webhook',
      },
      { verb: 'delete', resource: 'mutatingwebhookconfigurations', group: 'admissionregistration.k8s.io' },
      { verb: 'list', resource: 'mutatingwebhookconfigurations', group: 'admissionregistration.k8s.io' },
      { verb: 'delete', resource: 'namespaces', name: 'default' },
      { verb: 'list', resource: 'nodes' },
    ];
    const results = await Promise.all([...allowed, ...denied].map(can));
    assert.deepEqual(
      [...allowed, ...denied].map((a, i) => [JSON.stringify(a), results[i]]),
      [...allowed.map((a) => [JSON.stringify(a), true]), ...denied.map((a) => [JSON.stringify(a), false])],
    );

    // RBAC cannot narrow Secret create/delete by name; the chart's ValidatingAdmissionPolicy
    // does. Requests made as the controller's ServiceAccount (impersonated, as admin may):
    await secretPolicyHolds(ns, other);
    await leasePolicyHolds(ns);

    // waitForController: no kubelet and no deployment controller here, so the test
    // plays the deployment controller and reports the rollout itself.
    const seen: ControllerProgress[] = [];
    await assert.rejects(
      waitForController(kc, {
        namespace: ns,
        timeoutMs: 300,
        intervalMs: 50,
        onProgress: (p) => seen.push(p),
      }),
      /deployment .*skein-controller not ready after 0 s: waiting for the deployment spec update to be observed/,
    );
    assert.equal(seen.length, 1, 'one report per change of state');
    assert.equal(seen[0]?.ready, false);
    const generation = at(dep, 'metadata', 'generation');
    const depPath = `/apis/apps/v1/namespaces/${ns}/deployments/skein-controller`;
    const reportStatus = (s: Obj) =>
      client.request('PATCH', `${depPath}/status`, {
        contentType: 'application/merge-patch+json',
        body: { status: { observedGeneration: generation, ...s } },
      });
    await reportStatus({ replicas: 1, updatedReplicas: 1, readyReplicas: 0, availableReplicas: 0 });
    const progress: string[] = [];
    const waiting = waitForController(kc, {
      namespace: ns,
      timeoutMs: 10_000,
      intervalMs: 50,
      onProgress: (p) => progress.push(p.message),
    });
    await waitFor('first progress report', async () => progress.length > 0);
    await reportStatus({ readyReplicas: 1, availableReplicas: 1 });
    const done = await waiting;
    assert.equal(done.ready, true);
    assert.deepEqual(progress, ['0 of 1 updated replicas are available', '1 of 1 replicas available']);

    // helm uninstall removes every object the release created.
    const manifest = docs(await helmManifest({ ...ctx, release: 'skdef', namespace: ns }));
    assert.equal(manifest.length, 13);
    assert.equal(await helmUninstall({ ...ctx, release: 'skdef', namespace: ns }), true);
    for (const o of manifest) {
      const p = objectPath(o);
      await waitFor(`${p} deleted`, () => gone(p), 10_000);
    }
    assert.equal(await helmStatus({ ...ctx, release: 'skdef', namespace: ns }), undefined);
    assert.equal(await helmUninstall({ ...ctx, release: 'skdef', namespace: ns }), false);
  });

  test('install permissive=true, replicas=2 (as skein install does: CRDs applied first, --skip-crds); upgrade keeps the caBundle', async () => {
    await applyCrds(kc);
    const {
      namespace: ns,
      meshName,
      lines,
    } = await install(
      'skha',
      {
        permissive: true,
        replicas: 2,
        debugServer: true,
        webhook: { failurePolicy: 'Ignore', timeoutSeconds: 3 },
        traffic: { outboundIPRangeExclusionList: ['169.254.169.254/32'], inboundPortExclusionList: [8443] },
      },
      { skipCrds: true },
    );
    assert.ok(
      lines.some((l) => /has been upgraded|STATUS: deployed/.test(l)),
      `helm's progress lines were passed on: ${lines.join('\n')}`,
    );
    const mc = await get(`/apis/config.skein.dev/v1alpha1/namespaces/${ns}/meshconfigs/${meshName}`);
    assert.deepEqual(at(mc, 'spec', 'traffic'), {
      permissive: true,
      outboundIPRangeExclusionList: ['169.254.169.254/32'],
      inboundPortExclusionList: [8443],
    });
    assert.equal(at(mc, 'spec', 'observability', 'enableDebugServer'), true);
    const dep = await get(`/apis/apps/v1/namespaces/${ns}/deployments/skein-controller`);
    assert.equal(at(dep, 'spec', 'replicas'), 2);
    const pdb = await get(`/apis/policy/v1/namespaces/${ns}/poddisruptionbudgets/skein-controller`);
    assert.equal(at(pdb, 'spec', 'minAvailable'), 1);
    assert.deepEqual(at(pdb, 'spec', 'selector', 'matchLabels'), at(dep, 'spec', 'selector', 'matchLabels'));
    const mwcPath = `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/skein-sidecar-injector-${meshName}`;
    const mwc = await get(mwcPath);
    assert.equal(at(mwc, 'webhooks', 0, 'failurePolicy'), 'Ignore');
    assert.equal(at(mwc, 'webhooks', 0, 'timeoutSeconds'), 3);

    // The controller fills in the caBundle; a later `helm upgrade` must not wipe it.
    const caBundle = Buffer.from(
      '-----BEGIN CERTIFICATE-----\nnot checked here\n-----END CERTIFICATE-----\n',
    ).toString('base64');
    await client.request('PATCH', mwcPath, {
      contentType: 'application/json-patch+json',
      body: [{ op: 'add', path: '/webhooks/0/clientConfig/caBundle', value: caBundle }],
    });
    const upgraded = await helmUpgradeInstall({
      ...ctx,
      release: 'skha',
      namespace: ns,
      chart: CHART,
      skipCrds: true,
      values: { meshName, permissive: false, replicas: 2, webhook: { failurePolicy: 'Fail' } },
    });
    assert.equal(upgraded.revision, 2);
    const after = await get(mwcPath);
    assert.equal(at(after, 'webhooks', 0, 'failurePolicy'), 'Fail');
    assert.equal(at(after, 'webhooks', 0, 'clientConfig', 'caBundle'), caBundle);
    const mc2 = await get(`/apis/config.skein.dev/v1alpha1/namespaces/${ns}/meshconfigs/${meshName}`);
    assert.equal(at(mc2, 'spec', 'traffic', 'permissive'), false);

    assert.equal(await helmUninstall({ ...ctx, release: 'skha', namespace: ns }), true);
    await waitFor('webhook configuration deleted', () => gone(mwcPath), 10_000);
    await waitFor('PDB deleted', () =>
      gone(`/apis/policy/v1/namespaces/${ns}/poddisruptionbudgets/skein-controller`),
    );
  });

  test('a missing helm binary is an error a person can act on', async () => {
    await assert.rejects(
      runHelm(['version'], { helmPath: path.join(helmHome, 'no-such-helm') }),
      (err: unknown) =>
        err instanceof HelmNotFoundError &&
        /Install Helm 3 .* or set SKEIN_HELM=\/path\/to\/helm/.test(err.message),
    );
  });
});
