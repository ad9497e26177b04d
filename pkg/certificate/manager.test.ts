import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { rsaRoot } from '../../test/support/rsa-root.js';
import { silentLogger } from '../logger/logger.js';
import { parseProxyCommonName } from '../mesh/identity.js';
import { BuiltinCA } from './builtin.js';
import { CertificateManager, type CertificateManagerOptions } from './manager.js';
import type { CertificateAuthority, CertificateRequest, IssuedCertificate } from './types.js';

const HOUR = 60 * 60 * 1000;
const bookstore = { namespace: 'bookstore', serviceAccount: 'bookstore-v1' };
const bookbuyer = { namespace: 'bookbuyer', serviceAccount: 'bookbuyer' };

/** Wraps the real CA to count requests and inject failures. */
class ProbeCA implements CertificateAuthority {
  requests: CertificateRequest[] = [];
  failures = 0;
  constructor(private readonly inner: BuiltinCA) {}
  get trustBundlePem(): string {
    return this.inner.trustBundlePem;
  }
  async issue(request: CertificateRequest): Promise<IssuedCertificate> {
    this.requests.push(request);
    if (this.failures > 0) {
      this.failures -= 1;
      throw new Error('CA unavailable');
    }
    return this.inner.issue(request);
  }
}

describe('CertificateManager', () => {
  let root: BuiltinCA;
  const managers: CertificateManager[] = [];
  // Renewal timers are unref'd (they must not keep a process alive), so the test holds the loop open.
  let keepAlive: NodeJS.Timeout;

  before(async () => {
    root = await BuiltinCA.create();
    keepAlive = setInterval(() => {}, 1000);
  });
  after(() => {
    for (const m of managers) m.stop();
    clearInterval(keepAlive);
  });

  function manager(
    ca: CertificateAuthority,
    opts: Partial<CertificateManagerOptions> = {},
  ): CertificateManager {
    const m = new CertificateManager({
      ca,
      validityMs: HOUR,
      trustDomain: 'cluster.local',
      logger: silentLogger(),
      ...opts,
    });
    managers.push(m);
    return m;
  }

  it('issues the service certificate of an identity once, sharing concurrent calls', async () => {
    const ca = new ProbeCA(root);
    const m = manager(ca);
    const issued: string[] = [];
    m.on('issued', (key) => issued.push(key));
    assert.equal(m.serviceCertificate('bookstore/bookstore-v1'), undefined);
    const [a, b] = await Promise.all([m.ensure(bookstore), m.ensure({ ...bookstore })]);
    assert.equal(a, b);
    assert.equal(ca.requests.length, 1);
    assert.equal(await m.ensure(bookstore), a);
    assert.equal(ca.requests.length, 1);
    assert.deepEqual(issued, ['bookstore/bookstore-v1']);

    assert.equal(m.serviceCertificate('bookstore/bookstore-v1'), a);
    assert.equal(m.trustBundlePem, root.trustBundlePem);
    const cert = new X509Certificate(a.certPem);
    assert.equal(cert.subject, 'CN=bookstore-v1.bookstore.cluster.local');
    assert.equal(cert.subjectAltName, 'URI:spiffe://cluster.local/ns/bookstore/sa/bookstore-v1');
    assert.deepEqual(cert.keyUsage, ['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2']);
    assert.ok(cert.checkIssued(new X509Certificate(root.rootCertPem)));
  });

  it('rejects a failed first issuance and retries on the next call', async () => {
    const ca = new ProbeCA(root);
    ca.failures = 1;
    const m = manager(ca);
    await assert.rejects(m.ensure(bookbuyer), /CA unavailable/);
    assert.equal(m.serviceCertificate('bookbuyer/bookbuyer'), undefined);
    assert.deepEqual(m.list(), []);
    const cert = await m.ensure(bookbuyer);
    assert.equal(m.serviceCertificate('bookbuyer/bookbuyer'), cert);
  });

  it('rotates at 75% of the validity with a new serial and announces it', async () => {
    const m = manager(new ProbeCA(root), { validityMs: 2000, minRenewMarginMs: 0 });
    const first = await m.ensure(bookstore);
    const start = Date.now();
    const [keys] = await once(m, 'rotated');
    const elapsed = Date.now() - start;
    assert.deepEqual(keys, ['bookstore/bookstore-v1']);
    // 75% of 2 s, give or take timer slack; in any case before the certificate expires.
    assert.ok(elapsed >= 1300 && elapsed < 2000, `rotated after ${elapsed} ms`);
    const second = m.serviceCertificate('bookstore/bookstore-v1');
    assert.ok(second);
    assert.notEqual(second.serialNumber, first.serialNumber);
    assert.notEqual(second.keyPem, first.keyPem);
    assert.equal(second.commonName, first.commonName);
  });

  it('renews several identities in one round', async () => {
    const m = manager(new ProbeCA(root), { validityMs: 400, minRenewMarginMs: 0 });
    await Promise.all([m.ensure(bookstore), m.ensure(bookbuyer)]);
    const rounds: string[][] = [];
    m.on('rotated', (keys) => rounds.push(keys));
    await once(m, 'rotated');
    assert.deepEqual(rounds[0]?.sort(), ['bookbuyer/bookbuyer', 'bookstore/bookstore-v1']);
  });

  it('retries a failed renewal with backoff instead of throwing', async () => {
    const ca = new ProbeCA(root);
    const m = manager(ca, { validityMs: 400, minRenewMarginMs: 0, retryInitialMs: 50, retryMaxMs: 200 });
    const first = await m.ensure(bookstore);
    ca.failures = 2;
    const [keys] = await once(m, 'rotated');
    assert.deepEqual(keys, ['bookstore/bookstore-v1']);
    assert.equal(ca.requests.length, 4); // first issue + 2 failures + success
    assert.notEqual(m.serviceCertificate('bookstore/bookstore-v1')?.serialNumber, first.serialNumber);
  });

  it('keeps renewing when an event listener throws', async () => {
    const m = manager(new ProbeCA(root), { validityMs: 400, minRenewMarginMs: 0 });
    m.on('issued', () => {
      throw new Error('listener bug');
    });
    await m.ensure(bookstore);
    await once(m, 'rotated');
  });

  it('applies a new validity to new certificates', async () => {
    const m = manager(new ProbeCA(root));
    const before = await m.ensure(bookstore);
    m.setValidity(10 * HOUR);
    assert.equal(m.validityMs, 10 * HOUR);
    const later = await m.ensure(bookbuyer);
    assert.ok(Math.abs(before.notAfter.getTime() - Date.now() - HOUR) < 5000);
    assert.ok(Math.abs(later.notAfter.getTime() - Date.now() - 10 * HOUR) < 5000);
    assert.throws(() => m.setValidity(0), RangeError);
  });

  it('renews everything for a new trust domain', async () => {
    const m = manager(new ProbeCA(root));
    await m.ensure(bookstore);
    m.setTrustDomain('mesh.example');
    const [keys] = await once(m, 'rotated');
    assert.deepEqual(keys, ['bookstore/bookstore-v1']);
    const cert = m.serviceCertificate('bookstore/bookstore-v1');
    assert.equal(cert?.commonName, 'bookstore-v1.bookstore.mesh.example');
    assert.deepEqual(cert?.uriSans, ['spiffe://mesh.example/ns/bookstore/sa/bookstore-v1']);
  });

  it('forgets identities and stops', async () => {
    const ca = new ProbeCA(root);
    const m = manager(ca, { validityMs: 400, minRenewMarginMs: 0 });
    await Promise.all([m.ensure(bookstore), m.ensure(bookbuyer)]);
    assert.equal(m.forget('bookbuyer/bookbuyer'), true);
    assert.equal(m.forget('bookbuyer/bookbuyer'), false);
    assert.equal(m.serviceCertificate('bookbuyer/bookbuyer'), undefined);
    const [keys] = await once(m, 'rotated');
    assert.deepEqual(keys, ['bookstore/bookstore-v1']);

    m.stop();
    const requests = ca.requests.length;
    let rotatedAfterStop = false;
    m.on('rotated', () => {
      rotatedAfterStop = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 600));
    assert.equal(rotatedAfterStop, false);
    assert.equal(ca.requests.length, requests);
    assert.ok(m.serviceCertificate('bookstore/bookstore-v1'));
  });

  it('lists managed certificates without keys', async () => {
    const m = manager(new ProbeCA(root));
    const cert = await m.ensure(bookstore);
    const list = m.list();
    assert.equal(list.length, 1);
    const [info] = list;
    assert.ok(info);
    assert.equal(info.identityKey, 'bookstore/bookstore-v1');
    assert.equal(info.serialNumber, cert.serialNumber);
    assert.deepEqual(info.uriSans, cert.uriSans);
    assert.ok(info.renewAt.getTime() < cert.notAfter.getTime());
    assert.ok(info.renewAt.getTime() > Date.now() + HOUR / 2);
    assert.equal(JSON.stringify(list).includes('PRIVATE KEY'), false);
    assert.equal(JSON.stringify(list).includes('CERTIFICATE'), false);
  });

  it('issues proxy certificates with the proxy CN and the SPIFFE URI SAN', async () => {
    const m = manager(new ProbeCA(root));
    const proxy = {
      uuid: '8f1d6a4e-1a2b-4c3d-9e8f-0123456789ab',
      kind: 'sidecar' as const,
      namespace: 'bookstore',
      serviceAccount: 'bookstore-v1',
      trustDomain: 'cluster.local',
    };
    const issued = await m.issueProxyCertificate(proxy, HOUR);
    const cert = new X509Certificate(issued.certPem);
    const cn = cert.subject.replace(/^CN=/, '');
    assert.deepEqual(parseProxyCommonName(cn), { ...proxy, cn });
    assert.equal(cert.subjectAltName, 'URI:spiffe://cluster.local/ns/bookstore/sa/bookstore-v1');
    assert.equal(m.list().length, 0);
  });

  it('adopts a certificate from load() on the first ensure instead of issuing, when this CA issued it for the identity', async () => {
    const earlier = await manager(new ProbeCA(root)).ensure(bookstore);
    const ca = new ProbeCA(root);
    const loads: string[] = [];
    const m = manager(ca, {
      load: async (id) => {
        loads.push(`${id.namespace}/${id.serviceAccount}`);
        return { certPem: earlier.certPem, keyPem: earlier.keyPem };
      },
    });
    const issued: string[] = [];
    m.on('issued', (key) => issued.push(key));
    const [a, b] = await Promise.all([m.ensure(bookstore), m.ensure(bookstore)]);
    assert.equal(a, b);
    assert.equal(ca.requests.length, 0);
    assert.deepEqual(loads, ['bookstore/bookstore-v1']);
    assert.deepEqual(issued, ['bookstore/bookstore-v1']);
    assert.equal(a.certPem, earlier.certPem);
    assert.equal(a.keyPem, earlier.keyPem);
    assert.equal(a.serialNumber, earlier.serialNumber);
    assert.deepEqual(a.uriSans, earlier.uriSans);
    assert.equal(a.notAfter.getTime(), earlier.notAfter.getTime());
    assert.equal(m.serviceCertificate('bookstore/bookstore-v1'), a);
    // Renewal is scheduled as for an issued certificate.
    const [info] = m.list();
    assert.ok(info && info.renewAt.getTime() > Date.now() && info.renewAt < a.notAfter);
  });

  it('issues instead of adopting what another CA signed, another identity, a wrong key, a due or too long certificate', async () => {
    const other = await BuiltinCA.create();
    const good = await manager(new ProbeCA(root)).ensure(bookstore);
    const foreign = await manager(new ProbeCA(other)).ensure(bookstore);
    const buyer = await manager(new ProbeCA(root)).ensure(bookbuyer);
    const shortLived = await manager(new ProbeCA(root), { validityMs: 3000 }).ensure(bookstore);
    const cases: [
      string,
      { certPem: string; keyPem: string } | undefined,
      Partial<CertificateManagerOptions>,
    ][] = [
      ['foreign CA', foreign, {}],
      ['other identity', buyer, {}],
      ['key of another certificate', { certPem: good.certPem, keyPem: buyer.keyPem }, {}],
      ['garbage', { certPem: 'not a certificate', keyPem: good.keyPem }, {}],
      ['nothing found', undefined, {}],
      // 75 % of 3 s has passed 10 s later.
      ['due for renewal', shortLived, { now: () => Date.now() + 10_000 }],
      ['longer than the configured validity', good, { validityMs: HOUR / 4 }],
    ];
    for (const [name, found, opts] of cases) {
      const ca = new ProbeCA(root);
      const m = manager(ca, { ...opts, load: async () => found });
      const cert = await m.ensure(bookstore);
      assert.equal(ca.requests.length, 1, name);
      assert.notEqual(cert.serialNumber, found === undefined ? '' : good.serialNumber, name);
      assert.notEqual(cert.certPem, found?.certPem, name);
    }
    // A failing load is the same as nothing found.
    const ca = new ProbeCA(root);
    const m = manager(ca, { load: () => Promise.reject(new Error('unreadable')) });
    await m.ensure(bookstore);
    assert.equal(ca.requests.length, 1);
  });

  it('adopts what an RSA root issued (OpenSSL checks it) and refuses a leaf whose signature was altered', async () => {
    const { cert: rootCert, keyPem } = await rsaRoot({
      serialNumber: '01',
      name: 'CN=rsa root, O=elsewhere',
      notBefore: new Date(Date.now() - HOUR),
      notAfter: new Date(Date.now() + 24 * HOUR),
    });
    const rsa = await BuiltinCA.fromPem(rootCert.toString('pem'), keyPem);
    const earlier = await manager(new ProbeCA(rsa)).ensure(bookstore);
    const adopting = new ProbeCA(rsa);
    const adopted = await manager(adopting, { load: async () => earlier }).ensure(bookstore);
    assert.equal(adopting.requests.length, 0);
    assert.equal(adopted.serialNumber, earlier.serialNumber);

    // skein's own ECDSA leaf with one bit of its signature flipped: the DER path refuses it.
    const good = await manager(new ProbeCA(root)).ensure(bookstore);
    const der = new X509Certificate(good.certPem).raw;
    const bad = Buffer.from(der);
    bad[bad.length - 5] = (bad[bad.length - 5] as number) ^ 0x01;
    const altered = `-----BEGIN CERTIFICATE-----\n${bad.toString('base64')}\n-----END CERTIFICATE-----\n`;
    const ca = new ProbeCA(root);
    const cert = await manager(ca, { load: async () => ({ certPem: altered, keyPem: good.keyPem }) }).ensure(
      bookstore,
    );
    assert.equal(ca.requests.length, 1);
    assert.notEqual(cert.certPem, altered);
  });
});
