import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { status } from '@grpc/grpc-js';
import { cluster, cn, eventually, startFixture } from '../../../test/support/xds/testing.js';
import { TypeUrl } from '../../envoy/types.js';
import { encodeDiscoveryRequest } from './service.js';

describe('AdsServer lifecycle', () => {
  it('stop() ends connected streams, reports the disconnects and stops listening', async () => {
    const f = await startFixture();
    f.source.set(TypeUrl.Cluster, [cluster('a')]);
    const c = await f.client(cn(1));
    c.send({ typeUrl: TypeUrl.Cluster });
    await c.next();
    assert.equal(f.server.streams().length, 1);
    const started = Date.now();
    await f.server.stop();
    assert.ok(Date.now() - started < 2000);
    const s = await c.status;
    assert.equal(s.code, status.OK);
    assert.equal(f.source.disconnected.length, 1);
    assert.deepEqual(f.server.streams(), []);
    const late = await f.client(cn(2));
    late.send({ typeUrl: TypeUrl.Cluster });
    assert.equal((await late.status).code, status.UNAVAILABLE);
    await f.close();
  });

  it('/debug shows the validity of the client certificate a stream was opened with', async () => {
    const f = await startFixture();
    try {
      f.source.set(TypeUrl.Cluster, [cluster('a')]);
      const c = await f.client(cn(4), f.ca, 60_000);
      c.send({ typeUrl: TypeUrl.Cluster });
      await c.next();
      const [st] = f.server.streams();
      const notAfter = Date.parse(st?.clientCert?.notAfter ?? '');
      assert.ok(notAfter > Date.now() && notAfter <= Date.now() + 62_000, st?.clientCert?.notAfter);
      const [connected] = [...f.server.connectedCertificates()];
      assert.equal(connected?.identity.cn, cn(4));
      assert.equal(connected?.cert.notAfter, notAfter);
      c.close();
      await eventually(() => [...f.server.connectedCertificates()].length === 0);
    } finally {
      await f.close();
    }
  });

  it('/debug counts the request messages a stream sent and their encoded bytes', async () => {
    const f = await startFixture();
    try {
      f.source.set(TypeUrl.Cluster, [cluster('a')]);
      const c = await f.client(cn(5));
      const first = {
        versionInfo: '',
        resourceNames: [],
        typeUrl: TypeUrl.Cluster,
        responseNonce: '',
        node: { id: cn(5), cluster: 'x'.repeat(1000) },
      };
      c.send(first);
      const res = await c.next();
      c.ack(res);
      const ack = {
        versionInfo: res.versionInfo,
        resourceNames: [],
        typeUrl: TypeUrl.Cluster,
        responseNonce: res.nonce,
      };
      const bytes = encodeDiscoveryRequest(first).length + encodeDiscoveryRequest(ack).length;
      assert.ok(bytes > 1000);
      await eventually(() => f.server.streams()[0]?.received.requests === 2);
      assert.deepEqual(f.server.streams()[0]?.received, { requests: 2, bytes });
      c.close();
    } finally {
      await f.close();
    }
  });

  it('a proxy context failure is logged and the stream stays open', async () => {
    const f = await startFixture();
    try {
      f.source.set(TypeUrl.Cluster, [cluster('a')]);
      const c = await f.client(cn(3));
      const original = f.source.proxyContext.bind(f.source);
      f.source.proxyContext = () => {
        throw new Error('pod vanished');
      };
      c.send({ typeUrl: TypeUrl.Cluster });
      await eventually(() => f.server.streams().length === 1);
      assert.deepEqual(await c.drain(), []);
      f.source.proxyContext = original;
      f.source.push();
      assert.deepEqual((await c.next()).names, ['a']);
    } finally {
      await f.close();
    }
  });
});
