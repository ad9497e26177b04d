// Delta ADS over the real generators and the bookstore mesh: a sidecar fetches
// its configuration the way Envoy does on the delta protocol, and a proxy
// never gets another identity's key.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { crossReferenceProblems, referencesOf } from '../../../test/support/envoy/crossref.js';
import { bookstoreMesh, proxyFor } from '../../../test/support/envoy/mesh.js';
import { resourceProblems } from '../../../test/support/envoy/roundtrip.js';
import type { RawDeltaClient, ReceivedDeltaResponse } from '../../../test/support/xds/delta-test-client.js';
import { type Fixture, MeshSource, startFixture } from '../../../test/support/xds/testing.js';
import { type Resource, TypeUrl } from '../../envoy/types.js';

function typeUrlOf(text: string): TypeUrl {
  const t = Object.values(TypeUrl).find((u) => u === text);
  if (t === undefined) throw new Error(`unknown type ${text}`);
  return t;
}

/** Folds delta responses into what the client holds, per type. */
class Held {
  readonly byType = new Map<string, Map<string, Resource>>();
  apply(r: ReceivedDeltaResponse): void {
    let held = this.byType.get(r.typeUrl);
    if (held === undefined) {
      held = new Map();
      this.byType.set(r.typeUrl, held);
    }
    for (const [i, name] of r.names.entries()) {
      const message = r.messages[i];
      if (message) held.set(name, { name, typeUrl: typeUrlOf(r.typeUrl), message });
    }
    for (const name of r.removedResources) held.delete(name);
  }
  of(typeUrl: string): Resource[] {
    return [...(this.byType.get(typeUrl)?.values() ?? [])];
  }
}

/**
 * Envoy's delta order: wildcard CDS and LDS, then EDS, RDS and SDS by the
 * names those reference, subscribing only the names not subscribed yet.
 */
async function fetchLikeEnvoy(c: RawDeltaClient, nodeId: string): Promise<Held> {
  const held = new Held();
  const subscribed = new Map<string, Set<string>>();
  c.send({ typeUrl: TypeUrl.Cluster, node: { id: nodeId, cluster: 'x' } });
  c.send({ typeUrl: TypeUrl.Listener });
  for (;;) {
    let r: ReceivedDeltaResponse;
    try {
      // Long enough that a loaded machine (CI, 2 cores) is not mistaken for quiet.
      r = await c.next(1500);
    } catch {
      return held; // quiet: everything referenced has arrived
    }
    held.apply(r);
    c.ack(r);
    const refs = referencesOf([
      ...held.of(TypeUrl.Listener),
      ...held.of(TypeUrl.Cluster),
      ...held.of(TypeUrl.RouteConfiguration),
    ]);
    const wanted: [string, Set<string>][] = [
      [TypeUrl.ClusterLoadAssignment, refs.edsClusters],
      [TypeUrl.RouteConfiguration, refs.routes],
      [TypeUrl.Secret, refs.secrets],
    ];
    for (const [typeUrl, names] of wanted) {
      const known = subscribed.get(typeUrl) ?? new Set();
      const added = [...names].filter((n) => !known.has(n));
      if (added.length === 0) continue;
      for (const n of added) known.add(n);
      subscribed.set(typeUrl, known);
      c.send({ typeUrl, resourceNamesSubscribe: added });
    }
  }
}

describe('Delta ADS with the real generators', () => {
  const mesh = bookstoreMesh();
  let f: Fixture<MeshSource>;
  before(async () => {
    f = await startFixture({ source: new MeshSource(mesh) });
  });
  after(() => f.close());

  it('a sidecar gets a complete, consistent configuration over delta', async () => {
    const buyer = proxyFor(mesh, 'bookbuyer-1');
    const c = await f.deltaClient(buyer.identity.cn);
    try {
      const held = await fetchLikeEnvoy(c, buyer.identity.cn);
      const res = {
        listeners: held.of(TypeUrl.Listener),
        routes: held.of(TypeUrl.RouteConfiguration),
        clusters: held.of(TypeUrl.Cluster),
        endpoints: held.of(TypeUrl.ClusterLoadAssignment),
        secrets: held.of(TypeUrl.Secret),
      };
      assert.ok(res.clusters.length > 0 && res.listeners.length > 0 && res.endpoints.length > 0);
      assert.deepEqual(crossReferenceProblems(res), []);
      assert.deepEqual(resourceProblems(Object.values(res).flat()), []);
      assert.ok(res.secrets.some((s) => s.name === 'service-cert:self'));
    } finally {
      c.close();
    }
  });

  it("a proxy never gets another identity's service certificate", async () => {
    const thief = proxyFor(mesh, 'bookthief-1');
    const c = await f.deltaClient(thief.identity.cn);
    try {
      const others = ['service-cert:bookstore/bookstore-v1', 'service-cert:bookbuyer/bookbuyer'];
      c.send({
        typeUrl: TypeUrl.Secret,
        node: { id: thief.identity.cn, cluster: 'x' },
        resourceNamesSubscribe: [...others, 'service-cert:bookthief/bookthief'],
      });
      const r = await c.next();
      assert.deepEqual(r.names, ['service-cert:bookthief/bookthief']);
      c.ack(r);
      // Neither re-subscribing nor '*' nor a reconnect claiming to hold them gets them.
      c.send({ typeUrl: TypeUrl.Secret, resourceNamesSubscribe: [...others, '*'] });
      assert.deepEqual(await c.drain(), []);
      const again = await f.deltaClient(thief.identity.cn);
      try {
        again.send({
          typeUrl: TypeUrl.Secret,
          resourceNamesSubscribe: others,
          initialResourceVersions: new Map(others.map((n) => [n, 'x'])),
        });
        const r2 = await again.next();
        assert.deepEqual(r2.names, []);
        assert.deepEqual(r2.removedResources.sort(), [...others].sort()); // "you hold nothing valid by that name"
      } finally {
        again.close();
      }
    } finally {
      c.close();
    }
  });
});
