import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { request } from 'node:https';
import { after, before, test } from 'node:test';
import { applyPatch } from '../../test/support/injector/apply-patch.js';
import { get } from '../../test/support/injector/json-path.js';
import { BuiltinCA } from '../certificate/builtin.js';
import type { CertificateRequest, IssuedCertificate } from '../certificate/types.js';
import type { JsonPatchOperation } from './jsonpatch.js';
import type { NamespaceLike, SecretManifest } from './mutate.js';
import { isJsonObject, type Json, type JsonObject } from './pod.js';
import { DEFAULT_SIDECAR_SETTINGS, type SidecarSettings } from './sidecar-settings.js';
import { type AdmissionResult, InjectorWebhook, MUTATE_PATH, type SecretWriter } from './webhook.js';

const UUIDS = [
  '11111111-1111-4111-8111-111111111111',
  '22222222-2222-4222-8222-222222222222',
  '33333333-3333-4333-8333-333333333333',
];

const namespaces: Record<string, NamespaceLike> = {
  bookstore: {
    metadata: {
      name: 'bookstore',
      labels: { 'skein.dev/monitored-by': 'skein' },
      annotations: { 'skein.dev/sidecar-injection': 'enabled' },
    },
  },
  plain: { metadata: { name: 'plain', annotations: { 'skein.dev/sidecar-injection': 'enabled' } } },
};

class FakeSecrets implements SecretWriter {
  created: SecretManifest[] = [];
  fail = false;
  async create(secret: SecretManifest): Promise<void> {
    if (this.fail) throw new Error('secrets "x" is forbidden: no RBAC');
    this.created.push(secret);
  }
}

let ca: BuiltinCA;
let webhook: InjectorWebhook;
let port: number;
const secrets = new FakeSecrets();
let issued = 0;
/** What the observer hook reported, in order. */
const results: AdmissionResult[] = [];
/** The mesh's sidecar settings as the controller would hand them over; tests change them. */
let meshSidecar: SidecarSettings = { ...DEFAULT_SIDECAR_SETTINGS };

before(async () => {
  ca = await BuiltinCA.create();
  const serving = await ca.issueServerCert(['127.0.0.1']);
  const uuids = [...UUIDS];
  webhook = new InjectorWebhook({
    tls: { certPem: serving.certPem, keyPem: serving.keyPem },
    host: '127.0.0.1',
    port: 0,
    meshName: 'skein',
    trustDomain: 'cluster.local',
    controlPlaneNamespace: 'skein-system',
    images: { envoy: 'envoyproxy/envoy:v1.40.0', init: 'skein/init:v0.1.0' },
    ca: {
      issue: (req: CertificateRequest): Promise<IssuedCertificate> => {
        issued++;
        return ca.issue(req);
      },
    },
    secrets,
    namespaces: { get: async (name) => namespaces[name] },
    newUuid: () => uuids.shift() ?? 'ffffffff-ffff-4fff-8fff-ffffffffffff',
    observer: { onAdmission: (r) => results.push(r) },
    sidecarSettings: () => meshSidecar,
  });
  port = await webhook.start();
});

after(async () => {
  await webhook.close();
});

/** One HTTPS request trusting only skein's CA; no keep-alive so nothing lingers. */
function post(body: string, path = MUTATE_PATH, method = 'POST'): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method,
        ca: ca.trustBundlePem,
        agent: false,
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

function podJson(
  namespace: string,
  opts: { annotations?: Record<string, string>; hostNetwork?: boolean } = {},
): JsonObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'bookbuyer-1',
      namespace,
      labels: { app: 'bookbuyer' },
      annotations: opts.annotations ?? {},
    },
    spec: {
      serviceAccountName: 'bookbuyer',
      ...(opts.hostNetwork ? { hostNetwork: true } : {}),
      containers: [
        {
          name: 'bookbuyer',
          image: 'bookbuyer:v1',
          ports: [{ name: 'http', containerPort: 14001 }],
          readinessProbe: { httpGet: { path: '/ready', port: 'http' }, periodSeconds: 5 },
        },
      ],
    },
  };
}

function admission(object: Json, extra: JsonObject = {}): string {
  return JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: 'req-1',
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      namespace:
        isJsonObject(object) && isJsonObject(object['metadata'])
          ? (object['metadata']['namespace'] ?? '')
          : '',
      operation: 'CREATE',
      object,
      ...extra,
    },
  });
}

interface Answer {
  uid: string;
  allowed: boolean;
  patchType?: string;
  patch?: string;
  status?: { code: number; message: string };
}

async function admit(object: Json, extra: JsonObject = {}): Promise<Answer> {
  const { status, text } = await post(admission(object, extra));
  assert.equal(status, 200, text);
  const body: unknown = JSON.parse(text);
  assert.ok(isJsonObject(body));
  assert.equal(body['apiVersion'], 'admission.k8s.io/v1');
  assert.equal(body['kind'], 'AdmissionReview');
  const r = body['response'];
  assert.ok(isJsonObject(r) && typeof r['uid'] === 'string' && typeof r['allowed'] === 'boolean');
  const answer: Answer = { uid: r['uid'], allowed: r['allowed'] };
  if (typeof r['patchType'] === 'string') answer.patchType = r['patchType'];
  if (typeof r['patch'] === 'string') answer.patch = r['patch'];
  const s = r['status'];
  if (isJsonObject(s) && typeof s['code'] === 'number' && typeof s['message'] === 'string')
    answer.status = { code: s['code'], message: s['message'] };
  return answer;
}

function decodePatch(answer: Answer): JsonPatchOperation[] {
  assert.equal(answer.patchType, 'JSONPatch');
  const ops: unknown = JSON.parse(Buffer.from(answer.patch ?? '', 'base64').toString('utf8'));
  assert.ok(Array.isArray(ops));
  return ops.map((op): JsonPatchOperation => {
    assert.ok(isJsonObject(op) && typeof op['path'] === 'string');
    if (op['op'] === 'add' || op['op'] === 'replace')
      return { op: op['op'], path: op['path'], value: op['value'] ?? null };
    assert.equal(op['op'], 'remove');
    return { op: 'remove', path: op['path'] };
  });
}

test('AdmissionReview in, JSON Patch out: the patched pod has the sidecar; its Secret holds a CA-signed proxy cert', async () => {
  const start = secrets.created.length;
  const pod = podJson('bookstore');
  const answer = await admit(pod);
  assert.equal(answer.uid, 'req-1');
  assert.equal(answer.allowed, true);
  const patched = applyPatch(pod, decodePatch(answer));

  const uuid = UUIDS[0] ?? '';
  assert.equal(get(patched, 'metadata', 'labels', 'skein.dev/proxy-uuid'), uuid);
  const containers = get(patched, 'spec', 'containers');
  assert.ok(Array.isArray(containers));
  assert.deepEqual(
    containers.map((c) => get(c, 'name')),
    ['bookbuyer', 'envoy'],
  );
  assert.equal(get(containers, 1, 'securityContext', 'runAsUser'), 1500);
  assert.deepEqual(get(patched, 'spec', 'initContainers', 0, 'securityContext', 'capabilities', 'add'), [
    'NET_ADMIN',
    'NET_RAW',
  ]);
  assert.match(
    String(get(patched, 'spec', 'initContainers', 0, 'env', 0, 'value')),
    /REDIRECT --to-ports 15001/,
  );
  assert.deepEqual(get(patched, 'spec', 'volumes'), [
    { name: 'skein-bootstrap', secret: { secretName: `skein-bootstrap-${uuid}` } },
  ]);
  assert.deepEqual(get(containers, 0, 'readinessProbe'), {
    httpGet: { path: '/skein-probe/bookbuyer/readiness', port: 15902, scheme: 'HTTP' },
    periodSeconds: 5,
  });

  assert.equal(secrets.created.length, start + 1);
  const secret = secrets.created.at(-1);
  assert.ok(secret);
  assert.equal(secret.metadata.name, `skein-bootstrap-${uuid}`);
  assert.equal(secret.metadata.namespace, 'bookstore');
  const cn = `${uuid}.sidecar.bookbuyer.bookstore.cluster.local`;
  const cert = new X509Certificate(secret.stringData['tls.crt'] ?? '');
  assert.match(cert.subject, new RegExp(`CN=${cn.replaceAll('.', '\\.')}`));
  assert.ok(cert.checkIssued(new X509Certificate(ca.trustBundlePem)), 'issued by skein CA');
  assert.equal(secret.stringData['ca.crt'], ca.trustBundlePem);
  const bootstrap: Json = JSON.parse(secret.stringData['bootstrap.json'] ?? '');
  assert.equal(get(bootstrap, 'node', 'id'), cn);

  // A second admission of the patched pod (reinvocation) does not inject again.
  const issuedBefore = issued;
  const again = await admit(patched);
  assert.deepEqual(again, { uid: 'req-1', allowed: true });
  assert.equal(secrets.created.length, start + 1);
  assert.equal(issued, issuedBefore);
});

test('unlabelled namespace, disabled annotation, hostNetwork, other kinds and operations: allowed, no patch', async () => {
  const start = { secrets: secrets.created.length, issued, results: results.length };
  const cases: [string, Json, JsonObject][] = [
    ['unlabelled namespace', podJson('plain'), {}],
    [
      'pod disables injection',
      podJson('bookstore', { annotations: { 'skein.dev/sidecar-injection': 'disabled' } }),
      {},
    ],
    ['hostNetwork', podJson('bookstore', { hostNetwork: true }), {}],
    ['UPDATE', podJson('bookstore'), { operation: 'UPDATE' }],
    [
      'not a pod',
      { kind: 'Service', metadata: { namespace: 'bookstore' } },
      { kind: { group: '', version: 'v1', kind: 'Service' } },
    ],
  ];
  for (const [name, object, extra] of cases)
    assert.deepEqual(await admit(object, extra), { uid: 'req-1', allowed: true }, name);
  assert.deepEqual(results.slice(start.results), Array(cases.length).fill('skipped'));
  assert.equal(secrets.created.length, start.secrets);
  assert.equal(issued, start.issued);
});

test('invalid annotations, unknown namespaces and failed Secret writes are clear admission errors', async () => {
  const start = { secrets: secrets.created.length, issued, results: results.length };
  const bad = await admit(
    podJson('bookstore', { annotations: { 'skein.dev/outbound-ip-range-exclusion-list': '10.0.0.0/40' } }),
  );
  assert.equal(bad.allowed, false);
  assert.equal(bad.status?.code, 400);
  assert.match(
    bad.status?.message ?? '',
    /skein.dev\/outbound-ip-range-exclusion-list: "10.0.0.0\/40" has a prefix length/,
  );
  assert.equal(issued, start.issued, 'no certificate for a refused pod');

  const missing = await admit(podJson('nowhere'));
  assert.equal(missing.allowed, false);
  assert.match(missing.status?.message ?? '', /namespace nowhere does not exist/);

  const notPod = await admit('just a string');
  assert.equal(notPod.allowed, false);
  assert.match(notPod.status?.message ?? '', /not a Pod object/);

  secrets.fail = true;
  try {
    const failed = await admit(podJson('bookstore'));
    assert.equal(failed.allowed, false);
    assert.equal(failed.status?.code, 500);
    assert.match(failed.status?.message ?? '', /forbidden: no RBAC/);
  } finally {
    secrets.fail = false;
  }
  // Refusals the pod's author must fix are `denied`; the webhook failing its own job is `error`.
  assert.deepEqual(results.slice(start.results), ['denied', 'denied', 'denied', 'error']);
  assert.equal(secrets.created.length, start.secrets);
});

test('a dry run gets the patch but creates no Secret', async () => {
  const start = secrets.created.length;
  const answer = await admit(podJson('bookstore'), { dryRun: true });
  assert.equal(results.at(-1), 'injected');
  assert.equal(answer.allowed, true);
  assert.ok(decodePatch(answer).length > 0);
  assert.equal(secrets.created.length, start);
});

test('malformed requests get 4xx and the server keeps serving', async () => {
  const malformed = await post('{"apiVersion": ');
  assert.equal(malformed.status, 400);
  assert.match(malformed.text, /malformed JSON/);
  const wrongShape = await post(
    JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' }),
  );
  assert.equal(wrongShape.status, 400);
  assert.match(wrongShape.text, /request.uid/);
  assert.equal((await post('', MUTATE_PATH, 'GET')).status, 405);
  assert.equal((await post('{}', '/elsewhere')).status, 404);
  assert.equal((await post('', '/healthz', 'GET')).status, 200);
  // Still answers a real review afterwards.
  assert.equal((await admit(podJson('plain'))).allowed, true);
});

test('sidecar settings are read at each admission: a MeshConfig change applies to the next pod, an annotation wins', async () => {
  const bootstrapSettings = async (annotations: Record<string, string> = {}): Promise<[Json, Json]> => {
    const answer = await admit(podJson('bookstore', { annotations }));
    assert.equal(answer.allowed, true, answer.status?.message);
    const bootstrap: Json = JSON.parse(secrets.created.at(-1)?.stringData['bootstrap.json'] ?? '');
    return [
      get(bootstrap, 'dynamic_resources', 'ads_config', 'api_type'),
      get(
        bootstrap,
        'overload_manager',
        'resource_monitors',
        0,
        'typed_config',
        'max_active_downstream_connections',
      ),
    ];
  };
  try {
    assert.deepEqual(await bootstrapSettings(), ['GRPC', 50_000]);
    meshSidecar = { xdsTransport: 'delta', maxDownstreamConnections: 9000, logLevel: 'warn' };
    assert.deepEqual(await bootstrapSettings(), ['DELTA_GRPC', 9000]);
    assert.deepEqual(
      await bootstrapSettings({
        'skein.dev/xds-transport': 'sotw',
        'skein.dev/max-downstream-connections': '64',
      }),
      ['GRPC', 64],
    );
    const before = issued;
    const refused = await admit(podJson('bookstore', { annotations: { 'skein.dev/xds-transport': 'grpc' } }));
    assert.equal(refused.allowed, false);
    assert.equal(refused.status?.code, 400);
    assert.equal(
      refused.status?.message,
      'skein sidecar injection: annotation skein.dev/xds-transport on pod bookbuyer-1 is "grpc"; use "sotw" or "delta"',
    );
    assert.equal(issued, before, 'no certificate for a refused pod');
  } finally {
    meshSidecar = { ...DEFAULT_SIDECAR_SETTINGS };
  }
});
