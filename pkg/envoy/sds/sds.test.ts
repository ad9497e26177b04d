import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { MeshView } from '../../catalog/types.js';
import { decodeMessage, encodeMessage } from '../../xds/proto/codec.js';
import {
  bookstoreMesh,
  FAKE_TRUST_BUNDLE,
  fakeSecrets,
  POD_NAMES,
  type PodName,
  proxyFor,
} from '../testing/mesh.js';
import { at, list, named } from '../testing/pick.js';
import { TypeUrl } from '../types.js';
import { sdsGenerator } from './sds.js';

function sds(
  mesh: MeshView,
  pod: PodName,
  requested: string[] | undefined,
  issued: string[] | 'all' = 'all',
) {
  const req = requested ? new Set(requested) : undefined;
  return sdsGenerator.generate(proxyFor(mesh, pod), { mesh, secrets: fakeSecrets(issued) }, req);
}

test("serves the proxy's own service cert, never another identity's", () => {
  const out = sds(bookstoreMesh(), 'bookbuyer-1', [
    'service-cert:bookbuyer/bookbuyer',
    'service-cert:bookstore/bookstore-v1',
    'service-cert:bookthief/bookthief',
    'root-cert-for-mtls-inbound:bookstore/bookstore-v1',
  ]);
  assert.deepEqual(
    out.map((r) => r.name),
    ['service-cert:bookbuyer/bookbuyer'],
  );
  assert.deepEqual(out[0]?.message, {
    name: 'service-cert:bookbuyer/bookbuyer',
    tls_certificate: {
      certificate_chain: {
        inline_string: fakeSecrets('all').serviceCertificate('bookbuyer/bookbuyer')?.certPem ?? '',
      },
      private_key: {
        inline_string: fakeSecrets('all').serviceCertificate('bookbuyer/bookbuyer')?.keyPem ?? '',
      },
    },
  });
  // Even a wildcard-style request (all it references) never includes another identity's key.
  for (const mesh of [bookstoreMesh(), bookstoreMesh({ permissive: true })]) {
    for (const pod of POD_NAMES) {
      const proxy = proxyFor(mesh, pod);
      const own = `service-cert:${proxy.identity.namespace}/${proxy.identity.serviceAccount}`;
      const certs = sds(mesh, pod, undefined).filter((r) => r.name.startsWith('service-cert:'));
      assert.deepEqual(
        certs.map((r) => r.name),
        [own],
      );
    }
  }
});

test('a certificate not issued yet is omitted', () => {
  assert.deepEqual(sds(bookstoreMesh(), 'bookbuyer-1', ['service-cert:bookbuyer/bookbuyer'], []), []);
});

test('inbound validation: only the allowed sources in SMI mode, just the CA in permissive mode', () => {
  const name = 'root-cert-for-mtls-inbound:bookstore/bookstore-v1';
  assert.deepEqual(named(sds(bookstoreMesh(), 'bookstore-v1-1', [name]), name), {
    name,
    validation_context: {
      trusted_ca: { inline_string: FAKE_TRUST_BUNDLE },
      match_typed_subject_alt_names: [
        { san_type: 3, matcher: { exact: 'spiffe://cluster.local/ns/bookbuyer/sa/bookbuyer' } }, // 3: URI
      ],
    },
  });
  assert.deepEqual(named(sds(bookstoreMesh({ permissive: true }), 'bookstore-v1-1', [name]), name), {
    name,
    validation_context: { trusted_ca: { inline_string: FAKE_TRUST_BUNDLE } },
  });
  // Another identity's inbound root is not served.
  assert.deepEqual(sds(bookstoreMesh(), 'bookbuyer-1', [name]), []);
});

test("outbound validation: the service's identities, only for services the proxy may call", () => {
  const v2 = 'root-cert-for-mtls-outbound:bookstore/bookstore-v2';
  assert.deepEqual(named(sds(bookstoreMesh(), 'bookbuyer-1', [v2]), v2), {
    name: v2,
    validation_context: {
      trusted_ca: { inline_string: FAKE_TRUST_BUNDLE },
      match_typed_subject_alt_names: [
        { san_type: 3, matcher: { exact: 'spiffe://cluster.local/ns/bookstore/sa/bookstore-v2' } },
      ],
    },
  });
  assert.deepEqual(sds(bookstoreMesh(), 'bookthief-1', [v2]), []);
  assert.equal(sds(bookstoreMesh({ permissive: true }), 'bookthief-1', [v2]).length, 1);
  // Unknown names are ignored.
  assert.deepEqual(sds(bookstoreMesh(), 'bookbuyer-1', ['nope', 'root-cert-for-mtls-outbound:x/y']), []);
});

test('the typed SAN matchers survive encoding (protobufjs drops fields the loaded protos lack)', () => {
  const mesh = bookstoreMesh();
  for (const [pod, name] of [
    ['bookbuyer-1', 'root-cert-for-mtls-outbound:bookstore/bookstore-v1'],
    ['bookstore-v1-1', 'root-cert-for-mtls-inbound:bookstore/bookstore-v1'],
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

test('without a request, serves everything the proxy references', () => {
  assert.deepEqual(
    sds(bookstoreMesh(), 'bookbuyer-1', undefined).map((r) => r.name),
    [
      'root-cert-for-mtls-inbound:bookbuyer/bookbuyer',
      'root-cert-for-mtls-outbound:bookstore/bookstore-v1',
      'root-cert-for-mtls-outbound:bookstore/bookstore-v2',
      'service-cert:bookbuyer/bookbuyer',
    ],
  );
});
