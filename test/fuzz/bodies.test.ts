// Hostile bodies for the parsers in front of the webhook, REST xDS and local
// mode: random mutations of valid inputs, non-JSON and huge ones. Each parser
// must answer with its clear failure (undefined, a RestRequestError for a
// 400, problems naming the file and reason), never throw anything else.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TypeUrl } from '../../pkg/envoy/types.js';
import { parseAdmissionReview } from '../../pkg/injector/webhook.js';
import { parseManifests } from '../../pkg/registry/local/manifests.js';
import { parseRestDiscoveryRequest, RestRequestError } from '../../pkg/xds/rest/request.js';
import { fuzz, fuzzConfig, type Json, mutateJson, mutateText, type Rng } from '../support/fuzz.js';

const REVIEW: Json = {
  apiVersion: 'admission.k8s.io/v1',
  kind: 'AdmissionReview',
  request: {
    uid: 'req-1',
    kind: { group: '', version: 'v1', kind: 'Pod' },
    operation: 'CREATE',
    namespace: 'bookstore',
    dryRun: false,
    object: {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p', labels: { app: 'bookstore' } },
      spec: { containers: [{ name: 'app', image: 'bookstore:v1', ports: [{ containerPort: 80 }] }] },
    },
  },
};

const REST: Json = {
  version_info: 'v1',
  node: { id: 'sidecar~10.0.0.1~p.bookstore~bookstore.svc.cluster.local', cluster: 'bookstore' },
  resource_names: ['bookstore/bookstore|80'],
  type_url: TypeUrl.ClusterLoadAssignment,
};

const MANIFEST = `apiVersion: v1
kind: Namespace
metadata:
  name: bookstore
  labels:
    skein.dev/monitored-by: skein
---
apiVersion: v1
kind: Service
metadata:
  name: bookstore
  namespace: bookstore
spec:
  selector:
    app: bookstore
  ports:
  - port: 80
    targetPort: 8080
---
apiVersion: v1
kind: Pod
metadata:
  name: bookstore-1
  namespace: bookstore
  labels:
    app: bookstore
spec:
  serviceAccountName: bookstore
  containers:
  - name: app
    image: bookstore:v1
`;

/** A body: a mutated valid one (mostly), or text that is not JSON, or a huge one. */
function body(rng: Rng, valid: Json): string {
  switch (rng.below(10)) {
    case 0:
      return mutateText(rng, JSON.stringify(valid));
    case 1:
      return rng.string(rng.between(0, 200));
    case 2:
      return JSON.stringify({ pad: 'x'.repeat(rng.between(100_000, 1_000_000)), ...(valid as object) });
    case 3:
      return '['.repeat(rng.between(1000, 20_000)); // deep nesting
    default:
      return JSON.stringify(mutateJson(rng, valid));
  }
}

function parseOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

test('AdmissionReview bodies: a request or undefined (answered 400), never a throw', async () => {
  const config = fuzzConfig(5000);
  let accepted = 0;
  await fuzz('admission', config, (rng) => {
    const r = parseAdmissionReview(parseOrUndefined(body(rng, REVIEW)));
    if (r === undefined) return;
    accepted++;
    assert.equal(typeof r.uid, 'string');
    assert.ok(r.uid.length > 0);
    assert.equal(typeof r.kind, 'string');
    assert.equal(typeof r.operation, 'string');
    assert.equal(typeof r.namespace, 'string');
  });
  // Mutations touch one part of the review: many still carry a valid envelope.
  assert.ok(accepted > 0 && accepted < config.cases, `accepted ${accepted} of ${config.cases}`);
});

test('REST xDS bodies: a request or a RestRequestError with a message (400), never another throw', async () => {
  const config = fuzzConfig(5000);
  let refused = 0;
  await fuzz('rest', config, (rng) => {
    try {
      const r = parseRestDiscoveryRequest(body(rng, REST), TypeUrl.ClusterLoadAssignment);
      assert.equal(r.typeUrl, TypeUrl.ClusterLoadAssignment);
      assert.ok(r.nodeId.length > 0, 'node.id is required');
      assert.ok(r.resourceNames.every((n) => typeof n === 'string'));
    } catch (err) {
      if (!(err instanceof RestRequestError)) throw err;
      assert.ok(err.message.length > 0);
      refused++;
    }
  });
  assert.ok(refused > 0 && refused < config.cases, `refused ${refused} of ${config.cases}`);
});

test('local-mode manifests: objects and problems naming the file and reason, never a throw', async () => {
  const config = fuzzConfig(2000);
  let problems = 0;
  await fuzz('manifests', config, (rng, i) => {
    const json = rng.chance(0.2);
    const file = `/m/case-${i}.${json ? 'json' : 'yaml'}`;
    const text = json
      ? body(rng, { apiVersion: 'v1', kind: 'Service', metadata: { name: 's', namespace: 'n' }, spec: {} })
      : rng.chance(0.1)
        ? `${MANIFEST}---\n`.repeat(rng.between(20, 100))
        : mutateText(rng, MANIFEST);
    const parsed = parseManifests(file, text);
    for (const p of parsed.problems) {
      assert.equal(p.source, file, 'a problem names its file');
      assert.ok(p.reason.length > 0, 'a problem says what is wrong');
      problems++;
    }
    for (const o of parsed.objects) assert.equal(typeof o.kind, 'string');
  });
  assert.ok(problems > 0, 'some mutation was reported');
});
