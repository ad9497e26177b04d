import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { status } from '@grpc/grpc-js';
import { cluster, cn, type Fixture, startFixture, TRUST_DOMAIN } from '../../../test/support/xds/testing.js';
import { TypeUrl } from '../../envoy/types.js';
import { identityFromNodeId } from './auth.js';

describe('ADS server authentication', () => {
  let f: Fixture;
  before(async () => {
    f = await startFixture({ insecurePort: 0 });
    f.source.set(TypeUrl.Cluster, [cluster('a')]);
  });
  after(() => f.close());

  it('serves a proxy whose certificate CN is a valid proxy identity; node.id is ignored', async () => {
    const c = await f.client(cn(1));
    c.send({ typeUrl: TypeUrl.Cluster, node: { id: cn(999), cluster: 'x' } });
    const res = await c.next();
    assert.deepEqual(res.names, ['a']);
    const identities = [...f.source.connected.values()].map((i) => i.cn);
    assert.deepEqual(identities, [cn(1)]);
    const [st] = f.server.streams();
    assert.equal(st?.identity.cn, cn(1));
    assert.equal(st?.nodeId, cn(999));
    c.close();
    await new Promise((r) => setTimeout(r, 50));
  });

  it('refuses the handshake for a certificate from another CA', async () => {
    const c = await f.client(cn(2), f.otherCa);
    c.send({ typeUrl: TypeUrl.Cluster });
    const s = await c.status;
    assert.equal(s.code, status.UNAVAILABLE);
    assert.ok(![...f.source.connected.values()].some((i) => i.cn === cn(2)));
  });

  it('closes a stream whose certificate CN is not a proxy CN with UNAUTHENTICATED', async () => {
    const c = await f.client('not-a-proxy.example');
    c.send({ typeUrl: TypeUrl.Cluster, node: { id: cn(3), cluster: 'x' } });
    const s = await c.status;
    assert.equal(s.code, status.UNAUTHENTICATED);
    assert.match(s.details, /invalid proxy identity/);
    assert.ok(![...f.source.connected.values()].some((i) => i.cn === cn(3)));
  });

  it('closes a stream from another trust domain with UNAUTHENTICATED', async () => {
    const c = await f.client(cn(4, 'sa', 'ns', 'other.domain'));
    c.send({ typeUrl: TypeUrl.Cluster });
    const s = await c.status;
    assert.equal(s.code, status.UNAUTHENTICATED);
    assert.match(s.details, /trust domain "other\.domain" is not "cluster\.local"/);
  });

  it('closes the stream with PERMISSION_DENIED when the source refuses the proxy', async () => {
    f.source.refuse = 'no pod carries this proxy uuid';
    try {
      const c = await f.client(cn(5));
      c.send({ typeUrl: TypeUrl.Cluster });
      const s = await c.status;
      assert.equal(s.code, status.PERMISSION_DENIED);
      assert.match(s.details, /no pod carries/);
      assert.equal(f.source.disconnected.length, 1); // only the first test's stream
    } finally {
      f.source.refuse = undefined;
    }
  });

  it('takes the identity from node.id on the plaintext port', async () => {
    const c = f.insecureClient();
    c.send({ typeUrl: TypeUrl.Cluster, node: { id: cn(6, 'grpc-client'), cluster: 'x' } });
    const res = await c.next();
    assert.deepEqual(res.names, ['a']);
    assert.ok([...f.source.connected.values()].some((i) => i.cn === cn(6, 'grpc-client')));
  });

  it('refuses a malformed node.id on the plaintext port', async () => {
    const c = f.insecureClient();
    c.send({
      typeUrl: TypeUrl.Cluster,
      node: { id: 'sidecar~10.0.0.1~pod.ns~ns.svc.cluster.local', cluster: 'x' },
    });
    const s = await c.status;
    assert.equal(s.code, status.UNAUTHENTICATED);
    assert.match(s.details, /node\.id/);
  });
});

describe('ADS server ports', () => {
  it('has no plaintext port unless configured', async () => {
    const f = await startFixture();
    try {
      assert.equal(f.insecurePort, undefined);
      assert.ok(f.port > 0);
    } finally {
      await f.close();
    }
  });

  it('identityFromNodeId rejects an empty node id', () => {
    assert.throws(() => identityFromNodeId('', TRUST_DOMAIN), /no node\.id/);
  });
});
