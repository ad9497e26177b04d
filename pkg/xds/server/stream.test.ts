import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import type { RawAdsClient } from '../../../test/support/xds/test-client.js';
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

describe('ADS stream protocol (xDS rules)', () => {
  let f: Fixture;
  let seq = 100;
  let c: RawAdsClient;
  const proxy = (): Promise<RawAdsClient> => f.client(cn(++seq));
  const typeStatus = (typeUrl: string) =>
    f.server.streams().find((s) => s.identity.cn === cn(seq))?.types[typeUrl];
  // Requests cross the network while pushes are local calls: wait until the server saw the ACK.
  const acked = (typeUrl: string, version: string) =>
    eventually(() => typeStatus(typeUrl)?.ackedVersion === version);

  before(async () => {
    f = await startFixture();
  });
  afterEach(() => {
    c?.close();
  });
  after(() => f.close());

  it('sentResources: the resources of the last response per type (debug config dump)', async () => {
    f.source.set(TypeUrl.Cluster, [cluster('b'), cluster('a')]);
    c = await proxy();
    c.send({ typeUrl: TypeUrl.Cluster, node: { id: cn(seq), cluster: 'x' } });
    const r1 = await c.next();
    const streamId = f.server.streams().find((s) => s.identity.cn === cn(seq))?.streamId ?? '';
    const sent = f.server.sentResources(streamId);
    assert.deepEqual(
      sent?.get(TypeUrl.Cluster)?.map((r) => r.name),
      r1.names,
    );
    assert.equal(sent?.has(TypeUrl.Listener), false);
  });

  it('wildcard CDS: full set, fresh nonce, ACK not answered, unchanged push not re-sent (rules 1, 4, 5, 7)', async () => {
    f.source.set(TypeUrl.Cluster, [cluster('b'), cluster('a')]);
    c = await proxy();
    c.send({ typeUrl: TypeUrl.Cluster, node: { id: cn(seq), cluster: 'x' } });
    const r1 = await c.next();
    assert.equal(r1.typeUrl, TypeUrl.Cluster);
    assert.deepEqual(r1.names, ['a', 'b']);
    assert.equal(r1.controlPlaneId, 'skein');
    assert.notEqual(r1.versionInfo, '');
    assert.notEqual(r1.nonce, '');
    c.ack(r1);
    await acked(TypeUrl.Cluster, r1.versionInfo);
    f.source.push(); // nothing changed
    assert.deepEqual(await c.drain(), []);

    f.source.set(TypeUrl.Cluster, [cluster('a'), cluster('c')]); // b deleted, c added
    f.source.push();
    const r2 = await c.next();
    assert.deepEqual(r2.names, ['a', 'c']); // the full set: b's absence deletes it
    assert.notEqual(r2.versionInfo, r1.versionInfo);
    assert.notEqual(r2.nonce, r1.nonce);
    c.ack(r2);
    await acked(TypeUrl.Cluster, r2.versionInfo);
    f.source.version++; // a new view with identical content
    f.source.push();
    assert.deepEqual(await c.drain(), []);
    assert.deepEqual(typeStatus(TypeUrl.Cluster), {
      subscribed: '*',
      sentVersion: r2.versionInfo,
      ackedVersion: r2.versionInfo,
    });
  });

  it('version_info is per type and a hash of the content', async () => {
    f.source.set(TypeUrl.Cluster, [cluster('a')]);
    f.source.set(TypeUrl.Listener, [listener('l1', 8080)]);
    c = await proxy();
    c.send({ typeUrl: TypeUrl.Cluster });
    const cds = await c.next();
    c.send({ typeUrl: TypeUrl.Listener });
    const lds = await c.next();
    assert.notEqual(cds.versionInfo, lds.versionInfo);
    const other = await f.client(cn(++seq));
    other.send({ typeUrl: TypeUrl.Cluster });
    assert.equal((await other.next()).versionInfo, cds.versionInfo); // same content, same version
    other.close();
  });

  it('named EDS: sends the existing requested names, and a missing one once it appears (rule 8)', async () => {
    f.source.set(TypeUrl.ClusterLoadAssignment, [endpoints('a', '10.0.0.1'), endpoints('z', '10.0.0.9')]);
    c = await proxy();
    c.send({ typeUrl: TypeUrl.ClusterLoadAssignment, resourceNames: ['a', 'x'] });
    const r1 = await c.next();
    assert.deepEqual(r1.names, ['a']);
    c.ack(r1, ['a', 'x']);
    await acked(TypeUrl.ClusterLoadAssignment, r1.versionInfo);
    assert.deepEqual(await c.drain(), []);
    f.source.set(TypeUrl.ClusterLoadAssignment, [
      endpoints('a', '10.0.0.1'),
      endpoints('x', '10.0.0.2'),
      endpoints('z', '10.0.0.9'),
    ]);
    f.source.push();
    const r2 = await c.next();
    // EDS is grouped like incremental xDS (rule 7): only what the proxy lacks.
    assert.deepEqual(r2.names, ['x']);
  });

  it('filters generator output to the requested names and drops duplicates (rule 9)', async () => {
    const names = ['a', 'b', 'c', 'd'];
    // Four names make the fake generator return everything, twice 'a'.
    f.source.set(TypeUrl.ClusterLoadAssignment, [
      ...names.map((n) => endpoints(n, '10.0.0.1')),
      endpoints('a', '10.0.0.7'),
      endpoints('unrequested', '10.0.0.8'),
    ]);
    c = await proxy();
    c.send({ typeUrl: TypeUrl.ClusterLoadAssignment, resourceNames: names });
    const r = await c.next();
    assert.deepEqual(r.names, names);
  });

  it('ignores a request with a stale nonce, including its resource names (rule 2)', async () => {
    f.source.set(TypeUrl.ClusterLoadAssignment, [endpoints('a', '10.0.0.1'), endpoints('b', '10.0.0.2')]);
    c = await proxy();
    c.send({ typeUrl: TypeUrl.ClusterLoadAssignment, resourceNames: ['a'] });
    const r1 = await c.next();
    f.source.set(TypeUrl.ClusterLoadAssignment, [endpoints('a', '10.0.0.3'), endpoints('b', '10.0.0.2')]);
    f.source.push();
    const r2 = await c.next();
    assert.notEqual(r2.nonce, r1.nonce);
    // A request answering the older response, asking for more: ignored entirely.
    c.send({ typeUrl: TypeUrl.ClusterLoadAssignment, resourceNames: ['a', 'b'], responseNonce: r1.nonce });
    assert.deepEqual(await c.drain(), []);
    const st = f.server.streams().find((s) => s.identity.cn === cn(seq));
    assert.deepEqual(st?.types[TypeUrl.ClusterLoadAssignment]?.subscribed, ['a']);
    assert.equal(st?.types[TypeUrl.ClusterLoadAssignment]?.ackedVersion, undefined);
    // The same with the current nonce is honoured.
    c.send({ typeUrl: TypeUrl.ClusterLoadAssignment, resourceNames: ['a', 'b'], responseNonce: r2.nonce });
    const r3 = await c.next();
    assert.deepEqual(r3.names, ['b']); // 'a' is held as it is (rule 7: EDS may be partial)
  });

  /** Sets the fake source's ClusterLoadAssignments (name → endpoint IP) and pushes. */
  const pushEndpoints = (ips: Record<string, string>) => {
    f.source.set(
      TypeUrl.ClusterLoadAssignment,
      Object.entries(ips).map(([n, ip]) => endpoints(n, ip)),
    );
    f.source.push();
  };

  it('SotW EDS/RDS/SDS: a push carries only what changed, under the version of the whole set (rule 7)', async () => {
    const names = ['a', 'b', 'c'];
    pushEndpoints({ a: '10.0.0.1', b: '10.0.0.1', c: '10.0.0.1' });
    c = await proxy();
    c.send({
      typeUrl: TypeUrl.ClusterLoadAssignment,
      node: { id: cn(seq), cluster: 'x' },
      resourceNames: names,
    });
    const r1 = await c.next();
    assert.deepEqual(r1.names, names); // the stream's first response: everything
    c.ack(r1, names);
    await acked(TypeUrl.ClusterLoadAssignment, r1.versionInfo);
    pushEndpoints({ a: '10.0.0.1', b: '10.0.0.2', c: '10.0.0.1' });
    const r2 = await c.next();
    assert.deepEqual(r2.names, ['b']);
    assert.notEqual(r2.versionInfo, r1.versionInfo);
    c.ack(r2, names);
    await acked(TypeUrl.ClusterLoadAssignment, r2.versionInfo);
    // The version names the whole set the proxy now holds: a new stream asking
    // for the same names gets every resource under that very version.
    const fresh = await f.client(cn(++seq));
    try {
      fresh.send({
        typeUrl: TypeUrl.ClusterLoadAssignment,
        node: { id: cn(seq), cluster: 'x' },
        resourceNames: names,
      });
      const all = await fresh.next();
      assert.deepEqual(all.names, names);
      assert.equal(all.versionInfo, r2.versionInfo);
    } finally {
      fresh.close();
    }
    // A name that no longer exists leaves nothing to send (the proxy keeps it; SotW cannot delete it).
    pushEndpoints({ a: '10.0.0.1', b: '10.0.0.2' });
    assert.deepEqual(await c.drain(), []);
  });

  it("SotW: a Cluster changed in place gets its unchanged ClusterLoadAssignment again, so Envoy's rebuilt cluster warms at once", async () => {
    f.source.set(TypeUrl.Cluster, [cluster('a'), cluster('b')]);
    f.source.set(TypeUrl.ClusterLoadAssignment, [endpoints('a', '10.0.0.1'), endpoints('b', '10.0.0.2')]);
    c = await proxy();
    c.send({ typeUrl: TypeUrl.Cluster, node: { id: cn(seq), cluster: 'x' } });
    const cds = await c.next();
    c.ack(cds);
    c.send({ typeUrl: TypeUrl.ClusterLoadAssignment, resourceNames: ['a', 'b'] });
    const eds = await c.next();
    c.ack(eds, ['a', 'b']);
    await acked(TypeUrl.ClusterLoadAssignment, eds.versionInfo);
    // b's cluster changes (say, a new outlier setting); no endpoint does.
    f.source.set(TypeUrl.Cluster, [cluster('a'), cluster('b', 7)]);
    f.source.push();
    const cds2 = await c.next();
    assert.equal(cds2.typeUrl, TypeUrl.Cluster);
    const eds2 = await c.next();
    assert.equal(eds2.typeUrl, TypeUrl.ClusterLoadAssignment);
    assert.deepEqual(eds2.names, ['b']); // only the rebuilt cluster's
    assert.equal(eds2.versionInfo, eds.versionInfo); // the same set the proxy holds
    c.ack(cds2);
    c.ack(eds2, ['a', 'b']);
    // Once: an unchanged push sends nothing more.
    f.source.push();
    assert.deepEqual(await c.drain(), []);
  });

  it('SotW: after a NACK the next response carries the full set again; CDS always does', async () => {
    const names = ['a', 'b', 'c'];
    pushEndpoints({ a: '10.0.0.1', b: '10.0.0.1', c: '10.0.0.1' });
    f.source.set(TypeUrl.Cluster, [cluster('a'), cluster('b')]);
    c = await proxy();
    c.send({ typeUrl: TypeUrl.Cluster, node: { id: cn(seq), cluster: 'x' } });
    c.ack(await c.next());
    c.send({ typeUrl: TypeUrl.ClusterLoadAssignment, resourceNames: names });
    const r1 = await c.next();
    c.ack(r1, names);
    await acked(TypeUrl.ClusterLoadAssignment, r1.versionInfo);
    f.source.set(TypeUrl.Cluster, [cluster('a', 2), cluster('b')]);
    pushEndpoints({ a: '10.0.0.2', b: '10.0.0.1', c: '10.0.0.1' });
    const cds2 = await c.next();
    const r2 = await c.next();
    assert.deepEqual(cds2.names, ['a', 'b']); // CDS: the full set, b unchanged included
    assert.deepEqual(r2.names, ['a']);
    c.send({
      typeUrl: TypeUrl.ClusterLoadAssignment,
      versionInfo: r1.versionInfo,
      responseNonce: r2.nonce,
      resourceNames: names,
      errorDetail: { code: 3, message: 'rejected' },
    });
    await eventually(() => typeStatus(TypeUrl.ClusterLoadAssignment)?.nackedVersion === r2.versionInfo);
    // The rejected content is not sent again on its own...
    f.source.push();
    assert.deepEqual(await c.drain(), []);
    // ...but the next change sends the full set: the proxy may hold part of what it rejected.
    pushEndpoints({ a: '10.0.0.2', b: '10.0.0.1', c: '10.0.0.3' });
    const r3 = await c.next();
    assert.deepEqual(r3.names, names);
    c.ack(r3, names);
    await acked(TypeUrl.ClusterLoadAssignment, r3.versionInfo);
    // Accepted: partial again.
    pushEndpoints({ a: '10.0.0.2', b: '10.0.0.4', c: '10.0.0.3' });
    assert.deepEqual((await c.next()).names, ['b']);
  });

  it('RDS/EDS: an empty name list unsubscribes, a later subscription resends (rule 6)', async () => {
    f.source.set(TypeUrl.RouteConfiguration, [route('rds-outbound.80', 'a')]);
    c = await proxy();
    // Empty first request on a non-wildcard type: nothing subscribed, nothing sent.
    c.send({ typeUrl: TypeUrl.RouteConfiguration });
    assert.deepEqual(await c.drain(), []);
    c.send({ typeUrl: TypeUrl.RouteConfiguration, resourceNames: ['rds-outbound.80'] });
    const r1 = await c.next();
    assert.deepEqual(r1.names, ['rds-outbound.80']);
    c.ack(r1, []);
    await acked(TypeUrl.RouteConfiguration, r1.versionInfo);
    f.source.set(TypeUrl.RouteConfiguration, [route('rds-outbound.80', 'b')]);
    f.source.push();
    assert.deepEqual(await c.drain(), []); // unsubscribed: the change is not sent
    const st = f.server.streams().find((s) => s.identity.cn === cn(seq));
    assert.deepEqual(st?.types[TypeUrl.RouteConfiguration]?.subscribed, []);
    c.send({
      typeUrl: TypeUrl.RouteConfiguration,
      resourceNames: ['rds-outbound.80'],
      responseNonce: r1.nonce,
    });
    const r2 = await c.next();
    assert.deepEqual(r2.names, ['rds-outbound.80']);
  });

  it('named LDS/CDS (proxyless) and "*" (rule 6)', async () => {
    f.source.set(TypeUrl.Listener, [listener('l1', 1), listener('l2', 2), listener('l3', 3)]);
    c = await proxy();
    c.send({ typeUrl: TypeUrl.Listener, resourceNames: ['l2'] });
    const r1 = await c.next();
    assert.deepEqual(r1.names, ['l2']);
    c.ack(r1, ['l2', '*']);
    const r2 = await c.next();
    assert.deepEqual(r2.names, ['l1', 'l2', 'l3']);
    // An empty list keeps a wildcard subscription.
    c.ack(r2, []);
    assert.deepEqual(await c.drain(), []);
    const st = f.server.streams().find((s) => s.identity.cn === cn(seq));
    assert.equal(st?.types[TypeUrl.Listener]?.subscribed, '*');
  });

  it('NACK: logged and tracked, the same content is not resent, changed content is (rules 3, 4)', async () => {
    f.source.set(TypeUrl.Cluster, [cluster('a')]);
    c = await proxy();
    c.send({ typeUrl: TypeUrl.Cluster });
    const r1 = await c.next();
    c.ack(r1);
    await acked(TypeUrl.Cluster, r1.versionInfo);
    f.source.set(TypeUrl.Cluster, [cluster('a', 5)]);
    f.source.push();
    const r2 = await c.next();
    c.send({
      typeUrl: TypeUrl.Cluster,
      versionInfo: r1.versionInfo,
      responseNonce: r2.nonce,
      errorDetail: { code: 3, message: 'bad cluster a' },
    });
    assert.deepEqual(await c.drain(), []);
    f.source.version++;
    f.source.push();
    assert.deepEqual(await c.drain(), []);
    assert.deepEqual(typeStatus(TypeUrl.Cluster), {
      subscribed: '*',
      sentVersion: r2.versionInfo,
      ackedVersion: r1.versionInfo,
      nackedVersion: r2.versionInfo,
      lastNackMessage: 'bad cluster a',
    });
    f.source.set(TypeUrl.Cluster, [cluster('a', 2)]);
    f.source.push();
    const r3 = await c.next();
    assert.notEqual(r3.versionInfo, r2.versionInfo);
    assert.deepEqual(r3.messages[0]?.['connect_timeout'], { seconds: 2 });
  });

  it('pushes in make-before-break order CDS → EDS → LDS → RDS (rule 10)', async () => {
    f.source.set(TypeUrl.Cluster, [cluster('a')]);
    f.source.set(TypeUrl.ClusterLoadAssignment, [endpoints('a', '10.0.0.1')]);
    f.source.set(TypeUrl.Listener, [listener('l', 80)]);
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
      c.send({ typeUrl, resourceNames: names });
      const r = await c.next();
      c.ack(r, names);
      await acked(typeUrl, r.versionInfo);
    }
    f.source.set(TypeUrl.Cluster, [cluster('a'), cluster('b')]);
    f.source.set(TypeUrl.ClusterLoadAssignment, [endpoints('a', '10.0.0.1'), endpoints('b', '10.0.0.2')]);
    f.source.set(TypeUrl.Listener, [listener('l', 81)]);
    f.source.set(TypeUrl.RouteConfiguration, [route('r', 'b')]);
    f.source.push();
    const order = [];
    for (let i = 0; i < 4; i++) order.push((await c.next()).typeUrl);
    assert.deepEqual(order, [
      TypeUrl.Cluster,
      TypeUrl.ClusterLoadAssignment,
      TypeUrl.Listener,
      TypeUrl.RouteConfiguration,
    ]);
  });

  it('a disconnect calls proxyDisconnected; a reconnect gets the full state again', async () => {
    f.source.set(TypeUrl.Cluster, [cluster('a'), cluster('b')]);
    const name = cn(++seq);
    c = await f.client(name);
    c.send({ typeUrl: TypeUrl.Cluster });
    const r1 = await c.next();
    c.ack(r1);
    const streamId = [...f.source.connected].find(([, id]) => id.cn === name)?.[0];
    assert.ok(streamId);
    c.close();
    await eventually(() => f.source.disconnected.includes(streamId));
    assert.ok(!f.server.streams().some((s) => s.streamId === streamId));
    c = await f.client(name);
    // A reconnecting proxy reports the version it holds; it still gets the full state.
    c.send({ typeUrl: TypeUrl.Cluster, versionInfo: r1.versionInfo });
    const r2 = await c.next();
    assert.deepEqual(r2.names, ['a', 'b']);
    assert.equal(r2.versionInfo, r1.versionInfo);
  });

  it('a generator failure for one proxy is contained; other streams keep working', async () => {
    f.source.set(TypeUrl.Cluster, [cluster('a')]);
    const badName = cn(++seq);
    const bad = await f.client(badName);
    c = await proxy();
    f.source.failFor.add(badName);
    try {
      bad.send({ typeUrl: TypeUrl.Cluster });
      c.send({ typeUrl: TypeUrl.Cluster });
      assert.deepEqual((await c.next()).names, ['a']);
      assert.deepEqual(await bad.drain(), []);
      f.source.failFor.delete(badName);
      f.source.set(TypeUrl.Cluster, [cluster('a'), cluster('b')]);
      f.source.push();
      assert.deepEqual((await bad.next()).names, ['a', 'b']); // the stream survived
      assert.deepEqual((await c.next()).names, ['a', 'b']);
    } finally {
      bad.close();
    }
  });

  it('proxies of one group share generation and encoded bytes', async () => {
    f.source.set(TypeUrl.Cluster, [cluster('shared-1'), cluster('shared-2')]);
    const names = [cn(++seq), cn(++seq), cn(++seq)];
    for (const n of names) f.source.groups.set(n, 'group-1');
    const before = f.source.generateCalls.get(TypeUrl.Cluster) ?? 0;
    const clients = await Promise.all(names.map((n) => f.client(n)));
    try {
      const responses = [];
      for (const cl of clients) {
        cl.send({ typeUrl: TypeUrl.Cluster });
        responses.push(await cl.next());
      }
      assert.equal((f.source.generateCalls.get(TypeUrl.Cluster) ?? 0) - before, 1);
      for (const r of responses) assert.deepEqual(r.resources, responses[0]?.resources);
    } finally {
      for (const cl of clients) cl.close();
    }
  });
});
