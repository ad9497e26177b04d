import assert from 'node:assert/strict';
import { createHash, createPrivateKey, X509Certificate } from 'node:crypto';
import { describe, it } from 'node:test';
import './reflect-shim.js';
import * as x509 from '@peculiar/x509';
import { BuiltinCA } from './builtin.js';
import { subjectKeyIdOf, subjectNameDer } from './der-read.js';
import { authorityKeyIdExtension, createEcRoot, issueEcLeaf, type LeafIssuer } from './leaf-der.js';

async function issuerOf(ca: BuiltinCA): Promise<LeafIssuer> {
  const root = new x509.X509Certificate(ca.rootCertPem);
  const ski = root.getExtension(x509.SubjectKeyIdentifierExtension);
  assert.ok(ski);
  return {
    key: createPrivateKey(ca.rootKeyPem),
    nameDer: subjectNameDer(new X509Certificate(ca.rootCertPem).raw),
    authorityKeyIdDer: Buffer.from(new x509.AuthorityKeyIdentifierExtension(ski.keyId).rawData),
  };
}

const REQUEST = {
  serialHex: '7f0102030405060708090a0b0c0d0e0f',
  commonName: 'web.shop.cluster.local',
  notBefore: new Date('2049-12-31T23:59:59Z'),
  notAfter: new Date('2050-01-01T00:00:00Z'),
  dnsSans: ['web.shop.svc'],
  ipSans: ['10.1.2.3', '::1', 'fd00::a:1'],
  uriSans: ['spiffe://cluster.local/ns/shop/sa/web'],
  serverAuth: true,
  clientAuth: true,
};

describe('issueEcLeaf (DER fast path)', () => {
  it('writes a certificate both X.509 parsers read back field for field, signed by the root', async () => {
    const ca = await BuiltinCA.create();
    const { certPem, keyPem } = await issueEcLeaf(await issuerOf(ca), REQUEST);
    const leaf = new X509Certificate(certPem);
    const root = new X509Certificate(ca.rootCertPem);
    assert.ok(leaf.verify(root.publicKey));
    assert.ok(leaf.checkIssued(root));
    assert.ok(leaf.checkPrivateKey(createPrivateKey(keyPem)));
    assert.equal(leaf.subject, 'CN=web.shop.cluster.local');
    assert.equal(leaf.serialNumber.toLowerCase(), REQUEST.serialHex);
    // UTCTime through 2049, GeneralizedTime from 2050 (RFC 5280 §4.1.2.5).
    assert.equal(Date.parse(leaf.validFrom), REQUEST.notBefore.getTime());
    assert.equal(Date.parse(leaf.validTo), REQUEST.notAfter.getTime());
    assert.equal(
      leaf.subjectAltName,
      'DNS:web.shop.svc, IP Address:10.1.2.3, IP Address:0:0:0:0:0:0:0:1, IP Address:FD00:0:0:0:0:0:A:1, URI:spiffe://cluster.local/ns/shop/sa/web',
    );

    const parsed = new x509.X509Certificate(certPem);
    const basic = parsed.getExtension(x509.BasicConstraintsExtension);
    assert.equal(basic?.critical, true);
    assert.equal(basic?.ca, false);
    const usage = parsed.getExtension(x509.KeyUsagesExtension);
    assert.equal(usage?.critical, true);
    assert.equal(usage?.usages, x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment);
    assert.deepEqual(
      [...(parsed.getExtension(x509.ExtendedKeyUsageExtension)?.usages ?? [])],
      [x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth],
    );
    const rootSki = new x509.X509Certificate(ca.rootCertPem).getExtension(x509.SubjectKeyIdentifierExtension);
    assert.equal(parsed.getExtension(x509.AuthorityKeyIdentifierExtension)?.keyId, rootSki?.keyId);
    // Subject key id: SHA-1 of the public key bits (RFC 5280 §4.2.1.2 method 1).
    const spki = leaf.publicKey.export({ type: 'spki', format: 'der' });
    const bits = spki.subarray(spki.length - 65); // P-256 uncompressed point
    assert.equal(
      parsed.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId,
      createHash('sha1').update(bits).digest('hex'),
    );
  });

  it('leaves out an empty SAN extension and names only the requested usage', async () => {
    const ca = await BuiltinCA.create();
    const { certPem } = await issueEcLeaf(await issuerOf(ca), {
      ...REQUEST,
      dnsSans: [],
      ipSans: [],
      uriSans: [],
      serverAuth: false,
    });
    const parsed = new x509.X509Certificate(certPem);
    assert.equal(parsed.getExtension(x509.SubjectAlternativeNameExtension), null);
    assert.deepEqual(
      [...(parsed.getExtension(x509.ExtendedKeyUsageExtension)?.usages ?? [])],
      [x509.ExtendedKeyUsage.clientAuth],
    );
  });
});

describe('createEcRoot (DER)', () => {
  it('writes a self-signed P-256 CA both X.509 parsers read back: CA, key usage, key id', async () => {
    const { certPem, keyPem } = await createEcRoot({
      serialHex: '0a0b0c',
      commonName: 'mesh-root',
      organization: 'skein',
      notBefore: new Date('2026-01-01T00:00:00Z'),
      notAfter: new Date('2036-01-01T00:00:00Z'),
    });
    const root = new X509Certificate(certPem);
    assert.equal(root.ca, true);
    assert.equal(root.subject, 'CN=mesh-root\nO=skein');
    assert.equal(root.issuer, root.subject);
    assert.ok(root.checkIssued(root));
    assert.ok(root.verify(root.publicKey));
    assert.ok(root.checkPrivateKey(createPrivateKey(keyPem)));
    assert.equal(Date.parse(root.validTo), Date.parse('2036-01-01T00:00:00Z'));

    const parsed = new x509.X509Certificate(certPem);
    const basic = parsed.getExtension(x509.BasicConstraintsExtension);
    assert.equal(basic?.critical, true);
    assert.equal(basic?.ca, true);
    const usage = parsed.getExtension(x509.KeyUsagesExtension);
    assert.equal(usage?.critical, true);
    assert.equal(
      usage?.usages,
      x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature,
    );
    const ski = parsed.getExtension(x509.SubjectKeyIdentifierExtension);
    assert.equal(subjectKeyIdOf(root.raw)?.toString('hex'), ski?.keyId);
    assert.deepEqual(
      authorityKeyIdExtension(Buffer.from(ski?.keyId ?? '', 'hex')),
      Buffer.from(new x509.AuthorityKeyIdentifierExtension(ski?.keyId ?? '').rawData),
    );
  });

  it('finds no subject key id in a certificate without one', async () => {
    const keys = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, [
      'sign',
      'verify',
    ]);
    const bare = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: '01',
      name: 'CN=bare',
      notBefore: new Date(),
      notAfter: new Date(Date.now() + 60_000),
      keys,
      signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
      extensions: [new x509.BasicConstraintsExtension(true, undefined, true)],
    });
    assert.equal(subjectKeyIdOf(Buffer.from(bare.rawData)), undefined);
  });
});

describe('a root that is not P-256 (the general path, @peculiar/x509 imported on use)', () => {
  it('issues leaves a P-384 root verifies, naming its key id', async () => {
    const alg = { name: 'ECDSA', namedCurve: 'P-384' };
    const keys = await crypto.subtle.generateKey(alg, true, ['sign', 'verify']);
    const rootCert = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: '02',
      name: 'CN=p384-root',
      notBefore: new Date(Date.now() - 60_000),
      notAfter: new Date(Date.now() + 3_600_000),
      keys,
      signingAlgorithm: { name: 'ECDSA', hash: 'SHA-384' },
      extensions: [
        new x509.BasicConstraintsExtension(true, undefined, true),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      ],
    });
    const pkcs8 = Buffer.from(await crypto.subtle.exportKey('pkcs8', keys.privateKey));
    const keyPem = `-----BEGIN PRIVATE KEY-----\n${pkcs8.toString('base64')}\n-----END PRIVATE KEY-----\n`;
    const ca = await BuiltinCA.fromPem(rootCert.toString('pem'), keyPem);
    assert.equal(ca.commonName, 'p384-root');
    const leaf = await ca.issue({
      commonName: 'svc',
      uriSans: ['spiffe://td/ns/a/sa/b'],
      validityMs: 60_000,
    });
    const root = new X509Certificate(ca.rootCertPem);
    const cert = new X509Certificate(leaf.certPem);
    assert.ok(cert.checkIssued(root));
    assert.ok(cert.verify(root.publicKey));
    const aki = new x509.X509Certificate(leaf.certPem).getExtension(x509.AuthorityKeyIdentifierExtension);
    assert.equal(aki?.keyId, rootCert.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId);
  });
});
