import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { BuiltinCA } from '../../certificate/builtin.js';
import { type CloseReason, ConnectionTable, peerKey } from './connections.js';

/** A connected pair on loopback: the server side goes into the table, as the ADS listener does. */
async function connectedPair(table: ConnectionTable): Promise<{ server: net.Socket; client: net.Socket }> {
  const listener = net.createServer();
  const accepted = new Promise<net.Socket>((resolve) => listener.once('connection', resolve));
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const { port } = listener.address() as net.AddressInfo;
  const client = net.connect(port, '127.0.0.1');
  const server = await accepted;
  listener.close();
  table.add(server);
  return { server, client };
}

function closed(socket: net.Socket): Promise<void> {
  return socket.destroyed
    ? Promise.resolve()
    : new Promise((resolve) => socket.once('close', () => resolve()));
}

describe('ConnectionTable', () => {
  let ca: BuiltinCA;
  let other: BuiltinCA;
  let leafDer: Buffer;
  before(async () => {
    [ca, other] = await Promise.all([BuiltinCA.create(), BuiltinCA.create({ commonName: 'other' })]);
    const leaf = await ca.issue({ commonName: 'p.sidecar.sa.ns.cluster.local', validityMs: 60_000 });
    leafDer = new X509Certificate(leaf.certPem).raw;
  });
  const sockets: net.Socket[] = [];
  after(() => {
    for (const s of sockets) s.destroy();
  });

  it('ends a connection when the client certificate it was opened with expires', async () => {
    const reasons: CloseReason[] = [];
    const table = new ConnectionTable((_peer, reason) => reasons.push(reason));
    const { server, client } = await connectedPair(table);
    sockets.push(client);
    const peer = peerKey(server.remoteAddress, server.remotePort) ?? '';
    const started = Date.now();
    table.certify(peer, leafDer, started + 150);
    assert.equal(table.size, 1);
    await closed(client);
    assert.ok(Date.now() - started >= 140, `closed after ${Date.now() - started} ms`);
    assert.deepEqual(reasons, ['certificate-expired']);
    assert.equal(table.size, 0);
  });

  it('arms the expiry once per connection: a second stream on it does not move it', async () => {
    const table = new ConnectionTable();
    const { server, client } = await connectedPair(table);
    sockets.push(client);
    const peer = peerKey(server.remoteAddress, server.remotePort) ?? '';
    table.certify(peer, leafDer, Date.now() + 100);
    table.certify(peer, leafDer, Date.now() + 3_600_000);
    await closed(client);
  });

  it('keeps connections a root of the bundle issued and ends the others', async () => {
    const reasons: CloseReason[] = [];
    const table = new ConnectionTable((_peer, reason) => reasons.push(reason));
    const kept = await connectedPair(table);
    const ended = await connectedPair(table);
    const uncertified = await connectedPair(table);
    sockets.push(kept.client, ended.client, uncertified.client);
    const otherLeaf = await other.issue({ commonName: 'q.sidecar.sa.ns.cluster.local', validityMs: 60_000 });
    const far = Date.now() + 3_600_000;
    table.certify(peerKey(kept.server.remoteAddress, kept.server.remotePort) ?? '', leafDer, far);
    table.certify(
      peerKey(ended.server.remoteAddress, ended.server.remotePort) ?? '',
      new X509Certificate(otherLeaf.certPem).raw,
      far,
    );
    // Stage 1's bundle holds both roots: nothing ends.
    assert.equal(table.closeUntrusted(ca.rootCertPem + other.rootCertPem), 0);
    // The other root retired.
    assert.equal(table.closeUntrusted(ca.rootCertPem), 1);
    await closed(ended.client);
    assert.deepEqual(reasons, ['issuer-untrusted']);
    assert.equal(kept.server.destroyed, false);
    assert.equal(uncertified.server.destroyed, false, 'a connection with no stream yet has nothing to judge');
    assert.equal(table.size, 2);
  });

  it('forgets a connection the peer closed', async () => {
    const table = new ConnectionTable();
    const { server, client } = await connectedPair(table);
    client.destroy();
    await closed(server);
    assert.equal(table.size, 0);
  });
});
