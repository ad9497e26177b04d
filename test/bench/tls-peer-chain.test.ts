import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import tls from 'node:tls';
import { BuiltinCA } from '../../pkg/certificate/builtin.js';
import { abbreviatePeerCertificates } from './tls-peer-chain.js';

test('with abbreviated peer certificates a client still refuses a server whose name or CA is wrong', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'skein-tls-chain-'));
  const other = await mkdtemp(path.join(tmpdir(), 'skein-tls-chain-'));
  const original = tls.TLSSocket.prototype.getPeerCertificate;
  try {
    const ca = await BuiltinCA.loadOrCreate(dir);
    const stranger = await BuiltinCA.loadOrCreate(other);
    const serving = await ca.issue({
      commonName: 'ads',
      dnsSans: ['ads.skein'],
      validityMs: 60_000,
      usage: 'server',
    });
    const server = tls.createServer({ cert: serving.certPem, key: serving.keyPem }, (s) => s.end());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const address = server.address();
    assert.ok(address && typeof address === 'object');
    const connect = (servername: string, caPem: string) =>
      new Promise<{ subjectaltname?: string } | Error>((resolve) => {
        const s = tls.connect({ port: address.port, host: '127.0.0.1', servername, ca: caPem }, () => {
          resolve(s.getPeerCertificate(true));
          s.destroy();
        });
        s.on('error', resolve);
      });
    abbreviatePeerCertificates();
    const ok = await connect('ads.skein', ca.trustBundlePem);
    assert.ok(!(ok instanceof Error), String(ok));
    assert.equal(ok.subjectaltname, 'DNS:ads.skein');
    assert.equal('issuerCertificate' in ok, false, 'the detailed chain was still built');
    const wrongName = await connect('other.skein', ca.trustBundlePem);
    assert.ok(wrongName instanceof Error && /altnames/i.test(wrongName.message), String(wrongName));
    const wrongCa = await connect('ads.skein', stranger.trustBundlePem);
    assert.ok(wrongCa instanceof Error && /certificate/i.test(wrongCa.message), String(wrongCa));
    server.close();
  } finally {
    tls.TLSSocket.prototype.getPeerCertificate = original;
    await rm(dir, { recursive: true, force: true });
    await rm(other, { recursive: true, force: true });
  }
});
