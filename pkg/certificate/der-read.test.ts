import assert from 'node:assert/strict';
import { verify, X509Certificate } from 'node:crypto';
import { describe, it } from 'node:test';
import './reflect-shim.js';
import * as x509 from '@peculiar/x509';
import { rsaRoot } from '../../test/support/rsa-root.js';
import { BuiltinCA } from './builtin.js';
import { ECDSA_WITH_SHA256_DER, MalformedDerError, readLeaf, subjectNameDer } from './der-read.js';

const DAY = 24 * 60 * 60 * 1000;

/** What X509Certificate (OpenSSL) reads of the same certificate, in readLeaf's terms. */
function openssl(x: X509Certificate) {
  const sans = (x.subjectAltName ?? '').split(', ');
  return {
    serialNumber: x.serialNumber.toLowerCase(),
    notBefore: new Date(x.validFrom).getTime(),
    notAfter: new Date(x.validTo).getTime(),
    subject: x.subject,
    uriSans: sans.filter((n) => n.startsWith('URI:')).map((n) => n.slice(4)),
    dnsSans: sans.filter((n) => n.startsWith('DNS:')).map((n) => n.slice(4)),
  };
}

describe('readLeaf', () => {
  it('reads what OpenSSL reads of the leaves skein issues, and their signature verifies with the root key', async () => {
    const ca = await BuiltinCA.create();
    const root = new X509Certificate(ca.rootCertPem);
    // Random serials: about half have the top bit set (a sign byte) and some a leading zero byte.
    for (let i = 0; i < 40; i++) {
      const issued = await ca.issue({
        commonName: `sa-${i}.ns.cluster.local`,
        uriSans: [`spiffe://cluster.local/ns/ns/sa/sa-${i}`],
        dnsSans: i % 2 ? [`sa-${i}.ns.svc`, `sa-${i}.ns.svc.cluster.local`] : [],
        validityMs: (i + 1) * DAY,
        usage: i % 3 ? 'both' : 'server',
      });
      const x = new X509Certificate(issued.certPem);
      const leaf = readLeaf(x.raw);
      const want = openssl(x);
      assert.equal(leaf.serialNumber, want.serialNumber);
      assert.equal(leaf.serialNumber, issued.serialNumber);
      assert.equal(leaf.notBefore.getTime(), want.notBefore);
      assert.equal(leaf.notAfter.getTime(), want.notAfter);
      assert.equal(`CN=${leaf.subjectCommonName}`, want.subject);
      assert.deepEqual(leaf.uriSans, want.uriSans);
      assert.deepEqual(leaf.dnsSans, want.dnsSans);
      assert.ok(leaf.signatureAlgorithm.equals(ECDSA_WITH_SHA256_DER));
      assert.ok(leaf.issuer.equals(subjectNameDer(root.raw)));
      assert.ok(verify('sha256', leaf.tbs, root.publicKey, leaf.signature));
      assert.ok(
        !verify('sha256', Buffer.concat([leaf.tbs, Buffer.from([0])]), root.publicKey, leaf.signature),
      );
    }
  });

  it('reads a certificate another library wrote: RSA signature, a subject of several attributes, GeneralizedTime', async () => {
    const { cert } = await rsaRoot({
      serialNumber: '00ff01',
      name: 'CN=other, O=elsewhere',
      notBefore: new Date('2026-01-01T00:00:00Z'),
      notAfter: new Date('2051-06-30T12:00:00Z'),
      extensions: [
        new x509.SubjectAlternativeNameExtension([
          { type: 'url', value: 'spiffe://x/y' },
          { type: 'ip', value: '10.0.0.1' },
        ]),
      ],
    });
    const der = Buffer.from(cert.rawData);
    const leaf = readLeaf(der);
    const want = openssl(new X509Certificate(der));
    assert.equal(leaf.subjectCommonName, undefined);
    assert.equal(leaf.serialNumber, want.serialNumber);
    assert.equal(leaf.notAfter.toISOString(), '2051-06-30T12:00:00.000Z');
    assert.equal(leaf.notBefore.getTime(), want.notBefore);
    assert.deepEqual(leaf.uriSans, ['spiffe://x/y']);
    assert.deepEqual(leaf.dnsSans, []);
    assert.ok(!leaf.signatureAlgorithm.equals(ECDSA_WITH_SHA256_DER));
  });

  it('throws MalformedDerError, and only that, for every truncation and for flipped bytes', async () => {
    const ca = await BuiltinCA.create();
    const issued = await ca.issue({
      commonName: 'a.b.cluster.local',
      uriSans: ['spiffe://cluster.local/ns/b/sa/a'],
      validityMs: DAY,
    });
    const der = new X509Certificate(issued.certPem).raw;
    for (let n = 0; n < der.length; n++)
      assert.throws(() => readLeaf(der.subarray(0, n)), MalformedDerError, `truncated to ${n}`);
    // A flipped byte may still read (in a name, a time digit) or not: it never reads out of bounds.
    let refused = 0;
    for (let at = 0; at < der.length; at++) {
      const bad = Buffer.from(der);
      bad[at] = (bad[at] as number) ^ 0xa5;
      try {
        readLeaf(bad);
      } catch (err) {
        assert.ok(err instanceof MalformedDerError, `byte ${at}: ${String(err)}`);
        refused++;
      }
    }
    assert.ok(refused > 0);
  });
});
