import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { describe, it } from 'node:test';
import { connect } from 'node:tls';
import { cluster, cn, startFixture } from '../../../test/support/xds/testing.js';
import { TypeUrl } from '../../envoy/types.js';

/** The certificate the ADS port presents to a new handshake (with a client certificate, as mTLS requires). */
function presented(port: number, ca: string, client?: { certPem: string; keyPem: string }): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({
      host: '127.0.0.1',
      port,
      servername: 'localhost',
      ca,
      ALPNProtocols: ['h2'],
      ...(client ? { cert: client.certPem, key: client.keyPem } : {}),
    });
    socket.once('secureConnect', () => {
      const raw = socket.getPeerX509Certificate();
      // TLS 1.3 reports a refused client certificate after the handshake: wait for it.
      socket.once('data', () => undefined);
      setTimeout(() => {
        socket.destroy();
        if (raw) resolve(raw.serialNumber);
        else reject(new Error('no server certificate'));
      }, 100);
    });
    socket.once('error', (err) => {
      socket.destroy();
      reject(err);
    });
  });
}

describe('ADS serving certificate renewal', () => {
  it('new handshakes get the renewed certificate, open streams carry on, mTLS stays required', async () => {
    const f = await startFixture();
    try {
      f.source.set(TypeUrl.Cluster, [cluster('a')]);
      const open = await f.client(cn(1));
      open.send({ typeUrl: TypeUrl.Cluster });
      assert.deepEqual((await open.next()).names, ['a']);

      const clientCert = await f.ca.issue({ commonName: cn(9), validityMs: 3_600_000, usage: 'client' });
      const before = await presented(f.port, f.ca.trustBundlePem, clientCert);
      const renewed = await f.ca.issueServerCert(['localhost', '127.0.0.1']);
      f.server.setServingCertificate(renewed);
      const after = await presented(f.port, f.ca.trustBundlePem, clientCert);
      assert.notEqual(after, before);
      assert.equal(after, new X509Certificate(renewed.certPem).serialNumber);

      // The stream opened before the renewal still receives pushes.
      f.source.set(TypeUrl.Cluster, [cluster('a'), cluster('b')]);
      f.source.push();
      assert.deepEqual((await open.next()).names, ['a', 'b']);
      // A new proxy connects over the renewed certificate.
      const fresh = await f.client(cn(2));
      fresh.send({ typeUrl: TypeUrl.Cluster });
      assert.deepEqual((await fresh.next()).names, ['a', 'b']);
      // Without a client certificate the handshake is still refused.
      await assert.rejects(presented(f.port, f.ca.trustBundlePem));
    } finally {
      await f.close();
    }
  });
});
