import './reflect-shim.js';
import assert from 'node:assert/strict';
import { KeyObject, webcrypto, X509Certificate } from 'node:crypto';
import { before, test } from 'node:test';
import * as x509 from '@peculiar/x509';
import { decodeTlsSecret, IngressTlsSecrets, type TlsSecretEntry, tlsSecretProblem } from './ingress-tls.js';
import type { TlsKeyPair } from './types.js';

const crypto = webcrypto;
const DAY = 86_400_000;
const EC: webcrypto.EcKeyGenParams = { name: 'ECDSA', namedCurve: 'P-256' };

/** A self-signed certificate for `host` valid over [notBefore, notAfter], and its key. */
async function keyPair(host: string, notBefore: Date, notAfter: Date): Promise<TlsKeyPair> {
  const keys = await crypto.subtle.generateKey(EC, true, ['sign', 'verify']);
  const cert = await x509.X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: '01',
      name: [{ CN: [host] }],
      notBefore,
      notAfter,
      keys,
      signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
      extensions: [new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: host }])],
    },
    crypto,
  );
  return {
    certPem: cert.toString('pem'),
    keyPem: String(KeyObject.from(keys.privateKey).export({ type: 'pkcs8', format: 'pem' })),
  };
}

/** A Secret object as the API server returns it (data base64-encoded). */
function secret(data: Record<string, string | number> | undefined, type = 'kubernetes.io/tls') {
  const encoded =
    data &&
    Object.fromEntries(
      Object.entries(data).map(([k, v]) => [
        k,
        typeof v === 'string' ? Buffer.from(v).toString('base64') : v,
      ]),
    );
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 's', namespace: 'shop' },
    type,
    data: encoded,
  };
}

const tlsData = (p: TlsKeyPair) => ({ 'tls.crt': p.certPem, 'tls.key': p.keyPem });

let good: TlsKeyPair;
let renewed: TlsKeyPair;
let expired: TlsKeyPair;
let other: TlsKeyPair;

before(async () => {
  const now = Date.now();
  good = await keyPair('shop.example.com', new Date(now - DAY), new Date(now + 30 * DAY));
  renewed = await keyPair('shop.example.com', new Date(now - DAY), new Date(now + 60 * DAY));
  expired = await keyPair('shop.example.com', new Date(now - 30 * DAY), new Date(now - DAY));
  other = await keyPair('other.example.com', new Date(now - DAY), new Date(now + 30 * DAY));
});

const reasonOf = (e: TlsSecretEntry) => (e.ok ? 'ok' : e.reason);

test('decode: a valid kubernetes.io/tls Secret is its key pair', () => {
  const decoded = decodeTlsSecret(secret(tlsData(good)));
  assert.ok(decoded.ok);
  assert.deepEqual(decoded.pair, good);
  assert.equal(
    decoded.notAfter?.toISOString(),
    new Date(new X509Certificate(good.certPem).validTo).toISOString(),
  );
  assert.equal(tlsSecretProblem(good.certPem, good.keyPem), undefined);
});

test('decode: wrong type, missing keys, garbage, mismatched key and expiry each say why', () => {
  assert.equal(reasonOf(decodeTlsSecret(secret(tlsData(good), 'Opaque'))), 'not of type kubernetes.io/tls');
  assert.equal(reasonOf(decodeTlsSecret(secret(undefined))), 'no tls.crt');
  assert.equal(reasonOf(decodeTlsSecret(secret({ 'tls.key': good.keyPem }))), 'no tls.crt');
  assert.equal(reasonOf(decodeTlsSecret(secret({ 'tls.crt': good.certPem }))), 'no tls.key');
  assert.equal(reasonOf(decodeTlsSecret(secret({ 'tls.crt': good.certPem, 'tls.key': '' }))), 'no tls.key');
  // A non-string value (not what the API server sends) is no key at all, not a crash.
  assert.equal(reasonOf(decodeTlsSecret(secret({ 'tls.crt': 42, 'tls.key': good.keyPem }))), 'no tls.crt');
  assert.match(
    reasonOf(decodeTlsSecret(secret({ 'tls.crt': 'not a certificate', 'tls.key': good.keyPem }))),
    /^not a PEM certificate and key: /,
  );
  assert.match(
    reasonOf(decodeTlsSecret(secret({ 'tls.crt': good.certPem, 'tls.key': 'not a key' }))),
    /^not a PEM certificate and key: /,
  );
  assert.equal(
    reasonOf(decodeTlsSecret(secret({ 'tls.crt': good.certPem, 'tls.key': other.keyPem }))),
    'tls.key is not the key of the certificate in tls.crt',
  );
  assert.match(reasonOf(decodeTlsSecret(secret(tlsData(expired)))), /^the certificate expired on .+ GMT$/);
});

test('the last valid key pair stays in force after a bad update; a good one replaces it', () => {
  const store = new IngressTlsSecrets();
  store.upsert('shop/s', decodeTlsSecret(secret(tlsData(good))));
  const first = store.get('shop/s');
  assert.deepEqual(first, good);
  for (const bad of [tlsData(expired), { 'tls.crt': good.certPem, 'tls.key': other.keyPem }, {}]) {
    store.upsert('shop/s', decodeTlsSecret(secret(bad)));
    assert.equal(store.get('shop/s'), first, 'the previous pair, the same object');
  }
  store.upsert('shop/s', decodeTlsSecret(secret(tlsData(renewed))));
  assert.deepEqual(store.get('shop/s'), renewed);
  store.delete('shop/s');
  assert.equal(store.get('shop/s'), undefined);
});

test('issues: missing, bad, and bad while the previous pair serves; only for the Secrets asked about', () => {
  const store = new IngressTlsSecrets();
  store.upsert('shop/ok', decodeTlsSecret(secret(tlsData(good))));
  store.upsert('shop/was-ok', decodeTlsSecret(secret(tlsData(good))));
  store.upsert('shop/was-ok', decodeTlsSecret(secret(tlsData(expired))));
  store.upsert('shop/never-ok', decodeTlsSecret(secret(tlsData(good), 'Opaque')));
  store.upsert('shop/not-asked', decodeTlsSecret(secret({})));
  const issues = store.issues(['shop/ok', 'shop/was-ok', 'shop/never-ok', 'shop/missing']);
  assert.equal(issues.length, 3);
  assert.deepEqual(issues[1], {
    secret: 'shop/never-ok',
    reason: 'not of type kubernetes.io/tls',
    servingPrevious: false,
  });
  assert.deepEqual(issues[2], {
    secret: 'shop/missing',
    reason: 'no such kubernetes.io/tls Secret',
    servingPrevious: false,
  });
  assert.equal(issues[0]?.secret, 'shop/was-ok');
  assert.equal(issues[0]?.servingPrevious, true);
  assert.match(issues[0]?.reason ?? '', /^the certificate expired on /);
  // Fixed: the issue goes away.
  store.upsert('shop/was-ok', decodeTlsSecret(secret(tlsData(renewed))));
  assert.deepEqual(
    store.issues(['shop/was-ok']).map((i) => i.secret),
    [],
  );
  // Deleted: missing again, nothing served.
  store.delete('shop/was-ok');
  assert.deepEqual(store.issues(['shop/was-ok']), [
    { secret: 'shop/was-ok', reason: 'no such kubernetes.io/tls Secret', servingPrevious: false },
  ]);
});

test('version moves and change fires exactly once per real change', () => {
  const store = new IngressTlsSecrets();
  const changes: string[] = [];
  store.on('change', (key) => changes.push(key));
  const step = (what: () => void, changed: boolean, label: string) => {
    const before = { version: store.version, changes: changes.length };
    what();
    assert.equal(store.version, before.version + (changed ? 1 : 0), `${label}: version`);
    assert.equal(changes.length, before.changes + (changed ? 1 : 0), `${label}: change events`);
    if (changed) assert.equal(changes.at(-1), 'shop/s', label);
  };
  const up = (data: Record<string, string>) => () => store.upsert('shop/s', decodeTlsSecret(secret(data)));
  step(up(tlsData(good)), true, 'first valid');
  step(up(tlsData(good)), false, 'the same pair again (a resync)');
  step(up(tlsData(expired)), true, 'invalid');
  step(up(tlsData(expired)), false, 'the same invalid again');
  step(up({ 'tls.crt': good.certPem, 'tls.key': other.keyPem }), true, 'invalid for another reason');
  step(up(tlsData(good)), true, 'valid again (the issue is gone, even with the same pair)');
  step(up(tlsData(renewed)), true, 'renewed');
  step(() => store.delete('shop/s'), true, 'deleted');
  step(() => store.delete('shop/s'), false, 'deleted again');
  step(() => store.delete('shop/never'), false, 'never known');
  // Another key's change names that key.
  store.upsert('shop/t', decodeTlsSecret(secret(tlsData(good))));
  assert.equal(changes.at(-1), 'shop/t');
});

test('issues: a certificate that expires while in force is reported, and still presented', () => {
  const store = new IngressTlsSecrets();
  const notAfter = new Date('2030-01-01T00:00:00Z');
  store.upsert('shop/tls', { ok: true, pair: { certPem: 'c', keyPem: 'k' }, notAfter });
  assert.deepEqual(store.issues(['shop/tls'], notAfter.getTime() - 1), []);
  assert.deepEqual(store.issues(['shop/tls'], notAfter.getTime() + 1), [
    {
      secret: 'shop/tls',
      reason: 'the certificate expired on 2030-01-01T00:00:00.000Z',
      servingPrevious: true,
    },
  ]);
  assert.ok(store.get('shop/tls'), 'still presented');
});
