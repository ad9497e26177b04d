import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { IssuedCertificate } from '../certificate/types.js';
import { silentLogger } from '../logger/logger.js';
import { type ProxyIdentity, parseProxyCommonName } from '../mesh/identity.js';
import { BootstrapCertRotation, type ConnectedCertificate, renewAt } from './bootstrap-rotation.js';

const HOUR = 3_600_000;

function proxy(uuid: string, kind = 'sidecar'): ProxyIdentity {
  return parseProxyCommonName(`${uuid}.${kind}.bookbuyer.shop.cluster.local`);
}

/** A fake CA whose certificates start at the fake clock's now and last `validity`. */
function fixture(validity = 3 * HOUR) {
  let now = 0;
  let serial = 0;
  const connected: ConnectedCertificate[] = [];
  const writes: { namespace: string; name: string; data: Record<string, string> }[] = [];
  let failNext = 0;
  const issue = async (commonName: string): Promise<IssuedCertificate> => {
    serial++;
    return {
      commonName,
      certPem: `cert-${serial}`,
      keyPem: `key-${serial}`,
      caPem: 'ca',
      serialNumber: String(serial),
      notBefore: new Date(now),
      notAfter: new Date(now + validity),
      uriSans: [],
      dnsSans: [],
      ipSans: [],
    } as IssuedCertificate;
  };
  const rotation = new BootstrapCertRotation({
    connected: () => connected,
    issue,
    writer: {
      replace: async (namespace, name, data) => {
        if (failNext > 0) {
          failNext--;
          throw new Error('secrets "x" is forbidden');
        }
        writes.push({ namespace, name, data });
      },
    },
    logger: silentLogger(),
    now: () => now,
  });
  return {
    rotation,
    connected,
    writes,
    advance: (ms: number) => {
      now += ms;
    },
    failNext: (n: number) => {
      failNext = n;
    },
    get now() {
      return now;
    },
  };
}

test('renewal is due at two thirds of the certificate life', () => {
  assert.equal(renewAt({ notBefore: 0, notAfter: 3 * HOUR }), 2 * HOUR);
});

test("a connected sidecar's certificate is replaced in its bootstrap Secret once two thirds of it passed, not before", async () => {
  const f = fixture();
  const id = proxy('0b0c0d0e-0000-4000-8000-000000000001');
  f.connected.push({ identity: id, cert: { notBefore: 0, notAfter: 3 * HOUR } });
  f.advance(2 * HOUR - 1);
  assert.deepEqual(await f.rotation.tick(), { rotated: 0, failed: 0 });
  f.advance(1);
  assert.deepEqual(await f.rotation.tick(), { rotated: 1, failed: 0 });
  assert.equal(f.writes.length, 1);
  assert.equal(f.writes[0]?.namespace, 'shop');
  assert.equal(f.writes[0]?.name, `skein-bootstrap-${id.uuid}`);
  assert.deepEqual(Object.keys(f.writes[0]?.data ?? {}).sort(), ['ca.crt', 'tls.crt', 'tls.key']);
  // Still connected with the old one: the new one waits for the next connection, no second write.
  f.advance(HOUR / 2);
  assert.deepEqual(await f.rotation.tick(), { rotated: 0, failed: 0 });
  assert.equal(f.writes.length, 1);
});

test('the proxy reconnects with the new certificate: it is rotated again when that one is due', async () => {
  const f = fixture();
  const id = proxy('0b0c0d0e-0000-4000-8000-000000000002');
  const entry: ConnectedCertificate = { identity: id, cert: { notBefore: 0, notAfter: 3 * HOUR } };
  f.connected.push(entry);
  f.advance(2 * HOUR);
  await f.rotation.tick();
  // The new certificate was issued at 2 h for 3 h; the proxy reconnects with it at expiry of the old.
  entry.cert = { notBefore: 2 * HOUR, notAfter: 5 * HOUR };
  f.advance(HOUR);
  assert.deepEqual(await f.rotation.tick(), { rotated: 0, failed: 0 });
  f.advance(HOUR);
  assert.deepEqual(await f.rotation.tick(), { rotated: 1, failed: 0 });
  assert.equal(f.writes.length, 2);
  assert.notEqual(f.writes[0]?.data['tls.crt'], f.writes[1]?.data['tls.crt']);
});

test('gateways and proxyless workloads (their mTLS stream comes through skein-agent) are rotated', async () => {
  const f = fixture();
  f.connected.push(
    {
      identity: proxy('0b0c0d0e-0000-4000-8000-000000000003', 'gateway'),
      cert: { notBefore: 0, notAfter: HOUR },
    },
    {
      identity: proxy('0b0c0d0e-0000-4000-8000-000000000004', 'grpc'),
      cert: { notBefore: 0, notAfter: HOUR },
    },
  );
  f.advance(HOUR);
  assert.deepEqual(await f.rotation.tick(), { rotated: 2, failed: 0 });
  assert.deepEqual(f.writes.map((w) => w.name).sort(), [
    'skein-bootstrap-0b0c0d0e-0000-4000-8000-000000000003',
    'skein-bootstrap-0b0c0d0e-0000-4000-8000-000000000004',
  ]);
});

test('a refused write is retried after a backoff, and the other proxies are rotated meanwhile', async () => {
  const f = fixture();
  const a = proxy('0b0c0d0e-0000-4000-8000-00000000000a');
  const b = proxy('0b0c0d0e-0000-4000-8000-00000000000b');
  f.connected.push({ identity: a, cert: { notBefore: 0, notAfter: 3 * HOUR } });
  f.connected.push({ identity: b, cert: { notBefore: 0, notAfter: 3 * HOUR } });
  f.advance(2 * HOUR);
  f.failNext(1);
  assert.deepEqual(await f.rotation.tick(), { rotated: 1, failed: 1 });
  assert.deepEqual(
    f.writes.map((w) => w.name),
    [`skein-bootstrap-${b.uuid}`],
  );
  // Within the 10 s backoff: not tried again.
  f.advance(5_000);
  assert.deepEqual(await f.rotation.tick(), { rotated: 0, failed: 0 });
  f.advance(5_000);
  assert.deepEqual(await f.rotation.tick(), { rotated: 1, failed: 0 });
  assert.deepEqual(f.rotation.totals, { rotated: 2, failed: 1 });
});

test('a root rotation stage rewrites every connected proxy once: ca.crt only, or a new certificate in the reissue stage', async () => {
  const f = fixture();
  f.connected.push(
    { identity: proxy('aaaaaaaa-0000-4000-8000-000000000001'), cert: { notBefore: 0, notAfter: 3 * HOUR } },
    {
      identity: proxy('aaaaaaaa-0000-4000-8000-000000000002', 'grpc'),
      cert: { notBefore: 0, notAfter: 3 * HOUR },
    },
  );
  let bundle = 'old+new';
  f.rotation.setCaStage({ key: 'distribute', reissue: false, bundlePem: () => bundle });
  // Both kinds hold a bootstrap Secret: the sidecar's Envoy and the proxyless pod's skein-agent.
  assert.equal(f.rotation.caStageProgress().pending, 2);
  await f.rotation.tick();
  assert.deepEqual(
    f.writes.map((w) => w.data),
    [{ 'ca.crt': 'old+new' }, { 'ca.crt': 'old+new' }],
  );
  assert.deepEqual(f.rotation.caStageProgress(), { pending: 0, lastWriteAt: 0 });
  await f.rotation.tick();
  assert.equal(f.writes.length, 2, 'once per stage');
  bundle = 'new+old';
  f.advance(1000);
  f.rotation.setCaStage({ key: 'reissue', reissue: true, bundlePem: () => bundle });
  assert.equal(f.rotation.caStageProgress().pending, 2, 'a new stage starts over');
  await f.rotation.tick();
  for (const w of f.writes.slice(2))
    assert.deepEqual(Object.keys(w.data).sort(), ['ca.crt', 'tls.crt', 'tls.key']);
  assert.equal(f.writes.length, 4);
  assert.deepEqual(f.rotation.caStageProgress(), { pending: 0, lastWriteAt: 1000 });
  f.rotation.setCaStage(undefined);
  assert.deepEqual(f.rotation.caStageProgress(), { pending: 0 });
});

test('whichever replica a proxy is connected to renews its certificate and writes the rotation stage', async () => {
  const writes: Record<string, string>[] = [];
  const rotation = new BootstrapCertRotation({
    // A certificate past two thirds of its life, on a stream only this replica sees.
    connected: () => [
      { identity: proxy('0b0c0d0e-0000-4000-8000-000000000006'), cert: { notBefore: 0, notAfter: 6 } },
    ],
    issue: async (cn) =>
      ({
        commonName: cn,
        certPem: 'c',
        keyPem: 'k',
        caPem: 'a',
        notBefore: new Date(0),
        notAfter: new Date(10),
      }) as IssuedCertificate,
    writer: { replace: async (_ns, _name, data) => void writes.push(data) },
    logger: silentLogger(),
    now: () => 5,
  });
  assert.deepEqual(await rotation.tick(), { rotated: 1, failed: 0 });
  assert.deepEqual(Object.keys(writes[0] ?? {}).sort(), ['ca.crt', 'tls.crt', 'tls.key']);
  rotation.setCaStage({ key: 'distribute', reissue: false, bundlePem: () => 'old+new' });
  await rotation.tick();
  assert.deepEqual(writes[1], { 'ca.crt': 'old+new' });
  assert.equal(rotation.caStageProgress().pending, 0);
});
