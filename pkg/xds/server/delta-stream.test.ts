import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { status } from '@grpc/grpc-js';
import { pino } from 'pino';
import type { RawDeltaClient, ReceivedDeltaResponse } from '../../../test/support/xds/delta-test-client.js';
import {
  cluster,
  cn,
  endpoints,
  eventually,
  type Fixture,
  listener,
  route,
  startFixture,
} from '../../../test/support/xds/testing.js';
import { TypeUrl } from '../../envoy/types.js';
import { encodeResource } from '../cache/encoded.js';

/** name → version of a response's resources, as initial_resource_versions wants them. */
function versionsOf(...responses: ReceivedDeltaResponse[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const r of responses) for (const [n, v] of r.versions) out.set(n, v);
  return out;
}

describe('Delta ADS stream protocol (xDS rule 11)', () => {
  let f: Fixture;
  let seq = 500;
  let c: RawDeltaClient;
  const logLines: string[] = [];
  const proxy = (): Promise<RawDeltaClient> => f.deltaClient(cn(++seq));
  const streamOf = (name = cn(seq)) => f.server.streams().find((s) => s.identity.cn === name);
  const typeStatus = (typeUrl: string) => streamOf()?.types[typeUrl];
  // Requests cross the network while pushes are local calls: wait until the server saw the ACK.
  const acked = (typeUrl: string, version: string) =>
    eventually(() => typeStatus(typeUrl)?.ackedVersion === version);

  before(async () => {
    const logger = pino({ level: 'warn' }, { write: (line: string) => logLines.push(line) });
    f = await startFixture({ logger });
  });
  afterEach(() => {
    c?.close();
  });
  after(() => f.close());

  it('sentResources: what the client holds after updates and removals (debug config dump)', async () => {
    f.source.set(TypeUrl.Cluster, [cluster('a'), cluster('b')]);
    c = await proxy();
    c.send({ typeUrl: TypeUrl.Cluster, node: { id: cn(seq), cluster: 'x' } });
    c.ack(await c.next());
    f.source.set(TypeUrl.Cluster, [cluster('a'), cluster('b', 7), cluster('d')]);
    f.source.push();
    c.ack(await c.next()); // b and d
    f.source.set(TypeUrl.Cluster, [cluster('b', 7), cluster('d')]);
    f.source.push();
    const removal = await c.next();
    assert.deepEqual(removal.removedResources, ['a']);
    const streamId = streamOf()?.streamId ?? '';
    const held = f.server.sentResources(streamId)?.get(TypeUrl.Cluster) ?? [];
    assert.deepEqual(held.map((r) => r.name).sort(), ['b', 'd']);
    assert.equal(held.find((r) => r.name === 'b')?.hash, encodeResource(cluster('b', 7)).hash);
    assert.equal(f.server.sentResources('no-such-stream'), undefined);
  });

  it('wildcard CDS: per-resource versions, then only what changed, and removed_resources', async () => {
    f.source.set(TypeUrl.Cluster, [cluster('b'), cluster('a'), cluster('c')]);
    c = await proxy();
    c.send({ typeUrl: TypeUrl.Cluster, node: { id: cn(seq), cluster: 'x' } });
    const r1 = await c.next();
    assert.equal(r1.typeUrl, TypeUrl.Cluster);
    assert.deepEqual(r1.names, ['a', 'b', 'c']);
    assert.deepEqual(r1.removedResources, []);
    assert.equal(r1.controlPlaneId, 'skein');
    assert.notEqual(r1.nonce, '');
    assert.notEqual(r1.systemVersionInfo, '');
    // The per-resource version is the content hash of the encoded resource.
    assert.equal(r1.versions.get('a'), encodeResource(cluster('a')).hash);
    assert.equal(new Set(r1.versions.values()).size, 3);
    c.ack(r1);
    await acked(TypeUrl.Cluster, r1.systemVersionInfo);
    f.source.push(); // nothing changed
    f.source.version++; // a new view with identical content
    f.source.push();
    assert.deepEqual(await c.drain(), []);

    // b changes, c goes away, d appears: only b and d are sent, c is removed.
    f.source.set(TypeUrl.Cluster, [cluster('a'), cluster('b', 7), cluster('d')]);
    f.source.push();
    const updates = await c.next();
    assert.deepEqual(updates.names, ['b', 'd']);
    assert.notEqual(updates.versions.get('b'), r1.versions.get('b'));
    assert.deepEqual(updates.messages[0]?.['connect_timeout'], { seconds: 7 });
    assert.notEqual(updates.nonce, r1.nonce);
    // Make before break: the removal follows the updates.
    const removal = await c.next();
    assert.deepEqual(removal.names, []);
    assert.deepEqual(removal.removedResources, ['c']);
    assert.notEqual(removal.nonce, updates.nonce);
    c.ack(updates);
    c.ack(removal);
    await acked(TypeUrl.Cluster, removal.systemVersionInfo);
    assert.deepEqual(await c.drain(), []);
    assert.deepEqual(typeStatus(TypeUrl.Cluster), {
      subscribed: '*',
      sentVersion: removal.systemVersionInfo,
      ackedVersion: removal.systemVersionInfo,
    });
    assert.equal(streamOf()?.protocol, 'delta');
  });

  it('an empty wildcard set is still answered once (the client waits for it); equal content, equal versions', async () => {
    f.source.set(TypeUrl.Listener, []);
    c = await proxy();
    c.send({ typeUrl: TypeUrl.Listener });
    const r = await c.next();
    assert.deepEqual(r.names, []);
    assert.deepEqual(r.removedResources, []);
    f.source.set(TypeUrl.Listener, [listener('l1', 80)]);
    f.source.push();
    const r2 = await c.next();
    assert.deepEqual(r2.names, ['l1']);
    const other = await f.deltaClient(cn(++seq));
    other.send({ typeUrl: TypeUrl.Listener });
    const o = await other.next();
    assert.deepEqual([...o.versions], [...r2.versions]); // same content, same version
    other.close();
  });

  it('named EDS: subscribe and unsubscribe deltas, names sent once they appear (rule 8), removal of a deleted name', async () => {
    f.source.set(TypeUrl.ClusterLoadAssignment, [endpoints('a', '10.0.0.1'), endpoints('z', '10.0.0.9')]);
    c = await proxy();
    c.send({ typeUrl: TypeUrl.ClusterLoadAssignment, resourceNamesSubscribe: ['a', 'x'] });
    const r1 = await c.next();
    assert.deepEqual(r1.names, ['a']); // z was not asked for
    c.ack(r1);
    await acked(TypeUrl.ClusterLoadAssignment, r1.systemVersionInfo);
    // x appears: sent alone, a is unchanged.
    f.source.set(TypeUrl.ClusterLoadAssignment, [
      endpoints('a', '10.0.0.1'),
      endpoints('x', '10.0.0.2'),
      endpoints('z', '10.0.0.9'),
    ]);
    f.source.push();
    const r2 = await c.next();
    assert.deepEqual(r2.names, ['x']);
    c.ack(r2);
    // Subscribing b adds only b; it does not exist yet, so nothing is sent.
    c.send({ typeUrl: TypeUrl.ClusterLoadAssignment, resourceNamesSubscribe: ['b'] });
    assert.deepEqual(await c.drain(), []);
    assert.deepEqual(typeStatus(TypeUrl.ClusterLoadAssignment)?.subscribed, ['a', 'b', 'x']);
    // Unsubscribing a: no response; a later change of a is not sent.
    c.send({ typeUrl: TypeUrl.ClusterLoadAssignment, resourceNamesUnsubscribe: ['a'] });
    assert.deepEqual(await c.drain(), []);
    assert.deepEqual(typeStatus(TypeUrl.ClusterLoadAssignment)?.subscribed, ['b', 'x']);
    f.source.set(TypeUrl.ClusterLoadAssignment, [endpoints('a', '10.0.0.3'), endpoints('x', '10.0.0.2')]);
    f.source.push();
    assert.deepEqual(await c.drain(), []); // z vanished, but the client never had it
    // Deleting x, which the client holds: removed_resources.
    f.source.set(TypeUrl.ClusterLoadAssignment, [endpoints('a', '10.0.0.3')]);
    f.source.push();
    const r3 = await c.next();
    assert.deepEqual(r3.names, []);
    assert.deepEqual(r3.removedResources, ['x']);
    // Re-subscribing a sends it; re-subscribing a name we believe the client
    // holds sends it again too (it may have dropped it meanwhile).
    c.send({ typeUrl: TypeUrl.ClusterLoadAssignment, resourceNamesSubscribe: ['a'] });
    const r4 = await c.next();
    assert.deepEqual(r4.names, ['a']);
    c.send({ typeUrl: TypeUrl.ClusterLoadAssignment, resourceNamesSubscribe: ['a'] });
    const r5 = await c.next();
    assert.deepEqual(r5.names, ['a']);
    assert.equal(r5.versions.get('a'), r4.versions.get('a'));
  });

  it('a Cluster updated in place gets its unchanged ClusterLoadAssignment again (cluster warming), once', async () => {
    f.source.set(TypeUrl.Cluster, [cluster('a'), cluster('b')]);
    f.source.set(TypeUrl.ClusterLoadAssignment, [endpoints('a', '10.0.0.1'), endpoints('b', '10.0.0.2')]);
    c = await proxy();
    c.send({ typeUrl: TypeUrl.Cluster, node: { id: cn(seq), cluster: 'x' } });
    const cds = await c.next();
    c.ack(cds);
    c.send({ typeUrl: TypeUrl.ClusterLoadAssignment, resourceNamesSubscribe: ['a', 'b'] });
    const eds = await c.next();
    c.ack(eds);
    await acked(TypeUrl.ClusterLoadAssignment, eds.systemVersionInfo);
    f.source.set(TypeUrl.Cluster, [cluster('a'), cluster('b', 7), cluster('n')]);
    f.source.push();
    const cds2 = await c.next();
    assert.deepEqual(cds2.names, ['b', 'n']);
    const eds2 = await c.next();
    assert.equal(eds2.typeUrl, TypeUrl.ClusterLoadAssignment);
    assert.deepEqual(eds2.names, ['b']); // the new cluster n has its own, new subscription
    assert.equal(eds2.versions.get('b'), eds.versions.get('b'));
    c.ack(cds2);
    c.ack(eds2);
    f.source.push();
    assert.deepEqual(await c.drain(), []);
  });

  it('wildcard only for LDS/CDS (rule 6): RDS with no names gets nothing, "*" is ignored for EDS', async () => {
    f.source.set(TypeUrl.RouteConfiguration, [route('r1', 'a')]);
    f.source.set(TypeUrl.ClusterLoadAssignment, [endpoints('a', '10.0.0.1')]);
    c = await proxy();
    c.send({ typeUrl: TypeUrl.RouteConfiguration });
    c.send({ typeUrl: TypeUrl.ClusterLoadAssignment, resourceNamesSubscribe: ['*'] });
    assert.deepEqual(await c.drain(), []);
    assert.deepEqual(typeStatus(TypeUrl.RouteConfiguration)?.subscribed, []);
    assert.deepEqual(typeStatus(TypeUrl.ClusterLoadAssignment)?.subscribed, []);
  });

  it('explicit "*" for LDS, names next to it, and leaving the wildcard', async () => {
    f.source.set(TypeUrl.Listener, [listener('l1', 1), listener('l2', 2)]);
    c = await proxy();
    c.send({ typeUrl: TypeUrl.Listener, resourceNamesSubscribe: ['l2'] });
    const r1 = await c.next();
    assert.deepEqual(r1.names, ['l2']);
    c.send({ typeUrl: TypeUrl.Listener, resourceNamesSubscribe: ['*'], responseNonce: r1.nonce });
    const r2 = await c.next();
    assert.deepEqual(r2.names, ['l1']); // l2 is held already
    assert.deepEqual(typeStatus(TypeUrl.Listener)?.subscribed, '*');
    assert.deepEqual(typeStatus(TypeUrl.Listener)?.names, ['l2']);
    // Unsubscribing an explicit name under a wildcard: the server states the
    // resource again (it still exists for the wildcard).
    c.send({ typeUrl: TypeUrl.Listener, resourceNamesUnsubscribe: ['l2'], responseNonce: r2.nonce });
    const r3 = await c.next();
    assert.deepEqual(r3.names, ['l2']);
    // Leaving the wildcard with nothing named: the client drops its listeners
    // itself; later changes are not sent.
    c.send({ typeUrl: TypeUrl.Listener, resourceNamesUnsubscribe: ['*'], responseNonce: r3.nonce });
    assert.deepEqual(await c.drain(), []);
    f.source.set(TypeUrl.Listener, [listener('l1', 11), listener('l3', 3)]);
    f.source.push();
    assert.deepEqual(await c.drain(), []);
    assert.deepEqual(typeStatus(TypeUrl.Listener)?.subscribed, []);
  });

  it('a reconnect with initial_resource_versions keeps the wildcard and re-sends only what changed', async () => {
    f.source.set(TypeUrl.Cluster, [cluster('a'), cluster('b'), cluster('c')]);
    const name = cn(++seq);
    c = await f.deltaClient(name);
    c.send({ typeUrl: TypeUrl.Cluster });
    const r1 = await c.next();
    c.ack(r1);
    c.close();
    await eventually(() => streamOf(name) === undefined);

    // Unchanged: the new stream re-sends nothing (one empty answer says "in
    // sync"), and stays a wildcard.
    c = await f.deltaClient(name);
    c.send({ typeUrl: TypeUrl.Cluster, initialResourceVersions: versionsOf(r1) });
    const inSync = await c.next();
    assert.deepEqual([inSync.names, inSync.removedResources], [[], []]);
    assert.equal(inSync.systemVersionInfo, r1.systemVersionInfo);
    assert.deepEqual(await c.drain(), []);
    assert.deepEqual(streamOf(name)?.types[TypeUrl.Cluster], {
      subscribed: '*',
      sentVersion: r1.systemVersionInfo,
    });
    c.close();
    await eventually(() => streamOf(name) === undefined);

    // Meanwhile b changed and c went away; the client also reports a name it
    // holds from elsewhere (z) that does not exist here.
    f.source.set(TypeUrl.Cluster, [cluster('a'), cluster('b', 9)]);
    c = await f.deltaClient(name);
    const held = versionsOf(r1);
    held.set('z', 'some-version');
    c.send({ typeUrl: TypeUrl.Cluster, resourceNamesSubscribe: ['*'], initialResourceVersions: held });
    const r2 = await c.next();
    assert.deepEqual(r2.names, ['b']);
    assert.deepEqual(r2.removedResources.sort(), ['c', 'z']);
    const st = streamOf(name)?.types[TypeUrl.Cluster];
    assert.equal(st?.subscribed, '*');
    assert.equal(st?.names, undefined); // the held names did not become named subscriptions
    // Still a wildcard: a new cluster arrives without being asked for.
    f.source.set(TypeUrl.Cluster, [cluster('a'), cluster('b', 9), cluster('n')]);
    f.source.push();
    assert.deepEqual((await c.next()).names, ['n']);
  });

  it('a named reconnect sends only the subscribed names the client lacks or holds in another version', async () => {
    f.source.set(TypeUrl.RouteConfiguration, [route('r1', 'a'), route('r2', 'a'), route('r3', 'a')]);
    c = await proxy();
    c.send({ typeUrl: TypeUrl.RouteConfiguration, resourceNamesSubscribe: ['r1', 'r2'] });
    const r1 = await c.next();
    assert.deepEqual(r1.names, ['r1', 'r2']);
    const held = versionsOf(r1);
    held.set('r2', 'stale');
    const again = await f.deltaClient(cn(seq));
    try {
      again.send({
        typeUrl: TypeUrl.RouteConfiguration,
        resourceNamesSubscribe: ['r1', 'r2', 'r3'],
        initialResourceVersions: held,
      });
      const r2 = await again.next();
      assert.deepEqual(r2.names, ['r2', 'r3']);
      assert.deepEqual(r2.removedResources, []);
    } finally {
      again.close();
    }
  });

  it('NACK: logged with proxy and reason, state kept, the rejected content not resent (rule 3)', async () => {
    f.source.set(TypeUrl.Cluster, [cluster('a'), cluster('b')]);
    c = await proxy();
    c.send({ typeUrl: TypeUrl.Cluster });
    const r1 = await c.next();
    c.ack(r1);
    await acked(TypeUrl.Cluster, r1.systemVersionInfo);
    f.source.set(TypeUrl.Cluster, [cluster('a', 5), cluster('b')]);
    f.source.push();
    const r2 = await c.next();
    assert.deepEqual(r2.names, ['a']);
    c.nack(r2, 'bad cluster a');
    await eventually(() => typeStatus(TypeUrl.Cluster)?.lastNackMessage === 'bad cluster a');
    assert.deepEqual(await c.drain(), []); // a NACK is not answered with the same content
    f.source.version++;
    f.source.push();
    assert.deepEqual(await c.drain(), []);
    assert.deepEqual(typeStatus(TypeUrl.Cluster), {
      subscribed: '*',
      sentVersion: r2.systemVersionInfo,
      ackedVersion: r1.systemVersionInfo,
      nackedVersion: r2.systemVersionInfo,
      lastNackMessage: 'bad cluster a',
    });
    const warning = logLines.map((l) => JSON.parse(l)).find((l) => l.error === 'bad cluster a');
    assert.equal(warning?.proxy, cn(seq));
    assert.equal(warning?.typeUrl, TypeUrl.Cluster);
    assert.match(warning?.msg ?? '', /NACK/);
    // A fix is sent, and only the resource that changed.
    f.source.set(TypeUrl.Cluster, [cluster('a', 2), cluster('b')]);
    f.source.push();
    const r3 = await c.next();
    assert.deepEqual(r3.names, ['a']);
    assert.deepEqual(r3.messages[0]?.['connect_timeout'], { seconds: 2 });
  });

  it('a subscription delta with an old nonce is still applied (unlike SotW rule 2)', async () => {
    f.source.set(TypeUrl.ClusterLoadAssignment, [endpoints('a', '10.0.0.1'), endpoints('b', '10.0.0.2')]);
    c = await proxy();
    c.send({ typeUrl: TypeUrl.ClusterLoadAssignment, resourceNamesSubscribe: ['a'] });
    const r1 = await c.next();
    f.source.set(TypeUrl.ClusterLoadAssignment, [endpoints('a', '10.0.0.3'), endpoints('b', '10.0.0.2')]);
    f.source.push();
    const r2 = await c.next();
    c.send({
      typeUrl: TypeUrl.ClusterLoadAssignment,
      responseNonce: r1.nonce,
      resourceNamesSubscribe: ['b'],
    });
    const r3 = await c.next();
    assert.deepEqual(r3.names, ['b']);
    // The old nonce ACKed r1, not r2.
    assert.equal(typeStatus(TypeUrl.ClusterLoadAssignment)?.ackedVersion, r1.systemVersionInfo);
    assert.notEqual(r1.systemVersionInfo, r2.systemVersionInfo);
  });

  it('pushes make before break: updates CDS → EDS → LDS → RDS, then removals in reverse (rule 10)', async () => {
    f.source.set(TypeUrl.Cluster, [cluster('a')]);
    f.source.set(TypeUrl.ClusterLoadAssignment, [endpoints('a', '10.0.0.1')]);
    f.source.set(TypeUrl.Listener, [listener('l', 80), listener('old', 81)]);
    f.source.set(TypeUrl.RouteConfiguration, [route('r', 'a')]);
    c = await proxy();
    // Subscribe in reverse order, then change everything at once.
    const subs: [string, string[]][] = [
      [TypeUrl.RouteConfiguration, ['r']],
      [TypeUrl.Listener, []],
      [TypeUrl.ClusterLoadAssignment, ['a', 'b']],
      [TypeUrl.Cluster, []],
    ];
    for (const [typeUrl, names] of subs) {
      c.send({ typeUrl, resourceNamesSubscribe: names });
      c.ack(await c.next());
    }
    // Cluster a is replaced by b (routes move to b, the listener "old" goes away).
    f.source.set(TypeUrl.Cluster, [cluster('b')]);
    f.source.set(TypeUrl.ClusterLoadAssignment, [endpoints('b', '10.0.0.2')]);
    f.source.set(TypeUrl.Listener, [listener('l', 90)]);
    f.source.set(TypeUrl.RouteConfiguration, [route('r', 'b')]);
    f.source.push();
    const seen: string[] = [];
    for (let i = 0; i < 7; i++) {
      const r = await c.next();
      const kind = r.typeUrl.split('.').pop();
      seen.push(`${kind} +[${r.names.join()}] -[${r.removedResources.join()}]`);
    }
    assert.deepEqual(seen, [
      'Cluster +[b] -[]',
      'ClusterLoadAssignment +[b] -[]',
      'Listener +[l] -[]',
      'RouteConfiguration +[r] -[]',
      'Listener +[] -[old]',
      'ClusterLoadAssignment +[] -[a]',
      'Cluster +[] -[a]',
    ]);
    assert.deepEqual(await c.drain(), []);
  });

  it('the plaintext port takes the identity from node.id; a bad certificate CN is refused', async () => {
    const g = await startFixture({ insecurePort: 0 });
    try {
      g.source.set(TypeUrl.Cluster, [cluster('a')]);
      const plain = g.insecureDeltaClient();
      plain.send({ typeUrl: TypeUrl.Cluster, node: { id: cn(7, 'grpc-client'), cluster: 'x' } });
      assert.deepEqual((await plain.next()).names, ['a']);
      assert.ok([...g.source.connected.values()].some((i) => i.cn === cn(7, 'grpc-client')));
      const bad = await g.deltaClient('not-a-proxy.example');
      bad.send({ typeUrl: TypeUrl.Cluster });
      const s = await bad.status;
      assert.equal(s.code, status.UNAUTHENTICATED);
      const nodeless = g.insecureDeltaClient();
      nodeless.send({ typeUrl: TypeUrl.Cluster });
      assert.equal((await nodeless.status).code, status.UNAUTHENTICATED);
    } finally {
      await g.close();
    }
  });

  it('a disconnect calls proxyDisconnected; SotW and Delta streams share generation', async () => {
    f.source.set(TypeUrl.Cluster, [cluster('shared')]);
    const names = [cn(++seq), cn(++seq)];
    for (const n of names) f.source.groups.set(n, 'group-delta');
    const before = f.source.generateCalls.get(TypeUrl.Cluster) ?? 0;
    const sotw = await f.client(names[0] ?? '');
    c = await f.deltaClient(names[1] ?? '');
    try {
      sotw.send({ typeUrl: TypeUrl.Cluster });
      const s = await sotw.next();
      c.send({ typeUrl: TypeUrl.Cluster });
      const d = await c.next();
      assert.deepEqual(s.names, d.names);
      assert.equal((f.source.generateCalls.get(TypeUrl.Cluster) ?? 0) - before, 1);
    } finally {
      sotw.close();
    }
    const streamId = [...f.source.connected].find(([, id]) => id.cn === names[1])?.[0];
    assert.ok(streamId);
    c.close();
    await eventually(() => f.source.disconnected.includes(streamId));
  });
});
