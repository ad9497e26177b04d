import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  bookstoreMesh,
  bookstoreObjects,
  FAKE_TRUST_BUNDLE,
  fakeSecrets,
  POD_NAMES,
  type PodName,
  proxyFor,
  storeOf,
  viewOf,
} from '../../../test/support/envoy/mesh.js';
import { at, list, named } from '../../../test/support/envoy/pick.js';
import type { MeshView } from '../../catalog/types.js';
import { spiffeId } from '../../mesh/identity.js';
import { decodeMessage, encodeMessage } from '../../xds/proto/codec.js';
import { TypeUrl } from '../types.js';
import { inboundSanMatchers, sdsGenerator } from './sds.js';

function sds(
  mesh: MeshView,
  pod: PodName,
  requested: string[] | undefined,
  issued: string[] | 'all' = 'all',
) {
  const req = requested ? new Set(requested) : undefined;
  return sdsGenerator.generate(proxyFor(mesh, pod), { mesh, secrets: fakeSecrets(issued) }, req);
}

/** The Secret an identity's certificate is served as, under `name`. */
function certSecret(name: string, identity: string) {
  const cert = fakeSecrets('all').serviceCertificate(identity);
  return {
    name,
    tls_certificate: {
      certificate_chain: { inline_string: cert?.certPem ?? '' },
      private_key: { inline_string: cert?.keyPem ?? '' },
    },
  };
}

test("serves the proxy's own service cert, under the fixed name and OSM's, never another identity's", () => {
  const out = sds(bookstoreMesh(), 'bookbuyer-1', [
    'service-cert:self',
    'service-cert:bookbuyer/bookbuyer',
    'service-cert:bookstore/bookstore-v1',
    'service-cert:bookthief/bookthief',
    'root-cert-for-mtls-inbound:bookstore/bookstore-v1',
  ]);
  assert.deepEqual(
    out.map((r) => r.message),
    [
      certSecret('service-cert:bookbuyer/bookbuyer', 'bookbuyer/bookbuyer'),
      certSecret('service-cert:self', 'bookbuyer/bookbuyer'),
    ],
  );
  // The fixed name is each caller's own key.
  assert.deepEqual(
    sds(bookstoreMesh(), 'bookthief-1', ['service-cert:self']).map((r) => r.message),
    [certSecret('service-cert:self', 'bookthief/bookthief')],
  );
  // Even a wildcard-style request (all it references) never includes another
  // identity's key, and references only the fixed name.
  for (const mesh of [bookstoreMesh(), bookstoreMesh({ permissive: true })]) {
    for (const pod of POD_NAMES) {
      const proxy = proxyFor(mesh, pod);
      const own = `${proxy.identity.namespace}/${proxy.identity.serviceAccount}`;
      const certs = sds(mesh, pod, undefined).filter((r) => r.name.startsWith('service-cert:'));
      assert.deepEqual(
        certs.map((r) => r.message),
        [certSecret('service-cert:self', own)],
      );
    }
  }
});

test('a certificate not issued yet is omitted', () => {
  assert.deepEqual(sds(bookstoreMesh(), 'bookbuyer-1', ['service-cert:self'], []), []);
});

const TD_PREFIX = [{ san_type: 3, matcher: { prefix: 'spiffe://cluster.local/' } }]; // 3: URI

test('inbound validation (HTTP ports): every identity of the trust domain, in both modes, whatever the policy', () => {
  const name = 'root-cert-for-mtls-inbound:bookstore/bookstore-v1';
  const expected = {
    name,
    validation_context: {
      trusted_ca: { inline_string: FAKE_TRUST_BUNDLE },
      match_typed_subject_alt_names: TD_PREFIX,
    },
  };
  const noPolicy = viewOf(storeOf(bookstoreObjects().filter((o) => o.kind !== 'TrafficTarget')));
  for (const mesh of [bookstoreMesh(), bookstoreMesh({ permissive: true }), noPolicy]) {
    assert.deepEqual(named(sds(mesh, 'bookstore-v1-1', [name]), name), expected);
  }
  // Not rebuilt per view or policy: one message per identity and trust bundle.
  assert.equal(
    named(sds(noPolicy, 'bookstore-v1-1', [name]), name),
    named(sds(bookstoreMesh(), 'bookstore-v1-2', [name]), name),
  );
  // Another identity's inbound root is not served.
  assert.deepEqual(sds(bookstoreMesh(), 'bookbuyer-1', [name]), []);
});

test("the trust-domain prefix admits every identity of the mesh and no other trust domain's", () => {
  const [matcher] = inboundSanMatchers('cluster.local');
  const prefix = at(matcher, 'matcher', 'prefix');
  assert.equal(typeof prefix, 'string');
  const id = { namespace: 'bookbuyer', serviceAccount: 'bookbuyer' };
  assert.ok(spiffeId(id, 'cluster.local').startsWith(String(prefix)));
  assert.ok(!spiffeId(id, 'cluster.local.evil').startsWith(String(prefix)));
  assert.ok(!spiffeId(id, 'cluster.localhost').startsWith(String(prefix)));
});

test('inbound validation (TCP ports): only the callers the port allows, pinned in the handshake', () => {
  const name = 'root-cert-for-mtls-inbound-tcp:bookwarehouse/bookwarehouse|13306';
  const sans = (mesh: MeshView) =>
    at(
      named(sds(mesh, 'bookwarehouse-1', [name]), name),
      'validation_context',
      'match_typed_subject_alt_names',
    );
  assert.deepEqual(sans(bookstoreMesh()), [
    { san_type: 3, matcher: { exact: 'spiffe://cluster.local/ns/bookstore/sa/bookstore-v1' } },
    { san_type: 3, matcher: { exact: 'spiffe://cluster.local/ns/bookstore/sa/bookstore-v2' } },
  ]);
  assert.deepEqual(sans(bookstoreMesh({ permissive: true })), TD_PREFIX);
  // Nobody allowed: a SAN no certificate has (an empty list would admit the whole CA).
  const noPolicy = viewOf(storeOf(bookstoreObjects().filter((o) => o.kind !== 'TrafficTarget')));
  assert.deepEqual(sans(noPolicy), [
    { san_type: 3, matcher: { exact: 'spiffe://cluster.local/skein/no-allowed-caller' } },
  ]);
  // Only the pod serving that TCP port gets it; an HTTP port has no such secret.
  assert.deepEqual(sds(bookstoreMesh(), 'mysql-1', [name]), []);
  const grpcPort = 'root-cert-for-mtls-inbound-tcp:bookwarehouse/bookwarehouse|14001';
  assert.deepEqual(sds(bookstoreMesh(), 'bookwarehouse-1', [grpcPort]), []);
});

test('outbound: one trust-bundle secret, the CA alone, the same message for every proxy', () => {
  const name = 'root-cert-for-mtls-outbound';
  const expected = { name, validation_context: { trusted_ca: { inline_string: FAKE_TRUST_BUNDLE } } };
  const buyer = named(sds(bookstoreMesh(), 'bookbuyer-1', [name]), name);
  // No SAN matchers: Envoy appends them to each cluster's own (cds/sidecar.ts), so any here would widen them.
  assert.deepEqual(buyer, expected);
  // Public data: a proxy SMI lets call nothing gets it too, as the very same message (one encoding).
  assert.equal(named(sds(bookstoreMesh(), 'bookthief-1', [name]), name), buyer);
  assert.equal(named(sds(bookstoreMesh({ permissive: true }), 'bookthief-1', [name]), name), buyer);
  // OSM's per-service validation contexts are no longer issued; unknown names are ignored.
  const v2 = 'root-cert-for-mtls-outbound:bookstore/bookstore-v2';
  assert.deepEqual(sds(bookstoreMesh(), 'bookbuyer-1', ['nope', v2]), []);
});

test('the typed SAN matchers survive encoding (protobufjs drops fields the loaded protos lack)', () => {
  const mesh = bookstoreMesh();
  for (const [pod, name] of [
    ['bookstore-v1-1', 'root-cert-for-mtls-inbound:bookstore/bookstore-v1'],
    ['bookwarehouse-1', 'root-cert-for-mtls-inbound-tcp:bookwarehouse/bookwarehouse|13306'],
  ] as const) {
    const message = named(sds(mesh, pod, [name]), name);
    const decoded = decodeMessage(TypeUrl.Secret, encodeMessage(TypeUrl.Secret, message));
    const sent = list(message, 'validation_context', 'match_typed_subject_alt_names');
    const back = list(decoded, 'validation_context', 'match_typed_subject_alt_names');
    assert.ok(sent.length > 0, name);
    assert.deepEqual(
      back,
      sent.map((m) => ({ san_type: 'URI', matcher: at(m, 'matcher') ?? null })),
      name,
    );
    assert.equal(at(decoded, 'validation_context', 'match_subject_alt_names'), undefined, name);
  }
});

test('without a request, serves everything the proxy references, pinned TCP contexts included', () => {
  const expected: [PodName, string[]][] = [
    [
      'bookbuyer-1',
      ['root-cert-for-mtls-inbound:bookbuyer/bookbuyer', 'root-cert-for-mtls-outbound', 'service-cert:self'],
    ],
    [
      'bookwarehouse-1',
      [
        'root-cert-for-mtls-inbound-tcp:bookwarehouse/bookwarehouse|13306',
        'root-cert-for-mtls-inbound:bookwarehouse/bookwarehouse',
        'root-cert-for-mtls-outbound',
        'service-cert:self',
      ],
    ],
  ];
  for (const [pod, names] of expected) {
    assert.deepEqual(
      sds(bookstoreMesh(), pod, undefined).map((r) => r.name),
      names,
    );
  }
});
