import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { request } from 'node:https';
import { after, before, describe, test } from 'node:test';
import { applyPatch } from '../../test/support/injector/apply-patch.js';
import { get, named } from '../../test/support/injector/json-path.js';
import { BuiltinCA } from '../certificate/builtin.js';
import type { CertificateRequest, IssuedCertificate } from '../certificate/types.js';
import { parseProxyCommonName } from '../mesh/identity.js';
import { InjectionError } from './errors.js';
import { decideGateway, mutateGateway } from './gateway.js';
import type { JsonPatchOperation } from './jsonpatch.js';
import type { MutateOptions, NamespaceLike, SecretManifest } from './mutate.js';
import { isJsonObject, type Json, type JsonObject, readPod } from './pod.js';
import { type AdmissionResult, InjectorWebhook, MUTATE_PATH } from './webhook.js';

const CP = 'skein-system';
const UUID = '7d3f1c2e-9a4b-4c5d-8e6f-0a1b2c3d4e5f';
const GATEWAY = { controlPlaneNamespace: CP, gatewayEnabled: true };

interface GatewayPodOptions {
  namespace?: string;
  labels?: Record<string, string> | null;
  /** Without `spec.volumes` / the envoy container's `volumeMounts`. */
  bare?: boolean;
  containers?: JsonObject[];
}

/** The chart's gateway pod: an `envoy` container (second here, after a log shipper). */
function gatewayPod(o: GatewayPodOptions = {}): JsonObject {
  const labels =
    o.labels === undefined ? { app: 'skein-ingress-gateway', 'skein.dev/gateway': 'ingress' } : o.labels;
  const mounts: JsonObject = o.bare ? {} : { volumeMounts: [{ name: 'config', mountPath: '/config' }] };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'gateway-1',
      namespace: o.namespace ?? CP,
      ...(labels === null ? {} : { labels }),
    },
    spec: {
      serviceAccountName: 'skein-ingress-gateway',
      containers: o.containers ?? [
        { name: 'logs', image: 'busybox', volumeMounts: [{ name: 'config', mountPath: '/logs' }] },
        { name: 'envoy', image: 'envoyproxy/envoy:v1.40.0', ...mounts },
      ],
      ...(o.bare ? {} : { volumes: [{ name: 'config', emptyDir: {} }] }),
    },
  };
}

const decide = (pod: JsonObject, o = GATEWAY) => decideGateway(readPod(pod), o);

function refused(pod: JsonObject, message: RegExp, o = GATEWAY): void {
  assert.throws(
    () => decide(pod, o),
    (err: unknown) => err instanceof InjectionError && message.test(err.message),
  );
}

test('decideGateway: no label is not a gateway; the label where it may not be is a clear InjectionError', () => {
  assert.deepEqual(decide(gatewayPod({ labels: { app: 'x' } })), { gateway: false });
  assert.deepEqual(decide(gatewayPod({ labels: null })), { gateway: false });
  // Even with the gateway off, an unlabelled pod is none of its business.
  assert.deepEqual(decide(gatewayPod({ labels: null }), { ...GATEWAY, gatewayEnabled: false }), {
    gateway: false,
  });
  assert.deepEqual(decide(gatewayPod()), { gateway: true });

  refused(
    gatewayPod({ labels: { 'skein.dev/gateway': 'egress' } }),
    /^label skein\.dev\/gateway=egress on pod gateway-1: the only gateway is "ingress"$/,
  );
  refused(
    gatewayPod(),
    /pod gateway-1 asks for the ingress gateway identity, but the controller runs without --ingress-gateway/,
    {
      ...GATEWAY,
      gatewayEnabled: false,
    },
  );
  refused(
    gatewayPod({ namespace: 'bookstore' }),
    /pod gateway-1: the ingress gateway runs only in the control-plane namespace skein-system, not bookstore/,
  );
  refused(
    gatewayPod({ containers: [{ name: 'proxy', image: 'envoyproxy/envoy:v1.40.0' }] }),
    /^gateway pod gateway-1 has no container named envoy$/,
  );
  const clash = gatewayPod();
  const spec = clash['spec'];
  assert.ok(isJsonObject(spec));
  spec['volumes'] = [{ name: 'skein-bootstrap', emptyDir: {} }];
  refused(clash, /already has a volume named skein-bootstrap/);
});

test('decideGateway: a pod that already has a proxy UUID is done (webhook reinvocation)', () => {
  const pod = gatewayPod({ labels: { 'skein.dev/gateway': 'ingress', 'skein.dev/proxy-uuid': UUID } });
  assert.deepEqual(decide(pod), { gateway: 'done', reason: 'pod already has a proxy UUID' });
});

const OPTIONS: MutateOptions = {
  meshName: 'skein',
  trustDomain: 'cluster.local',
  controlPlaneNamespace: CP,
  images: { envoy: 'envoyproxy/envoy:v1.40.0', init: 'skein/init:v0.1.0' },
  proxyUuid: UUID,
  certificate: { certPem: 'CERT', keyPem: 'KEY', caPem: 'CA' },
};

const CN = `${UUID}.gateway.skein-ingress-gateway.skein-system.cluster.local`;
const MOUNT = { name: 'skein-bootstrap', mountPath: '/etc/skein', readOnly: true };
const VOLUME = { name: 'skein-bootstrap', secret: { secretName: `skein-bootstrap-${UUID}` } };

test('mutateGateway: the UUID label, the bootstrap volume, the mount on the envoy container only', () => {
  const pod = gatewayPod();
  const m = mutateGateway(readPod(pod), OPTIONS);
  const patched = applyPatch(pod, m.patch);
  assert.deepEqual(get(patched, 'metadata', 'labels'), {
    app: 'skein-ingress-gateway',
    'skein.dev/gateway': 'ingress',
    'skein.dev/proxy-uuid': UUID,
  });
  assert.deepEqual(get(patched, 'spec', 'volumes'), [{ name: 'config', emptyDir: {} }, VOLUME]);
  const containers = get(patched, 'spec', 'containers');
  assert.deepEqual(get(named(containers, 'envoy'), 'volumeMounts'), [
    { name: 'config', mountPath: '/config' },
    MOUNT,
  ]);
  assert.deepEqual(get(named(containers, 'logs'), 'volumeMounts'), [{ name: 'config', mountPath: '/logs' }]);
  // Nothing else: no init container, no extra container, the chart's Envoy command untouched.
  assert.ok(Array.isArray(containers));
  assert.equal(containers.length, 2);
  assert.ok(isJsonObject(patched) && isJsonObject(patched['spec']));
  assert.ok(!('initContainers' in patched['spec']));
  assert.deepEqual(named(containers, 'envoy'), {
    ...named(get(pod, 'spec', 'containers'), 'envoy'),
    volumeMounts: [{ name: 'config', mountPath: '/config' }, MOUNT],
  });
  // After the patch the pod is done.
  assert.deepEqual(decide(patched), {
    gateway: 'done',
    reason: 'pod already has a proxy UUID',
  });
});

test('mutateGateway: a pod without labels, volumes or volumeMounts gets them created', () => {
  const pod = gatewayPod({ bare: true, labels: null });
  const info = readPod(pod);
  // decideGateway needs the label, so this branch is defensive: the patch must still apply.
  const patched = applyPatch(pod, mutateGateway(info, OPTIONS).patch);
  assert.deepEqual(get(patched, 'metadata', 'labels'), { 'skein.dev/proxy-uuid': UUID });
  assert.deepEqual(get(patched, 'spec', 'volumes'), [VOLUME]);
  assert.deepEqual(get(named(get(patched, 'spec', 'containers'), 'envoy'), 'volumeMounts'), [MOUNT]);
  assert.deepEqual(get(named(get(patched, 'spec', 'containers'), 'logs'), 'volumeMounts'), [
    { name: 'config', mountPath: '/logs' },
  ]);
});

test('mutateGateway: a gateway-kind common name, and the bootstrap Secret in the pod namespace boots that node', () => {
  const m = mutateGateway(readPod(gatewayPod()), OPTIONS);
  assert.equal(m.commonName, CN);
  const id = parseProxyCommonName(m.commonName);
  assert.deepEqual(
    [id.kind, id.uuid, id.serviceAccount, id.namespace],
    ['gateway', UUID, 'skein-ingress-gateway', CP],
  );
  assert.equal(m.secret.metadata.name, `skein-bootstrap-${UUID}`);
  assert.equal(m.secret.metadata.namespace, CP);
  assert.equal(m.secret.metadata.labels['skein.dev/proxy-uuid'], UUID);
  assert.equal(m.secret.stringData['tls.crt'], 'CERT');
  assert.equal(m.secret.stringData['tls.key'], 'KEY');
  assert.equal(m.secret.stringData['ca.crt'], 'CA');
  const bootstrap: Json = JSON.parse(m.secret.stringData['bootstrap.json'] ?? '');
  assert.equal(get(bootstrap, 'node', 'id'), CN);
  assert.equal(get(bootstrap, 'node', 'cluster'), `skein-ingress-gateway.${CP}`);
  // Kubelet's readiness probe of the gateway's Envoy needs the static readiness listener.
  assert.match(JSON.stringify(bootstrap), /15900/);
});

// ---- through the webhook (HTTPS, AdmissionReview in and out) ----------------

class Secrets {
  created: SecretManifest[] = [];
  async create(s: SecretManifest): Promise<void> {
    this.created.push(s);
  }
}

const namespaces: Record<string, NamespaceLike> = {
  [CP]: { metadata: { name: CP } },
  bookstore: {
    metadata: {
      name: 'bookstore',
      labels: { 'skein.dev/monitored-by': 'skein' },
      annotations: { 'skein.dev/sidecar-injection': 'enabled' },
    },
  },
};

interface Running {
  webhook: InjectorWebhook;
  port: number;
  secrets: Secrets;
  requests: CertificateRequest[];
  results: AdmissionResult[];
}

describe('the webhook gives a labelled control-plane pod the gateway identity', () => {
  let ca: BuiltinCA;
  let on: Running;
  let off: Running;

  async function start(ingressGateway: boolean): Promise<Running> {
    const serving = await ca.issueServerCert(['127.0.0.1']);
    const secrets = new Secrets();
    const requests: CertificateRequest[] = [];
    const results: AdmissionResult[] = [];
    const webhook = new InjectorWebhook({
      tls: { certPem: serving.certPem, keyPem: serving.keyPem },
      host: '127.0.0.1',
      port: 0,
      meshName: 'skein',
      trustDomain: 'cluster.local',
      controlPlaneNamespace: CP,
      images: OPTIONS.images,
      ca: {
        issue: (req: CertificateRequest): Promise<IssuedCertificate> => {
          requests.push(req);
          return ca.issue(req);
        },
      },
      secrets,
      namespaces: { get: async (name) => namespaces[name] },
      newUuid: () => UUID,
      observer: { onAdmission: (r) => results.push(r) },
      ingressGateway,
    });
    return { webhook, port: await webhook.start(), secrets, requests, results };
  }

  before(async () => {
    ca = await BuiltinCA.create();
    on = await start(true);
    off = await start(false);
  });
  after(async () => {
    await on.webhook.close();
    await off.webhook.close();
  });

  function admit(w: Running, object: JsonObject, dryRun = false): Promise<JsonObject> {
    const body = JSON.stringify({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: 'gw-1',
        kind: { group: '', version: 'v1', kind: 'Pod' },
        resource: { group: '', version: 'v1', resource: 'pods' },
        namespace: get(object, 'metadata', 'namespace'),
        operation: 'CREATE',
        object,
        dryRun,
      },
    });
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: w.port,
          path: MUTATE_PATH,
          method: 'POST',
          ca: ca.trustBundlePem,
          agent: false,
          headers: { 'content-type': 'application/json' },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            try {
              assert.equal(res.statusCode, 200, text);
              const parsed: unknown = JSON.parse(text);
              assert.ok(isJsonObject(parsed) && isJsonObject(parsed['response']), text);
              resolve(parsed['response']);
            } catch (err) {
              reject(err);
            }
          });
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  function patchOf(response: JsonObject): JsonPatchOperation[] {
    assert.equal(response['patchType'], 'JSONPatch');
    const ops: unknown = JSON.parse(Buffer.from(String(response['patch']), 'base64').toString('utf8'));
    assert.ok(Array.isArray(ops) && ops.every((op) => isJsonObject(op) && op['op'] === 'add'));
    return ops.map((op) => ({ op: 'add', path: String(op['path']), value: op['value'] }));
  }

  test('ingressGateway on: a patch, a gateway-kind certificate from skein CA in the bootstrap Secret', async () => {
    const pod = gatewayPod();
    const response = await admit(on, pod);
    assert.equal(response['allowed'], true);
    const patched = applyPatch(pod, patchOf(response));
    assert.ok(isJsonObject(patched));
    assert.equal(get(patched, 'metadata', 'labels', 'skein.dev/proxy-uuid'), UUID);
    assert.deepEqual(get(named(get(patched, 'spec', 'containers'), 'envoy'), 'volumeMounts', 1), MOUNT);
    assert.equal(on.results.at(-1), 'injected');

    assert.deepEqual(
      on.requests.map((r) => [r.commonName, r.usage]),
      [[CN, 'client']],
    );
    assert.equal(on.secrets.created.length, 1);
    const secret = on.secrets.created[0];
    assert.equal(secret?.metadata.namespace, CP);
    const cert = new X509Certificate(secret?.stringData['tls.crt'] ?? '');
    assert.match(cert.subject, new RegExp(`CN=${CN.replaceAll('.', '\\.')}`));
    assert.ok(cert.checkIssued(new X509Certificate(ca.trustBundlePem)), 'issued by skein CA');

    // Reinvocation: the patched pod is left alone, nothing issued again.
    const again = await admit(on, patched);
    assert.deepEqual([again['allowed'], again['patch']], [true, undefined]);
    assert.equal(on.requests.length, 1);
    assert.equal(on.results.at(-1), 'skipped');

    // A dry run: the patch, no Secret.
    const dry = await admit(on, gatewayPod(), true);
    assert.equal(dry['patchType'], 'JSONPatch');
    assert.equal(on.secrets.created.length, 1);
  });

  test('refusals say why: gateway off, another namespace, no envoy container; a sidecar pod is unaffected', async () => {
    const message = (r: JsonObject) => String(get(r, 'status', 'message'));
    const offAnswer = await admit(off, gatewayPod());
    assert.equal(offAnswer['allowed'], false);
    assert.equal(get(offAnswer, 'status', 'code'), 400);
    assert.match(message(offAnswer), /without --ingress-gateway/);
    assert.equal(off.results.at(-1), 'denied');

    const elsewhere = await admit(on, gatewayPod({ namespace: 'bookstore' }));
    assert.equal(elsewhere['allowed'], false);
    assert.match(message(elsewhere), /only in the control-plane namespace skein-system, not bookstore/);
    const noEnvoy = await admit(on, gatewayPod({ containers: [{ name: 'app', image: 'x' }] }));
    assert.equal(noEnvoy['allowed'], false);
    assert.match(message(noEnvoy), /has no container named envoy/);

    // An ordinary meshed pod still gets its sidecar (the gateway branch is not in its way).
    const before = on.requests.length;
    const app = gatewayPod({
      namespace: 'bookstore',
      labels: { app: 'web' },
      containers: [{ name: 'web', image: 'web' }],
    });
    const sidecar = await admit(on, app);
    assert.equal(sidecar['allowed'], true);
    const containers = get(applyPatch(app, patchOf(sidecar)), 'spec', 'containers');
    assert.ok(Array.isArray(containers) && containers.some((c) => get(c, 'name') === 'envoy'));
    assert.match(on.requests[before]?.commonName ?? '', /\.sidecar\./);
  });
});
