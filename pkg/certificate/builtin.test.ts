import assert from 'node:assert/strict';
import { createPrivateKey, createPublicKey, X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as tls from 'node:tls';
import { ServerCredentials } from '@grpc/grpc-js';
import { BuiltinCA, CAFileError, CLOCK_SKEW_MS } from './builtin.js';

const SERVER_AUTH = '1.3.6.1.5.5.7.3.1';
const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';
const HOUR = 60 * 60 * 1000;

function spki(pem: string): Buffer {
  return createPublicKey(pem).export({ type: 'spki', format: 'der' });
}

describe('BuiltinCA', () => {
  let ca: BuiltinCA;
  let otherCa: BuiltinCA;
  let dir: string;

  before(async () => {
    [ca, otherCa] = await Promise.all([BuiltinCA.create(), BuiltinCA.create({ commonName: 'other-ca' })]);
    dir = await mkdtemp(join(tmpdir(), 'skein-ca-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('creates a self-signed CA root', () => {
    const root = new X509Certificate(ca.rootCertPem);
    assert.equal(root.ca, true);
    assert.match(root.subject, /CN=skein-ca/);
    assert.ok(root.verify(root.publicKey));
    assert.ok(root.checkIssued(root));
    assert.equal(ca.trustBundlePem, ca.rootCertPem);
    assert.ok(Date.parse(root.validTo) > Date.now() + 9 * 365 * 24 * HOUR);
    assert.deepEqual(spki(ca.rootKeyPem), spki(ca.rootCertPem));
  });

  it('issues a leaf the root verifies, with the requested names and usages', async () => {
    const before = Date.now();
    const issued = await ca.issue({
      commonName: 'bookstore.bookstore.cluster.local',
      uriSans: ['spiffe://cluster.local/ns/bookstore/sa/bookstore'],
      dnsSans: ['bookstore.bookstore.svc'],
      validityMs: HOUR,
    });
    const leaf = new X509Certificate(issued.certPem);
    const root = new X509Certificate(ca.rootCertPem);
    assert.ok(leaf.verify(root.publicKey));
    assert.ok(leaf.checkIssued(root));
    assert.equal(leaf.verify(new X509Certificate(otherCa.rootCertPem).publicKey), false);
    assert.equal(leaf.ca, false);
    assert.equal(leaf.subject, 'CN=bookstore.bookstore.cluster.local');
    assert.equal(
      leaf.subjectAltName,
      'DNS:bookstore.bookstore.svc, URI:spiffe://cluster.local/ns/bookstore/sa/bookstore',
    );
    assert.deepEqual(leaf.keyUsage, [SERVER_AUTH, CLIENT_AUTH]);
    assert.equal(issued.caPem, ca.trustBundlePem);
    assert.equal(issued.serialNumber, leaf.serialNumber.toLowerCase());
    assert.match(issued.serialNumber, /^[0-9a-f]{32}$/);
    // Backdated for clock skew; X.509 times have second precision.
    assert.ok(issued.notBefore.getTime() <= before - CLOCK_SKEW_MS + 1000);
    assert.ok(issued.notBefore.getTime() >= before - CLOCK_SKEW_MS - 2000);
    assert.ok(Math.abs(issued.notAfter.getTime() - (before + HOUR)) < 5000);
    assert.equal(Date.parse(leaf.validTo), issued.notAfter.getTime());
    // The key is PKCS#8 PEM and belongs to the certificate.
    assert.match(issued.keyPem, /^-----BEGIN PRIVATE KEY-----\n/);
    assert.deepEqual(spki(issued.keyPem), spki(issued.certPem));
    assert.ok(leaf.checkPrivateKey(createPrivateKey(issued.keyPem)));
  });

  it('sets extended key usage per the requested usage', async () => {
    const client = await ca.issue({ commonName: 'c', validityMs: HOUR, usage: 'client' });
    const server = await ca.issue({ commonName: 's', validityMs: HOUR, usage: 'server' });
    assert.deepEqual(new X509Certificate(client.certPem).keyUsage, [CLIENT_AUTH]);
    assert.deepEqual(new X509Certificate(server.certPem).keyUsage, [SERVER_AUTH]);
  });

  it('gives every certificate a fresh serial and key', async () => {
    const a = await ca.issue({ commonName: 'x', validityMs: HOUR });
    const b = await ca.issue({ commonName: 'x', validityMs: HOUR });
    assert.notEqual(a.serialNumber, b.serialNumber);
    assert.notEqual(a.keyPem, b.keyPem);
  });

  it('issues server certificates with IP SANs for loopback', async () => {
    const issued = await ca.issueServerCert();
    const leaf = new X509Certificate(issued.certPem);
    assert.equal(leaf.subjectAltName, 'DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1');
    assert.equal(leaf.checkIP('127.0.0.1'), '127.0.0.1');
    assert.equal(leaf.checkHost('localhost'), 'localhost');
    assert.deepEqual(leaf.keyUsage, [SERVER_AUTH]);
    assert.deepEqual(issued.ipSans, ['127.0.0.1', '::1']);
    assert.deepEqual(issued.dnsSans, ['localhost']);
  });

  it('rejects malformed requests', async () => {
    await assert.rejects(ca.issue({ commonName: '', validityMs: HOUR }), /common name/);
    await assert.rejects(ca.issue({ commonName: 'x', validityMs: 0 }), RangeError);
    await assert.rejects(ca.issue({ commonName: 'x', validityMs: HOUR, ipSans: ['not-an-ip'] }), /IP SAN/);
    await assert.rejects(ca.issue({ commonName: 'x', validityMs: HOUR, uriSans: ['no scheme'] }), /URI SAN/);
  });

  it('never issues a leaf that outlives the root', async () => {
    const shortCa = await BuiltinCA.create({ validityMs: HOUR });
    const issued = await shortCa.issue({ commonName: 'x', validityMs: 10 * HOUR });
    assert.ok(issued.notAfter.getTime() <= shortCa.notAfter.getTime());
  });

  it('round-trips through PEM, also from a SEC1 key', async () => {
    const sec1 = String(createPrivateKey(ca.rootKeyPem).export({ type: 'sec1', format: 'pem' }));
    assert.match(sec1, /BEGIN EC PRIVATE KEY/);
    const loaded = await BuiltinCA.fromPem(ca.rootCertPem, sec1);
    assert.equal(loaded.rootCertPem, ca.rootCertPem);
    const issued = await loaded.issue({ commonName: 'x', validityMs: HOUR });
    const leaf = new X509Certificate(issued.certPem);
    assert.ok(leaf.checkIssued(new X509Certificate(ca.rootCertPem)));
    assert.ok(leaf.verify(new X509Certificate(ca.rootCertPem).publicKey));
  });

  it('refuses a key that does not match, a non-CA certificate, garbage and an expired root', async () => {
    await assert.rejects(BuiltinCA.fromPem(ca.rootCertPem, otherCa.rootKeyPem), /does not match/);
    const leaf = await ca.issue({ commonName: 'x', validityMs: HOUR });
    await assert.rejects(BuiltinCA.fromPem(leaf.certPem, leaf.keyPem), /not a CA/);
    await assert.rejects(BuiltinCA.fromPem('garbage', ca.rootKeyPem), /not a valid PEM certificate/);
    await assert.rejects(BuiltinCA.fromPem(ca.rootCertPem, 'garbage'), /not a valid PEM private key/);
    const expiring = await BuiltinCA.create({ validityMs: 1 });
    // X.509 times have second precision: wait past the next second boundary.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await assert.rejects(BuiltinCA.fromPem(expiring.rootCertPem, expiring.rootKeyPem), /expired/);
  });

  it('keeps the root on disk and reuses it', async () => {
    const caDir = join(dir, 'reuse', 'ca');
    const first = await BuiltinCA.loadOrCreate(caDir);
    const { certFile, keyFile } = BuiltinCA.pathsFor(caDir);
    assert.equal((await stat(keyFile)).mode & 0o777, 0o600);
    assert.equal(await readFile(certFile, 'utf8'), first.rootCertPem);
    const second = await BuiltinCA.loadOrCreate(caDir);
    assert.equal(second.rootCertPem, first.rootCertPem);
    const issued = await second.issue({ commonName: 'x', validityMs: HOUR });
    assert.ok(new X509Certificate(issued.certPem).checkIssued(new X509Certificate(first.rootCertPem)));
  });

  it('refuses a corrupt, incomplete or mismatched pair and leaves it in place', async () => {
    const caDir = join(dir, 'broken');
    await BuiltinCA.loadOrCreate(caDir);
    const { certFile, keyFile } = BuiltinCA.pathsFor(caDir);
    await writeFile(keyFile, 'not a key');
    await assert.rejects(BuiltinCA.loadOrCreate(caDir), (err: unknown) => {
      assert.ok(err instanceof CAFileError);
      assert.match(err.message, /not a valid PEM private key/);
      assert.match(err.message, /remove both/);
      return true;
    });
    assert.equal(await readFile(keyFile, 'utf8'), 'not a key');

    await writeFile(keyFile, otherCa.rootKeyPem);
    await assert.rejects(BuiltinCA.loadOrCreate(caDir), /does not match/);

    await rm(certFile);
    await assert.rejects(BuiltinCA.loadOrCreate(caDir), (err: unknown) => {
      assert.ok(err instanceof CAFileError);
      assert.match(err.message, /ca\.crt is missing/);
      return true;
    });
  });

  it('produces keys TLS and grpc-js accept', async () => {
    const issued = await ca.issueServerCert();
    assert.doesNotThrow(() => tls.createSecureContext({ cert: issued.certPem, key: issued.keyPem }));
    assert.doesNotThrow(() =>
      ServerCredentials.createSsl(
        Buffer.from(ca.trustBundlePem),
        [{ cert_chain: Buffer.from(issued.certPem), private_key: Buffer.from(issued.keyPem) }],
        true,
      ),
    );
  });

  describe('mutual TLS over loopback', () => {
    let server: tls.Server;
    let port: number;
    const peers: string[] = [];

    before(async () => {
      const serverCert = await ca.issueServerCert();
      server = tls.createServer({
        cert: serverCert.certPem,
        key: serverCert.keyPem,
        ca: ca.trustBundlePem,
        requestCert: true,
        rejectUnauthorized: true,
      });
      server.on('secureConnection', (socket) => {
        peers.push(socket.getPeerX509Certificate()?.subject ?? '');
        socket.end('ok');
      });
      server.listen(0, '127.0.0.1');
      await once(server, 'listening');
      port = (server.address() as AddressInfo).port;
    });
    after(async () => {
      server.close();
      await once(server, 'close');
    });

    function connect(cert: { certPem: string; keyPem: string }, trust: string): Promise<string> {
      return new Promise((resolve, reject) => {
        const socket = tls.connect({
          host: '127.0.0.1',
          port,
          cert: cert.certPem,
          key: cert.keyPem,
          ca: trust,
          rejectUnauthorized: true,
        });
        let data = '';
        socket.setEncoding('utf8');
        socket.on('data', (chunk: string) => {
          data += chunk;
        });
        socket.on('end', () => resolve(data));
        socket.on('error', reject);
      });
    }

    it('succeeds with certificates from the same CA (IP SAN identifies the server)', async () => {
      const client = await ca.issue({
        commonName: 'client.default.cluster.local',
        uriSans: ['spiffe://cluster.local/ns/default/sa/client'],
        validityMs: HOUR,
        usage: 'client',
      });
      assert.equal(await connect(client, ca.trustBundlePem), 'ok');
      assert.deepEqual(peers, ['CN=client.default.cluster.local']);
    });

    it('is refused by the server for a client certificate from another CA', async () => {
      const stranger = await otherCa.issue({ commonName: 'stranger', validityMs: HOUR, usage: 'client' });
      const refused = once(server, 'tlsClientError');
      // TLS 1.3: the client finishes its side before the server checks its certificate, so it
      // sees either an error or a connection closed without the server's reply.
      const outcome = await connect(stranger, ca.trustBundlePem).catch((err: unknown) => err);
      assert.notEqual(outcome, 'ok');
      const [err] = await refused;
      assert.ok(err instanceof Error);
      assert.equal(peers.includes('CN=stranger'), false);
    });

    it('is refused by a client that trusts another CA', async () => {
      const client = await otherCa.issue({ commonName: 'c', validityMs: HOUR, usage: 'client' });
      await assert.rejects(
        connect(client, otherCa.trustBundlePem),
        /self-signed|unable to verify|certificate/i,
      );
    });
  });
});
