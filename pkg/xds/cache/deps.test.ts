import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { endpointSlice } from '../../../test/support/catalog-fixtures.js';
import { referencesOf } from '../../../test/support/envoy/crossref.js';
import { bookbuyerEgresses } from '../../../test/support/envoy/egress-fixtures.js';
import { ingressObjects } from '../../../test/support/envoy/ingress.js';
import {
  bookstoreObjects,
  fakeSecrets,
  type PodName,
  proxyFor,
  storeOf,
} from '../../../test/support/envoy/mesh.js';
import type { MeshView, ProxyContext } from '../../catalog/types.js';
import { buildMeshView } from '../../catalog/view.js';
import { meshGenerators } from '../../envoy/generators.js';
import { type GenerationContext, TypeUrl } from '../../envoy/types.js';
import { DEFAULT_MESH_NAME } from '../../mesh/constants.js';
import { DependencyTracker } from './deps.js';
import { ResourceInterner } from './encoded.js';
import { type GeneratedSet, GenerationCache, subscriptionKey } from './generation.js';

const WILDCARD = { names: undefined, key: '*' } as const;
const generators = meshGenerators();

function setup(opts: { permissive?: boolean } = {}) {
  const store = storeOf(bookstoreObjects(opts));
  const secrets = fakeSecrets('all');
  let view: MeshView | undefined;
  const ctx = (): GenerationContext => {
    view = buildMeshView(store, { meshName: DEFAULT_MESH_NAME, ...(view ? { previous: view } : {}) });
    return { mesh: view, secrets };
  };
  const tracker = new DependencyTracker();
  const cache = new GenerationCache(new ResourceInterner(), [TypeUrl.Secret], tracker);
  const runs = new Map<string, number>();
  /** Generator runs per type. */
  const typeRuns = new Map<string, number>();
  /**
   * CDS and (by the names CDS references) EDS of one proxy through the cache,
   * counting generator runs per group and per type; returns the EDS set.
   */
  const generate = (proxy: ProxyContext, c: GenerationContext): GeneratedSet => {
    const count = (typeUrl: string) => {
      runs.set(proxy.groupKey, (runs.get(proxy.groupKey) ?? 0) + 1);
      typeRuns.set(typeUrl, (typeRuns.get(typeUrl) ?? 0) + 1);
    };
    const cds = generators.get(TypeUrl.Cluster);
    const eds = generators.get(TypeUrl.ClusterLoadAssignment);
    if (cds === undefined || eds === undefined) throw new Error('generators');
    cache.get(TypeUrl.Cluster, proxy, c, WILDCARD, (rc) => {
      count(TypeUrl.Cluster);
      return cds.generate(proxy, rc, undefined);
    });
    const names = referencesOf(cds.generate(proxy, c, undefined)).edsClusters;
    return cache.get(
      TypeUrl.ClusterLoadAssignment,
      proxy,
      c,
      { names, key: subscriptionKey(names) },
      (rc) => {
        count(TypeUrl.ClusterLoadAssignment);
        return eds.generate(proxy, rc, names);
      },
      eds.shared,
    );
  };
  const proxy = (name: PodName) => proxyFor(ctx().mesh, name);
  return { store, ctx, tracker, cache, runs, typeRuns, generate, proxy };
}

describe('DependencyTracker', () => {
  it('names only the groups that read a changed answer; the others are carried over without generating', () => {
    const { store, ctx, tracker, cache, runs, generate, proxy } = setup();
    const warehouse = proxy('bookwarehouse-1');
    const buyer = proxy('bookbuyer-1');
    const c1 = ctx();
    generate(warehouse, c1);
    generate(buyer, c1);
    const live = () => true;
    assert.deepEqual([...tracker.check(c1, live).affected], [], 'nothing changed since the generations');

    // bookwarehouse calls mysql; bookbuyer does not.
    store.upsert(endpointSlice('bookwarehouse', 'mysql', 'extra', [{ ip: '10.244.2.99' }], [{ port: 3306 }]));
    const c2 = ctx();
    assert.notEqual(c2.mesh.version, c1.mesh.version);
    const { affected, asked } = tracker.check(c2, live);
    assert.deepEqual([...affected], [warehouse.groupKey]);
    assert.ok(asked > 0 && asked === tracker.size, 'every live question asked once');
    cache.carryOver(c2, (g, t, sub) => tracker.carries(g, t, sub));

    const before = new Map(runs);
    generate(buyer, c2);
    assert.equal(runs.get(buyer.groupKey), before.get(buyer.groupKey), 'carried over: no generation');
    generate(warehouse, c2);
    assert.ok(
      (runs.get(warehouse.groupKey) ?? 0) > (before.get(warehouse.groupKey) ?? 0),
      'affected: generated',
    );
  });

  it("per entry: an endpoint change regenerates the EDS that read it, the same group's clusters are carried over", () => {
    const { store, ctx, tracker, cache, typeRuns, generate, proxy } = setup();
    const warehouse = proxy('bookwarehouse-1');
    generate(warehouse, ctx());
    tracker.check(ctx(), () => true);
    store.upsert(endpointSlice('bookwarehouse', 'mysql', 'extra', [{ ip: '10.244.2.99' }], [{ port: 3306 }]));
    const c = ctx();
    const { affected } = tracker.check(c, () => true);
    assert.deepEqual([...affected], [warehouse.groupKey]);
    const carried = cache.carryOver(c, (g, t, sub) => tracker.carries(g, t, sub));
    assert.equal(carried, 1, 'the CDS set');
    const before = new Map(typeRuns);
    const eds = generate(warehouse, c);
    assert.equal(typeRuns.get(TypeUrl.Cluster), before.get(TypeUrl.Cluster), 'CDS not generated again');
    assert.equal(
      typeRuns.get(TypeUrl.ClusterLoadAssignment),
      (before.get(TypeUrl.ClusterLoadAssignment) ?? 0) + 1,
    );
    assert.match(JSON.stringify(eds.resources.map((r) => r.name)), /bookwarehouse\/mysql\|3306/);
  });

  it('EDS is generated once for all groups with the same subscription, and once again per endpoint change', () => {
    // Permissive mode: every proxy may call every service, so all subscribe to the same clusters.
    const { store, ctx, tracker, cache, typeRuns, generate, proxy } = setup({ permissive: true });
    const pods = ['bookbuyer-1', 'bookthief-1', 'bookstore-v1-1', 'bookwarehouse-1'] as const;
    const proxies = pods.map((p) => proxy(p));
    assert.equal(new Set(proxies.map((p) => p.groupKey)).size, pods.length, 'four groups');
    const c1 = ctx();
    const sets = proxies.map((p) => generate(p, c1));
    assert.equal(typeRuns.get(TypeUrl.ClusterLoadAssignment), 1, 'one EDS generation for four groups');
    assert.equal(typeRuns.get(TypeUrl.Cluster), 4);
    assert.ok(
      sets.every((s) => s === sets[0]),
      'one shared set',
    );
    assert.deepEqual([...tracker.check(c1, () => true).affected], []);

    store.upsert(
      endpointSlice('bookstore', 'bookstore-v1', 'extra', [{ ip: '10.244.1.99' }], [{ port: 14001 }]),
    );
    const c2 = ctx();
    const { affected } = tracker.check(c2, () => true);
    // Every group holds the changed ClusterLoadAssignment, so every group is pushed...
    assert.deepEqual(new Set(affected), new Set(proxies.map((p) => p.groupKey)));
    cache.carryOver(c2, (g, t, sub) => tracker.carries(g, t, sub));
    const after = proxies.map((p) => generate(p, c2));
    // ...but the set is built once, and nobody's clusters again.
    assert.equal(typeRuns.get(TypeUrl.ClusterLoadAssignment), 2);
    assert.equal(typeRuns.get(TypeUrl.Cluster), 4);
    assert.ok(after.every((s) => s === after[0]));
    assert.notEqual(after[0]?.version, sets[0]?.version);
    assert.match(JSON.stringify(after[0]?.resources.map((r) => r.name)), /bookstore\/bookstore-v1\|14001/);

    // A change nobody reads carries the shared set over; a shared entry no live group holds is forgotten.
    assert.deepEqual([...tracker.check(c2, () => true).affected], []);
    tracker.check(c2, () => false);
    assert.equal(tracker.size, 0);
  });

  it('a generation between checks that saw another answer makes its group affected at the next check', () => {
    const { store, ctx, tracker, generate, cache, proxy, typeRuns } = setup();
    const warehouse = proxy('bookwarehouse-1');
    generate(warehouse, ctx());
    tracker.check(ctx(), () => true);
    // The state moves and back again between two checks, and a lookup saw the middle.
    store.upsert(endpointSlice('bookwarehouse', 'mysql', 'extra', [{ ip: '10.244.2.99' }], [{ port: 3306 }]));
    generate(warehouse, ctx());
    store.delete('EndpointSlice', 'bookwarehouse/extra');
    const c = ctx();
    const { affected } = tracker.check(c, () => true);
    assert.deepEqual([...affected], [warehouse.groupKey]);
    // The clusters read nothing that moved and are carried over; the endpoints seen in the middle are not.
    assert.equal(
      cache.carryOver(c, (g, t, sub) => tracker.carries(g, t, sub)),
      1,
    );
    const eds = typeRuns.get(TypeUrl.ClusterLoadAssignment) ?? 0;
    const held = generate(warehouse, c);
    assert.equal(typeRuns.get(TypeUrl.ClusterLoadAssignment), eds + 1);
    assert.ok(
      !held.resources.some((r) => Buffer.from(r.framed).includes('10.244.2.99')),
      'the current endpoints',
    );
  });

  it('the first Egress reaches every group that read the mesh-wide no-egress answer; later ones only their sources', () => {
    const { store, ctx, tracker, generate, proxy } = setup();
    const warehouse = proxy('bookwarehouse-1');
    const buyer = proxy('bookbuyer-1');
    const c1 = ctx();
    generate(warehouse, c1);
    generate(buyer, c1);
    tracker.check(c1, () => true);
    const [first, second] = bookbuyerEgresses().filter((o) => o.kind === 'Egress');
    assert.ok(first && second);
    store.upsert(first);
    const c2 = ctx();
    assert.deepEqual(
      new Set(tracker.check(c2, () => true).affected),
      new Set([warehouse.groupKey, buyer.groupKey]),
    );
    generate(warehouse, c2);
    generate(buyer, c2);
    tracker.check(c2, () => true);
    store.upsert(second);
    assert.deepEqual([...tracker.check(ctx(), () => true).affected], [buyer.groupKey]);
  });

  it('the first IngressBackend reaches the backend whose LDS read the mesh-wide no-ingress answer', () => {
    const store = storeOf(bookstoreObjects());
    const secrets = fakeSecrets('all');
    const tracker = new DependencyTracker();
    const lds = generators.get(TypeUrl.Listener);
    assert.ok(lds);
    const v1 = buildMeshView(store, { meshName: DEFAULT_MESH_NAME });
    const backend = proxyFor(v1, 'bookstore-v1-1');
    const rec = tracker.recorder({ mesh: v1, secrets });
    lds.generate(backend, rec.ctx, undefined);
    tracker.record(backend.groupKey, TypeUrl.Listener, '*', rec);
    tracker.check({ mesh: v1, secrets }, () => true);
    const ib = ingressObjects().find((o) => o.kind === 'IngressBackend');
    assert.ok(ib);
    store.upsert(ib);
    const v2 = buildMeshView(store, { meshName: DEFAULT_MESH_NAME, previous: v1 });
    assert.deepEqual([...tracker.check({ mesh: v2, secrets }, () => true).affected], [backend.groupKey]);
  });

  it('forgets groups that are not live, and output built without the recording context is always affected', () => {
    const { ctx, tracker, cache, proxy } = setup();
    const buyer = proxy('bookbuyer-1');
    const c = ctx();
    const cds = generators.get(TypeUrl.Cluster);
    assert.ok(cds);
    // A caller that ignores the context it is handed: the recording sees nothing.
    cache.get(TypeUrl.Cluster, buyer, c, WILDCARD, () => cds.generate(buyer, c, undefined));
    assert.ok(tracker.has(buyer.groupKey));
    assert.deepEqual([...tracker.check(c, () => true).affected], [buyer.groupKey]);
    assert.deepEqual([...tracker.check(c, () => true).affected], [buyer.groupKey], 'still, every time');
    tracker.check(c, () => false);
    assert.equal(tracker.has(buyer.groupKey), false);
    assert.equal(tracker.size, 0);
  });

  it('a generation that failed keeps its group affected until one succeeds', () => {
    const { ctx, tracker, cache, proxy } = setup();
    const buyer = proxy('bookbuyer-1');
    const c = ctx();
    const cds = generators.get(TypeUrl.Cluster);
    assert.ok(cds);
    assert.throws(() =>
      cache.get(TypeUrl.Cluster, buyer, c, WILDCARD, () => {
        throw new Error('generator bug');
      }),
    );
    assert.deepEqual([...tracker.check(c, () => true).affected], [buyer.groupKey]);
    assert.deepEqual([...tracker.check(c, () => true).affected], [buyer.groupKey], 'still');
    cache.get(TypeUrl.Cluster, buyer, c, WILDCARD, (rc) => cds.generate(buyer, rc, undefined));
    tracker.check(c, () => true); // the successful generation's first answers become the baseline
    assert.deepEqual([...tracker.check(c, () => true).affected], []);
  });
});
