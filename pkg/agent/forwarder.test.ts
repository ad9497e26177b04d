import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { RawAdsClient } from '../../test/support/xds/test-client.js';
import { cluster, cn, type Fixture, startFixture } from '../../test/support/xds/testing.js';
import { TypeUrl } from '../envoy/types.js';
import { silentLogger } from '../logger/logger.js';
import { AdsForwarder } from './forwarder.js';

// The forwarder in front of the real ADS server (mTLS, identity from the certificate).
describe('AdsForwarder', () => {
  let f: Fixture;
  let dir: string;
  let agent: AdsForwarder;
  const socket = () => `unix:${path.join(dir, 'ads.sock')}`;
  const files = () => ({
    certFile: path.join(dir, 'tls.crt'),
    keyFile: path.join(dir, 'tls.key'),
    caFile: path.join(dir, 'ca.crt'),
  });
  async function writeCert(commonName: string): Promise<void> {
    const c = await f.ca.issue({ commonName, validityMs: 3_600_000, usage: 'client' });
    await writeFile(files().certFile, c.certPem);
    await writeFile(files().keyFile, c.keyPem);
    await writeFile(files().caFile, f.ca.trustBundlePem);
  }
  const plaintext = () =>
    new RawAdsClient({ address: socket(), credentials: grpc.credentials.createInsecure() });

  before(async () => {
    f = await startFixture();
    f.source.set(TypeUrl.Cluster, [cluster('a')]);
    dir = await mkdtemp(path.join(tmpdir(), 'skein-agent-'));
    await writeCert(cn(1));
    agent = new AdsForwarder({
      listen: { unix: path.join(dir, 'ads.sock') },
      controller: `127.0.0.1:${f.port}`,
      serverName: 'localhost',
      credentials: files(),
      logger: silentLogger(),
    });
    await agent.start();
  });
  after(async () => {
    await agent.stop();
    await f.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('relays a plaintext stream over mTLS: the server sees the certificate identity', async () => {
    const c = plaintext();
    c.send({ typeUrl: TypeUrl.Cluster, node: { id: cn(1), cluster: 'x' } });
    const res = await c.next();
    assert.deepEqual(res.names, ['a']);
    c.ack(res);
    f.source.set(TypeUrl.Cluster, [cluster('a'), cluster('b')]);
    assert.deepEqual((await c.next()).names, ['a', 'b']);
    const st = f.server.streams().find((s) => s.identity.cn === cn(1));
    assert.ok(st?.clientCert, 'an mTLS stream, with its client certificate');
    c.close();
  });

  it('refuses a node.id of another identity before anything reaches the controller', async () => {
    const before = f.server.streamCount;
    const refusedBefore = agent.counts.refused;
    for (const claim of [cn(2), cn(1, 'other-sa'), '']) {
      const c = plaintext();
      c.send({ typeUrl: TypeUrl.Cluster, node: { id: claim, cluster: 'x' } });
      const s = await c.status;
      assert.equal(s.code, grpc.status.PERMISSION_DENIED, claim);
      assert.match(s.details, /is not this pod's identity/);
    }
    assert.equal(agent.counts.refused, refusedBefore + 3);
    assert.ok(f.server.streamCount <= before);
    assert.ok(![...f.source.connected.values()].some((i) => i.cn === cn(2)));
  });

  it('presents the certificate on disk at each new stream (rotation by file swap)', async () => {
    const serials = new Set<string>();
    for (let i = 0; i < 2; i++) {
      await writeCert(cn(1));
      const c = plaintext();
      c.send({ typeUrl: TypeUrl.Cluster, node: { id: cn(1), cluster: 'x' } });
      await c.next();
      const st = f.server.streams().find((s) => s.identity.cn === cn(1));
      assert.ok(st?.clientCert);
      serials.add(st.clientCert.serial);
      c.close();
      // Wait until the server saw the stream go, so the next lookup finds the new one.
      for (let t = 0; t < 100 && f.server.streams().some((s) => s.identity.cn === cn(1)); t++)
        await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(serials.size, 2);
  });
});
