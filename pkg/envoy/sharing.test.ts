// Structural sharing across views: a generator returns the very message object
// it returned for the previous view when the resource's inputs did not change
// (MeshView identity contract + memoised builders), so the interner neither
// encodes nor hashes it again; a change re-encodes only what it changed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { httpRouteGroup, pod, sa, trafficTarget } from '../../test/support/catalog-fixtures.js';
import { referencesOf } from '../../test/support/envoy/crossref.js';
import { fetchSidecarConfig } from '../../test/support/envoy/fetch.js';
import {
  type BookstoreOptions,
  bookstoreObjects,
  fakeSecrets,
  POD_NAMES,
  proxyFor,
  storeOf,
  viewOf,
} from '../../test/support/envoy/mesh.js';
import type { MeshView } from '../catalog/types.js';
import { buildMeshView } from '../catalog/view.js';
import { DEFAULT_MESH_NAME } from '../mesh/constants.js';
import type { AnyObject, Pod, Service } from '../model/objects.js';
import { deriveEndpointSlices } from '../registry/local/endpoints.js';
import type { MeshStore } from '../registry/store.js';
import { ResourceInterner } from '../xds/cache/encoded.js';
import { GenerationCache, subscriptionKey } from '../xds/cache/generation.js';
import { meshGenerators } from './generators.js';
import { type Resource, TypeUrl } from './types.js';

const secrets = fakeSecrets('all');

/** Every sidecar resource of every pod, by `<pod> <type> <name>`. */
function everything(mesh: MeshView): Map<string, Resource> {
  const out = new Map<string, Resource>();
  const ctx = { mesh, secrets };
  for (const name of POD_NAMES) {
    const res = fetchSidecarConfig(proxyFor(mesh, name), ctx);
    for (const r of [...res.listeners, ...res.routes, ...res.clusters, ...res.endpoints, ...res.secrets]) {
      out.set(`${name} ${r.typeUrl} ${r.name}`, r);
    }
  }
  return out;
}

/** Keys whose message is not the same object in both generations. */
function replaced(before: Map<string, Resource>, after: Map<string, Resource>): string[] {
  assert.deepEqual([...after.keys()].sort(), [...before.keys()].sort());
  return [...after].filter(([k, r]) => before.get(k)?.message !== r.message).map(([k]) => k);
}

/** A mesh whose store the test changes, with each new view built from the one before. */
function evolving(opts: BookstoreOptions = {}) {
  const objects = bookstoreObjects(opts);
  const store: MeshStore = storeOf(objects);
  let view = viewOf(store);
  return {
    store,
    objects,
    view: () => view,
    next(): MeshView {
      view = buildMeshView(store, { meshName: DEFAULT_MESH_NAME, previous: view });
      return view;
    },
  };
}

/** Adds a bookstore-v1 pod (same service account) and the endpoint slices that follow from it. */
function addBookstoreV1Pod(store: MeshStore, objects: readonly AnyObject[]): void {
  const extra = pod('bookstore', 'bookstore-v1-3', {
    sa: 'bookstore-v1',
    ip: '10.244.1.12',
    labels: { app: 'bookstore', version: 'v1' },
    containerPorts: [{ name: 'api', containerPort: 14001 }],
  });
  const services = objects.filter((o): o is Service => o.kind === 'Service');
  const pods = [...objects.filter((o): o is Pod => o.kind === 'Pod'), extra];
  store.upsert(extra);
  // Unchanged slices are deep-equal and leave the store as it was.
  for (const slice of deriveEndpointSlices(services, pods)) store.upsert(slice);
}

function internAll(interner: ResourceInterner, resources: Iterable<Resource>): void {
  for (const r of resources) interner.intern(r);
}

for (const permissive of [false, true]) {
  const mode = permissive ? 'permissive' : 'SMI';

  test(`${mode}: an unrelated change leaves every message object identical and encodes nothing`, () => {
    const mesh = evolving({ permissive });
    const interner = new ResourceInterner();
    const before = everything(mesh.view());
    internAll(interner, before.values());
    const encodes = interner.encodes;
    // An HTTPRouteGroup no TrafficTarget names.
    mesh.store.upsert(httpRouteGroup('bookstore', 'unused', [{ name: 'x', pathRegex: '/x' }]));
    const after = everything(mesh.next());
    assert.deepEqual(replaced(before, after), []);
    internAll(interner, after.values());
    assert.equal(interner.encodes, encodes);
  });

  test(`${mode}: an endpoint change re-encodes only that service's ClusterLoadAssignment, once`, () => {
    const mesh = evolving({ permissive });
    const interner = new ResourceInterner();
    const before = everything(mesh.view());
    internAll(interner, before.values());
    const encodes = interner.encodes;
    addBookstoreV1Pod(mesh.store, mesh.objects);
    const after = everything(mesh.next());
    const changed = replaced(before, after);
    assert.ok(changed.length > 0);
    for (const key of changed) {
      assert.match(
        key,
        / type\.googleapis\.com\/envoy\.config\.endpoint\.v3\.ClusterLoadAssignment bookstore\/bookstore-v1\|14001$/,
      );
      assert.ok(JSON.stringify(after.get(key)?.message).includes('10.244.1.12'));
    }
    internAll(interner, after.values());
    // Every proxy holding it got the same new message object: one encoding.
    assert.equal(interner.encodes, encodes + 1);
  });
}

test("a TrafficTarget change rebuilds the destination's inbound route configs (its RBAC policy), never its listeners nor its HTTP ports' validation context", () => {
  const mesh = evolving();
  const before = everything(mesh.view());
  // bookthief joins bookstore's TrafficTarget (bookstore-v1 pods, HTTP only).
  mesh.store.upsert(
    trafficTarget(
      'bookstore',
      'bookstore',
      sa('bookstore-v1'),
      [sa('bookbuyer', 'bookbuyer'), sa('bookthief', 'bookthief')],
      [{ kind: 'HTTPRouteGroup', name: 'bookstore-routes' }],
    ),
  );
  const after = everything(mesh.next());
  // bookthief gains clusters and their secrets; of what every pod had, only the destinations'
  // inbound route configs (over RDS, so the policy reaches open connections) and bookthief's
  // outbound listener move: no inbound filter chain changes, so none is drained.
  const changed = [...before]
    .filter(([k, r]) => after.get(k)?.message !== r.message)
    .map(([k]) => k)
    .sort();
  const inbound = (pod: string, svc: string) =>
    `${pod} ${TypeUrl.RouteConfiguration} rds-inbound.14001.bookstore/${svc}`;
  assert.deepEqual(changed, [
    inbound('bookstore-v1-1', 'bookstore'),
    inbound('bookstore-v1-1', 'bookstore-v1'),
    inbound('bookstore-v1-2', 'bookstore'),
    inbound('bookstore-v1-2', 'bookstore-v1'),
    // It serves the apex too, whose rules the TrafficTarget sets (policy.md).
    inbound('bookstore-v2-1', 'bookstore'),
    `bookthief-1 ${TypeUrl.Listener} outbound-listener`,
  ]);
  // Their validation context is still there, the same message: the allowed callers are in RBAC alone.
  assert.ok(after.has(`bookstore-v1-1 ${TypeUrl.Secret} root-cert-for-mtls-inbound:bookstore/bookstore-v1`));
});

test('a split weight change re-encodes the routes that carry the weights; clusters keep their messages', () => {
  const mesh = evolving();
  const interner = new ResourceInterner();
  const before = everything(mesh.view());
  const encodedBefore = new Map([...before].map(([k, r]) => [k, interner.intern(r)]));
  const split = mesh.objects.find((o) => o.kind === 'TrafficSplit');
  assert.ok(split?.kind === 'TrafficSplit');
  mesh.store.upsert({
    ...split,
    spec: { ...split.spec, backends: split.spec.backends.map((b) => ({ ...b, weight: 50 })) },
  });
  const after = everything(mesh.next());
  // The outbound listener is memoised on the outbound plan, which a split
  // change replaces: rebuilt, but it encodes to the same bytes (HTTP ports
  // name their route config, not the weights), so no proxy is sent it again.
  const changed = replaced(before, after);
  assert.ok(changed.length > 0);
  for (const key of changed)
    assert.match(key, / (outbound-listener|rds-outbound\.14001\.bookstore\/bookstore)$/);
  // Only the apex's own route config: the other services' configs are untouched.
  const contentChanged = [...after]
    .filter(([k, r]) => interner.intern(r) !== encodedBefore.get(k))
    .map(([k]) => k);
  assert.deepEqual(contentChanged, [
    `bookbuyer-1 ${TypeUrl.RouteConfiguration} rds-outbound.14001.bookstore/bookstore`,
  ]);
  const route = after.get(contentChanged[0] ?? '')?.message;
  assert.ok(JSON.stringify(route).includes('"weight":{"value":50}'));
});

test('permissive: every caller identity gets the same Cluster message for a service (one encoding for all)', () => {
  const all = everything(viewOf(storeOf(bookstoreObjects({ permissive: true }))));
  const byName = new Map<string, Set<object>>();
  const callers = new Map<string, Set<string>>();
  for (const [key, r] of all) {
    if (r.typeUrl !== TypeUrl.Cluster || r.name.endsWith('|local') || !r.name.includes('|')) continue;
    byName.set(r.name, (byName.get(r.name) ?? new Set()).add(r.message));
    callers.set(r.name, (callers.get(r.name) ?? new Set()).add(key.split(' ')[0] ?? ''));
  }
  // bookstore-v1 is called by (at least) bookbuyer's, bookthief's and bookstore-v2's proxies.
  assert.ok((callers.get('bookstore/bookstore-v1|14001')?.size ?? 0) >= 3, JSON.stringify([...callers]));
  for (const [name, messages] of byName)
    assert.equal(messages.size, 1, `${name}: one message for every caller`);
  const interner = new ResourceInterner();
  internAll(
    interner,
    [...all.values()].filter((r) => r.typeUrl === TypeUrl.Cluster && byName.has(r.name)),
  );
  assert.equal(interner.encodes, byName.size);
});

test('GenerationCache: a new view version with unchanged output reuses the set and encodes nothing', () => {
  const mesh = evolving({ permissive: true });
  const interner = new ResourceInterner();
  const cache = new GenerationCache(interner, [TypeUrl.Secret]);
  const generators = meshGenerators();
  const generate = (view: MeshView) => {
    const ctx = { mesh: view, secrets };
    const sets = [];
    for (const name of POD_NAMES) {
      const proxy = proxyFor(view, name);
      const names = referencesOf(fetchSidecarConfig(proxy, ctx).clusters).edsClusters;
      for (const [typeUrl, requested] of [
        [TypeUrl.Cluster, undefined],
        [TypeUrl.Listener, undefined],
        [TypeUrl.ClusterLoadAssignment, names],
      ] as const) {
        const generator = generators.get(typeUrl);
        assert.ok(generator);
        const sub = { names: requested, key: subscriptionKey(requested) };
        sets.push(cache.get(typeUrl, proxy, ctx, sub, () => generator.generate(proxy, ctx, requested)));
      }
    }
    return sets;
  };
  const first = generate(mesh.view());
  const encodes = interner.encodes;
  mesh.store.upsert(httpRouteGroup('bookstore', 'unused', [{ name: 'x', pathRegex: '/x' }]));
  const second = generate(mesh.next());
  assert.equal(interner.encodes, encodes);
  assert.equal(second.length, first.length);
  for (const [i, set] of second.entries()) assert.equal(set, first[i]);

  addBookstoreV1Pod(mesh.store, mesh.objects);
  const third = generate(mesh.next());
  assert.equal(interner.encodes, encodes + 1);
  const moved = third.filter((set, i) => set !== second[i]);
  assert.ok(moved.length > 0);
  for (const set of moved) {
    assert.ok(set.resources.some((r) => r.name === 'bookstore/bookstore-v1|14001'));
    assert.equal(set.resources[0]?.typeUrl, TypeUrl.ClusterLoadAssignment);
  }
});
