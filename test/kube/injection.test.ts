// Sidecar injection through the real admission chain: the real skein-controller
// (Kubernetes mode, its own process) serves the webhook on a free port; a
// MutatingWebhookConfiguration (shaped like the chart's, but with a URL
// clientConfig and no caBundle) sends the real kube-apiserver's pod admissions
// there. The controller must fill in the caBundle from the CA it keeps in a
// Secret; pods created through the API server must come out injected (or not)
// as the namespace/pod opt-in says, exactly once, with a bootstrap Secret.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { request } from 'node:https';
import { after, before, describe, test } from 'node:test';
import { CoreV1Api } from '@kubernetes/client-node';
import { IPTABLES_RULES_ENV } from '../../pkg/injector/mutate.js';
import { isJsonObject, type JsonObject } from '../../pkg/injector/pod.js';
import { KubeApiError, KubeClient } from '../../pkg/registry/kube/client.js';
import { acquireCluster } from '../support/cluster.js';
import { waitFor } from '../support/kube.js';
import { type KubeController, startKubeController } from '../support/kube-controller.js';
import { eventually, prepareMeshCluster } from '../support/kube-registry-fixture.js';
import { freePorts, type JsonLineProcess, sleep } from '../support/processes.js';

const sfx = randomBytes(3).toString('hex');
const MESH = `inj-${sfx}`;
const CP = `skein-system-inj-${sfx}`;
const MESHED = `meshed-${sfx}`;
const PLAIN = `plain-${sfx}`;
const CONFIG = `skein-sidecar-injector-${MESH}`;
const WEBHOOKS_PATH = '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations';

/** Follows a path of keys/indices through parsed JSON; undefined where it stops. */
function at(v: unknown, ...keys: (string | number)[]): unknown {
  let cur: unknown = v;
  for (const k of keys) {
    if (typeof k === 'number') cur = Array.isArray(cur) ? cur[k] : undefined;
    else cur = isJsonObject(cur) ? cur[k] : undefined;
  }
  return cur;
}

function names(list: unknown): string[] {
  return Array.isArray(list) ? list.map((c) => String(at(c, 'name'))) : [];
}

function pod(name: string, annotations: Record<string, string> = {}): JsonObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, annotations, labels: { app: name } },
    spec: {
      containers: [
        {
          name: 'app',
          image: 'example.invalid/app:test',
          ports: [{ name: 'http', containerPort: 8080 }],
          readinessProbe: { httpGet: { path: '/ready', port: 'http' } },
        },
      ],
    },
  };
}

describe('sidecar injection through the real admission chain', { timeout: 120_000 }, () => {
  let release: () => Promise<void> = async () => {};
  let api: KubeClient;
  let controller: JsonLineProcess | undefined;
  let kubeController: KubeController | undefined;
  let webhookPort = 0;
  let httpPort = 0;
  let caPem = '';
  let kubeconfigPath = '';

  const podsPath = (ns: string) => `/api/v1/namespaces/${ns}/pods`;
  const createPod = (ns: string, body: JsonObject): Promise<unknown> =>
    api.request('POST', podsPath(ns), { body });

  async function metric(result: string): Promise<number> {
    const text = await (await fetch(`http://127.0.0.1:${httpPort}/metrics`)).text();
    const m = new RegExp(`^skein_webhook_admissions_total\\{result="${result}"\\} (\\d+)$`, 'm').exec(text);
    return m ? Number(m[1]) : Number.NaN;
  }

  before(async () => {
    const cluster = await acquireCluster();
    release = cluster.release;
    const kc = cluster.kubeConfig;
    kubeconfigPath = cluster.endpoint.kubeconfigPath;
    api = new KubeClient({ kubeConfig: kc });
    const core = kc.makeApiClient(CoreV1Api);
    await prepareMeshCluster(kc, core, CP);
    await api.request('POST', '/api/v1/namespaces', {
      body: {
        metadata: {
          name: MESHED,
          labels: { 'skein.dev/monitored-by': MESH },
          annotations: { 'skein.dev/sidecar-injection': 'enabled' },
        },
      },
    });
    // Opted in by annotation but not labelled: outside the mesh, never injected.
    await api.request('POST', '/api/v1/namespaces', {
      body: { metadata: { name: PLAIN, annotations: { 'skein.dev/sidecar-injection': 'enabled' } } },
    });
    // The ServiceAccount admission plugin refuses pods until the `default` account exists.
    for (const ns of [MESHED, PLAIN])
      await waitFor(`ServiceAccount ${ns}/default`, () =>
        api.request('GET', `/api/v1/namespaces/${ns}/serviceaccounts/default`).then(
          () => true,
          () => false,
        ),
      );

    [webhookPort = 0] = await freePorts(1);
    kubeController = await startKubeController({
      kubeconfigPath: cluster.endpoint.kubeconfigPath,
      meshName: MESH,
      namespace: CP,
      stateDirPrefix: 'skein-injection-',
      args: [
        ...['--webhook-port', String(webhookPort), '--extra-san', '127.0.0.1'],
        // Short, so the never-stored pod's Secret is collected within the test.
        ...['--bootstrap-orphan-grace', '2s'],
      ],
    });
    controller = kubeController.process;
    const ready = kubeController.ready;
    assert.equal(ready['webhook'], webhookPort);
    httpPort = Number(ready['http']);
  });

  after(async () => {
    await api?.request('DELETE', `${WEBHOOKS_PATH}/${CONFIG}`).catch(() => undefined);
    await kubeController?.stop();
    for (const ns of [MESHED, PLAIN, CP])
      await api?.request('DELETE', `/api/v1/namespaces/${ns}`).catch(() => undefined);
    await release();
  });

  test('the CA lives in the skein-ca Secret and the controller fills in the caBundle of a configuration installed after it', async () => {
    assert.ok(controller);
    // Nothing installed yet: a warning a person can act on, and the controller keeps running.
    await controller.waitFor(
      (l) => l['level'] === 40 && /MutatingWebhookConfiguration .* not found/.test(String(l['msg'])),
      10_000,
    );
    const secret = await api.request('GET', `/api/v1/namespaces/${CP}/secrets/skein-ca`);
    assert.equal(at(secret, 'type'), 'Opaque');
    caPem = Buffer.from(String(at(secret, 'data', 'ca.crt')), 'base64').toString();
    assert.match(caPem, /BEGIN CERTIFICATE/);
    assert.ok(at(secret, 'data', 'ca.key'));

    const clientConfig = { url: `https://127.0.0.1:${webhookPort}/mutate-pod-creation` };
    const entry = (name: string) => ({
      name,
      clientConfig,
      rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
      namespaceSelector: { matchLabels: { 'skein.dev/monitored-by': MESH } },
      sideEffects: 'NoneOnDryRun',
      admissionReviewVersions: ['v1'],
      failurePolicy: 'Fail',
      timeoutSeconds: 10,
      reinvocationPolicy: 'IfNeeded',
    });
    // A second entry: the API server calls both, so the second sees the first one's sidecar.
    await api.request('POST', WEBHOOKS_PATH, {
      body: {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'MutatingWebhookConfiguration',
        metadata: { name: CONFIG },
        webhooks: [entry('sidecar-injector.skein.dev'), entry('sidecar-injector-again.skein.dev')],
      },
    });
    const want = Buffer.from(caPem).toString('base64');
    await eventually('caBundle filled in', async () => {
      const config = await api.request('GET', `${WEBHOOKS_PATH}/${CONFIG}`);
      assert.deepEqual(
        [
          at(config, 'webhooks', 0, 'clientConfig', 'caBundle'),
          at(config, 'webhooks', 1, 'clientConfig', 'caBundle'),
        ],
        [want, want],
      );
    });
  });

  test('a pod in a labelled, injection-enabled namespace gets the sidecar, once, and its bootstrap Secret', async () => {
    assert.ok(caPem, 'needs the configuration from the previous test');
    // The API server's webhook cache follows the patched caBundle within moments; a
    // dry run exercises the whole chain without side effects until it does.
    await eventually('the API server trusts the webhook', async () => {
      await api.request('POST', podsPath(MESHED), { body: pod('probe'), query: { dryRun: 'All' } });
    });
    const before = { injected: await metric('injected'), skipped: await metric('skipped') };

    const stored = await createPod(MESHED, pod('web'));
    // --native-sidecars=auto against this v1.36 API server: Envoy is a native sidecar (KEP-753),
    // and the API server kept restartPolicy and the probes on the init container.
    assert.deepEqual(names(at(stored, 'spec', 'containers')), ['app']);
    assert.deepEqual(names(at(stored, 'spec', 'initContainers')), ['skein-init', 'envoy']);
    const envoy = at(stored, 'spec', 'initContainers', 1);
    assert.equal(at(envoy, 'restartPolicy'), 'Always');
    assert.equal(at(envoy, 'securityContext', 'runAsUser'), 1500);
    assert.deepEqual(at(envoy, 'startupProbe', 'httpGet'), {
      path: '/skein-probe/envoy/ready',
      port: 15900,
      scheme: 'HTTP',
    });
    assert.equal(at(envoy, 'startupProbe', 'periodSeconds'), 1);
    assert.equal(at(envoy, 'startupProbe', 'failureThreshold'), 120);
    assert.equal(at(envoy, 'readinessProbe', 'httpGet', 'path'), '/skein-probe/envoy/ready');
    const init = at(stored, 'spec', 'initContainers', 0);
    assert.equal(at(init, 'env', 0, 'name'), IPTABLES_RULES_ENV);
    const rules = String(at(init, 'env', 0, 'value'));
    assert.match(rules, /-j REDIRECT --to-ports 15003$/m);
    assert.match(rules, /-j REDIRECT --to-ports 15001$/m);
    assert.match(rules, /--uid-owner 1500 -j RETURN$/m);
    assert.match(rules, /--dport 15900 -j RETURN$/m);

    const uuid = String(at(stored, 'metadata', 'labels', 'skein.dev/proxy-uuid'));
    assert.match(uuid, /^[0-9a-f-]{36}$/);
    const volumes = at(stored, 'spec', 'volumes');
    const volume = Array.isArray(volumes)
      ? volumes.find((v) => at(v, 'name') === 'skein-bootstrap')
      : undefined;
    assert.equal(at(volume, 'secret', 'secretName'), `skein-bootstrap-${uuid}`);
    // The HTTP readiness probe now goes to the proxy, which forwards it to the app.
    assert.deepEqual(at(stored, 'spec', 'containers', 0, 'readinessProbe', 'httpGet'), {
      path: '/skein-probe/app/readiness',
      port: 15902,
      scheme: 'HTTP',
    });

    const secret = await api.request('GET', `/api/v1/namespaces/${MESHED}/secrets/skein-bootstrap-${uuid}`);
    const bootstrap: unknown = JSON.parse(
      Buffer.from(String(at(secret, 'data', 'bootstrap.json')), 'base64').toString(),
    );
    assert.equal(at(bootstrap, 'node', 'id'), `${uuid}.sidecar.default.${MESHED}.cluster.local`);
    assert.match(JSON.stringify(at(bootstrap, 'static_resources', 'listeners')), /"skein-envoy-ready"/);
    assert.equal(Buffer.from(String(at(secret, 'data', 'ca.crt')), 'base64').toString(), caPem);

    // Injected once, although the webhook saw the injected pod again: from the second entry,
    // and from the API server re-invoking the IfNeeded entries after the pod changed.
    assert.equal(await metric('injected'), before.injected + 1);
    const skipped = await metric('skipped');
    assert.ok(skipped >= before.skipped + 2, `skipped ${before.skipped} → ${skipped}`);

    // A second admission of the mutated pod, straight to the webhook: allowed, no patch.
    const review = await postReview(webhookPort, caPem, {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: 'again',
        kind: { group: '', version: 'v1', kind: 'Pod' },
        operation: 'CREATE',
        namespace: MESHED,
        object: stored,
      },
    });
    assert.deepEqual(at(review, 'response'), { uid: 'again', allowed: true });
    assert.equal(await metric('skipped'), skipped + 1);
    assert.equal(await metric('error'), 0);
  });

  test('auto chose native from the API server version; skein.dev/native-sidecar: "false" gives the classic layout', async () => {
    assert.ok(controller);
    const line = controller.lines.find((l) => l['msg'] === 'sidecar layout: native');
    assert.match(String(line?.['reason']), /^auto: Kubernetes v1\.\d+\.\d+\S* >= 1\.29$/);
    const classic = await createPod(MESHED, pod('classic', { 'skein.dev/native-sidecar': 'false' }));
    assert.deepEqual(names(at(classic, 'spec', 'containers')), ['app', 'envoy']);
    assert.deepEqual(names(at(classic, 'spec', 'initContainers')), ['skein-init']);
    const envoy = at(classic, 'spec', 'containers', 1);
    assert.equal(at(envoy, 'restartPolicy'), undefined);
    assert.equal(at(envoy, 'startupProbe'), undefined);
    // Ready only while Envoy is LIVE, in this layout too: kubelet reaches 15900 past interception.
    assert.equal(at(envoy, 'readinessProbe', 'httpGet', 'path'), '/skein-probe/envoy/ready');
    assert.match(
      String(at(classic, 'spec', 'initContainers', 0, 'env', 0, 'value')),
      /--dport 15900 -j RETURN$/m,
    );
    // Probe rewrites are the same in both layouts.
    assert.equal(at(classic, 'spec', 'containers', 0, 'readinessProbe', 'httpGet', 'port'), 15902);
    await assert.rejects(
      createPod(MESHED, pod('bad-layout', { 'skein.dev/native-sidecar': 'yes' })),
      (err) => {
        assert.ok(err instanceof KubeApiError);
        assert.equal(err.status, 400);
        assert.match(
          err.message,
          /annotation skein.dev\/native-sidecar on pod bad-layout is "yes"; use "true" or "false"/,
        );
        return true;
      },
    );
  });

  test('a replica started with --native-sidecars=never injects the classic layout', async () => {
    assert.ok(caPem, 'needs the CA from the first test');
    const [port = 0] = await freePorts(1);
    const never = await startKubeController({
      kubeconfigPath,
      meshName: MESH,
      namespace: CP,
      stateDirPrefix: 'skein-injection-never-',
      args: ['--webhook-port', String(port), '--extra-san', '127.0.0.1', '--native-sidecars', 'never'],
    });
    try {
      const line = never.process.lines.find((l) => String(l['msg']).startsWith('sidecar layout:'));
      assert.equal(line?.['msg'], 'sidecar layout: classic');
      assert.equal(line?.['reason'], '--native-sidecars=never');
      // Straight to this replica's webhook (the configuration points at the other one); a dry
      // run, so no Secret. The same CA: replicas share the skein-ca Secret.
      const object = {
        ...pod('never'),
        metadata: { name: 'never', namespace: MESHED, labels: { app: 'never' } },
      };
      const review = await postReview(port, caPem, {
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        request: {
          uid: 'never',
          kind: { group: '', version: 'v1', kind: 'Pod' },
          operation: 'CREATE',
          namespace: MESHED,
          dryRun: true,
          object,
        },
      });
      assert.equal(at(review, 'response', 'allowed'), true);
      const patch: unknown = JSON.parse(
        Buffer.from(String(at(review, 'response', 'patch')), 'base64').toString(),
      );
      assert.ok(Array.isArray(patch));
      const added = patch
        .filter((op) => at(op, 'op') === 'add')
        .map((op) => [at(op, 'path'), at(op, 'value', 'name')]);
      assert.deepEqual(
        added.filter(
          ([path]) =>
            String(path).startsWith('/spec/initContainers') || String(path).startsWith('/spec/containers'),
        ),
        [
          ['/spec/initContainers', undefined],
          ['/spec/containers/-', 'envoy'],
        ],
      );
    } finally {
      await never.stop();
    }
  });

  test('unlabelled namespaces and pods that disable injection are untouched; a bad annotation is refused', async () => {
    const plain = await createPod(PLAIN, pod('plain'));
    assert.deepEqual(names(at(plain, 'spec', 'containers')), ['app']);
    assert.equal(at(plain, 'spec', 'initContainers'), undefined);
    assert.equal(at(plain, 'metadata', 'labels', 'skein.dev/proxy-uuid'), undefined);

    const disabled = await createPod(MESHED, pod('opted-out', { 'skein.dev/sidecar-injection': 'disabled' }));
    assert.deepEqual(names(at(disabled, 'spec', 'containers')), ['app']);
    assert.equal(at(disabled, 'spec', 'containers', 0, 'readinessProbe', 'httpGet', 'port'), 'http');

    const denied = await metric('denied');
    await assert.rejects(createPod(MESHED, pod('typo', { 'skein.dev/sidecar-injection': 'yes' })), (err) => {
      assert.ok(err instanceof KubeApiError);
      assert.equal(err.status, 400);
      assert.match(
        err.message,
        /admission webhook "sidecar-injector.skein.dev" denied the request: skein sidecar injection: annotation skein.dev\/sidecar-injection on pod typo is "yes"; use "enabled" or "disabled"/,
      );
      return true;
    });
    assert.equal(await metric('denied'), denied + 1);
  });

  test('MeshConfig spec.sidecar reaches pods admitted after it changes; a pod annotation wins', async () => {
    const meshConfigPath = `/apis/config.skein.dev/v1alpha1/namespaces/${CP}/meshconfigs`;
    /** api_type and connection limit of a new pod's bootstrap, and the pod's name. */
    let n = 0;
    async function admitted(annotations: Record<string, string> = {}): Promise<[unknown, unknown, string]> {
      const name = `sidecar-${++n}`;
      const stored = await createPod(MESHED, pod(name, annotations));
      const uuid = String(at(stored, 'metadata', 'labels', 'skein.dev/proxy-uuid'));
      const secret = await api.request('GET', `/api/v1/namespaces/${MESHED}/secrets/skein-bootstrap-${uuid}`);
      const bootstrap: unknown = JSON.parse(
        Buffer.from(String(at(secret, 'data', 'bootstrap.json')), 'base64').toString(),
      );
      return [
        at(bootstrap, 'dynamic_resources', 'ads_config', 'api_type'),
        at(
          bootstrap,
          'overload_manager',
          'resource_monitors',
          0,
          'typed_config',
          'max_active_downstream_connections',
        ),
        uuid,
      ];
    }
    const [apiType, limit] = await admitted();
    assert.deepEqual([apiType, limit], ['GRPC', 50000], 'defaults without a MeshConfig');

    // The CRD's schema refuses what Envoy could not use, in the API server itself.
    await assert.rejects(
      api.request('POST', meshConfigPath, {
        body: {
          apiVersion: 'config.skein.dev/v1alpha1',
          kind: 'MeshConfig',
          metadata: { name: MESH },
          spec: { sidecar: { xdsTransport: 'grpc', maxDownstreamConnections: 0 } },
        },
      }),
      (err) => {
        assert.ok(err instanceof KubeApiError);
        assert.equal(err.status, 422);
        assert.match(err.message, /spec.sidecar.xdsTransport: Unsupported value: "grpc"/);
        assert.match(err.message, /spec.sidecar.maxDownstreamConnections: Invalid value: 0/);
        return true;
      },
    );
    await api.request('POST', meshConfigPath, {
      body: {
        apiVersion: 'config.skein.dev/v1alpha1',
        kind: 'MeshConfig',
        metadata: { name: MESH },
        spec: { sidecar: { xdsTransport: 'delta', maxDownstreamConnections: 4096 } },
      },
    });
    let first = '';
    await eventually('the webhook uses the MeshConfig', async () => {
      const [t, l, uuid] = await admitted();
      assert.deepEqual([t, l], ['DELTA_GRPC', 4096]);
      first = uuid;
    });
    const [podType, podLimit] = await admitted({ 'skein.dev/xds-transport': 'sotw' });
    assert.deepEqual(
      [podType, podLimit],
      ['GRPC', 4096],
      'the annotation wins; the other setting is the mesh’s',
    );

    await api.request('PATCH', `${meshConfigPath}/${MESH}`, {
      body: { spec: { sidecar: { xdsTransport: null, maxDownstreamConnections: 100 } } },
      contentType: 'application/merge-patch+json',
    });
    await eventually('the change applies to the next pod', async () => {
      const [t, l] = await admitted();
      assert.deepEqual([t, l], ['GRPC', 100]);
    });
    // A pod admitted before keeps the bootstrap it got.
    const kept = await api.request('GET', `/api/v1/namespaces/${MESHED}/secrets/skein-bootstrap-${first}`);
    assert.match(
      Buffer.from(String(at(kept, 'data', 'bootstrap.json')), 'base64').toString(),
      /"DELTA_GRPC"/,
    );

    await assert.rejects(
      createPod(MESHED, pod('bad-limit', { 'skein.dev/max-downstream-connections': '10k' })),
      (err) => {
        assert.ok(err instanceof KubeApiError);
        assert.equal(err.status, 400);
        assert.match(
          err.message,
          /annotation skein.dev\/max-downstream-connections on pod bad-limit is "10k"; use a whole number from 1 to 2147483647/,
        );
        return true;
      },
    );
  });

  /** Names of the bootstrap Secrets in the meshed namespace (the test's kubeconfig may list Secrets). */
  async function bootstrapSecrets(): Promise<string[]> {
    const list = await api.request('GET', `/api/v1/namespaces/${MESHED}/secrets`, {
      query: { labelSelector: 'app.kubernetes.io/managed-by=skein' },
    });
    const items = at(list, 'items');
    return Array.isArray(items) ? items.map((s) => String(at(s, 'metadata', 'name'))).sort() : [];
  }

  test('deleting an injected pod deletes its bootstrap Secret; deleting a pod without a sidecar deletes nothing', async () => {
    const injected = await createPod(MESHED, pod('gc-web'));
    const uuid = String(at(injected, 'metadata', 'labels', 'skein.dev/proxy-uuid'));
    assert.match(uuid, /^[0-9a-f-]{36}$/);
    const secretName = `skein-bootstrap-${uuid}`;
    const secret = await api.request('GET', `/api/v1/namespaces/${MESHED}/secrets/${secretName}`);
    assert.deepEqual(at(secret, 'metadata', 'labels'), {
      'skein.dev/proxy-uuid': uuid,
      'app.kubernetes.io/managed-by': 'skein',
      'skein.dev/mesh': MESH,
    });
    const plain = await createPod(MESHED, pod('gc-plain', { 'skein.dev/sidecar-injection': 'disabled' }));
    assert.equal(at(plain, 'metadata', 'labels', 'skein.dev/proxy-uuid'), undefined);
    // Past the orphan grace period: a pod that exists keeps its Secret.
    await sleep(2500);
    const before = await bootstrapSecrets();
    assert.ok(before.includes(secretName), `${secretName} in ${before.join(', ')}`);

    // The plain pod first: the collector handles deletions in order, so once the injected
    // pod's Secret is gone the plain pod's deletion has been seen too.
    await api.request('DELETE', `${podsPath(MESHED)}/gc-plain`);
    await api.request('DELETE', `${podsPath(MESHED)}/gc-web`);
    await eventually('the bootstrap Secret of the deleted pod is gone', async () => {
      await assert.rejects(
        api.request('GET', `/api/v1/namespaces/${MESHED}/secrets/${secretName}`),
        (err) => err instanceof KubeApiError && err.status === 404,
      );
    });
    assert.deepEqual(
      await bootstrapSecrets(),
      before.filter((n) => n !== secretName),
      'only that Secret was deleted',
    );
  });

  test('a Secret whose pod was never stored (admission passed, storage refused it) is deleted after the grace period', async () => {
    const before = await bootstrapSecrets();
    // `web` exists already: the webhook injects (and writes a Secret), then the store refuses the name.
    await assert.rejects(
      createPod(MESHED, pod('web')),
      (err) => err instanceof KubeApiError && err.status === 409,
    );
    const after = await bootstrapSecrets();
    const orphans = after.filter((n) => !before.includes(n));
    assert.equal(orphans.length, 1, `new Secrets: ${orphans.join(', ')}`);
    await eventually('the orphan is collected', async () => {
      assert.deepEqual(await bootstrapSecrets(), before);
    });
    // The live pod `web` (admitted long before the grace period) still has its Secret.
    const web = await api.request('GET', `${podsPath(MESHED)}/web`);
    const uuid = String(at(web, 'metadata', 'labels', 'skein.dev/proxy-uuid'));
    assert.ok(before.includes(`skein-bootstrap-${uuid}`));
  });
});

/** POSTs an AdmissionReview to the webhook, trusting only skein's CA. */
function postReview(port: number, ca: string, body: unknown): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/mutate-pod-creation',
        method: 'POST',
        ca,
        agent: false,
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          text += d;
        });
        res.on('end', () => resolve(JSON.parse(text)));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}
