// Targeted pushes end to end: the bookstore mesh in a store, the real policy
// engine and generators, a real ADS server and SotW clients that fetch like
// Envoy. A change pushes the proxies whose configuration it touches, and no
// other proxy is pushed or has anything generated for it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { endpointSlice, sa, trafficSplit, trafficTarget } from '../../../test/support/catalog-fixtures.js';
import { referencesOf } from '../../../test/support/envoy/crossref.js';
import {
  bookstoreObjects,
  FAKE_TRUST_BUNDLE,
  type PodName,
  proxyFor,
  storeOf,
} from '../../../test/support/envoy/mesh.js';
import type { RawAdsClient, ReceivedResponse } from '../../../test/support/xds/test-client.js';
import { type Fixture, startFixture } from '../../../test/support/xds/testing.js';
import { AnnouncementBus } from '../../announcements/bus.js';
import { publishStoreChanges } from '../../announcements/store.js';
import { type ProxyGroup, proxyContext, proxyGroup } from '../../catalog/proxies.js';
import type { MeshView, ProxyContext } from '../../catalog/types.js';
import { buildMeshView } from '../../catalog/view.js';
import type { IssuedCertificate, SecretSource } from '../../certificate/types.js';
import { meshGenerators } from '../../envoy/generators.js';
import { type GenerationContext, type Resource, type ResourceGenerator, TypeUrl } from '../../envoy/types.js';
import { silentLogger } from '../../logger/logger.js';
import { DEFAULT_MESH_NAME } from '../../mesh/constants.js';
import type { ProxyIdentity } from '../../mesh/identity.js';
import type { Pod } from '../../model/objects.js';
import { DependencyTracker } from '../cache/deps.js';
import type { ProxyConfigSource } from '../server/types.js';
import { PushPlanner } from './planner.js';

/** Certificates issued on demand in the test; the same object until re-issued. */
class Secrets implements SecretSource {
  readonly trustBundlePem = FAKE_TRUST_BUNDLE;
  version = 0;
  private readonly certs = new Map<string, IssuedCertificate>();
  issue(key: string): void {
    this.version++;
    this.certs.set(key, {
      commonName: key,
      certPem: `-----BEGIN CERTIFICATE-----\n${key}-${this.version}\n-----END CERTIFICATE-----\n`,
      keyPem: `-----BEGIN PRIVATE KEY-----\n${key}-${this.version}\n-----END PRIVATE KEY-----\n`,
      caPem: FAKE_TRUST_BUNDLE,
      serialNumber: String(this.version),
      notBefore: new Date(0),
      notAfter: new Date(86_400_000),
      uriSans: [],
      dnsSans: [],
    });
  }
  serviceCertificate(key: string): IssuedCertificate | undefined {
    return this.certs.get(key);
  }
}

/** The controller's wiring in small: store → view → generators, pushes through a PushPlanner. */
class MeshSource implements ProxyConfigSource {
  readonly store = storeOf(bookstoreObjects());
  readonly bus = new AnnouncementBus({ logger: silentLogger() });
  readonly secrets = new Secrets();
  readonly tracker = new DependencyTracker();
  /** Generator runs per service account (the groups of the test mesh are one per account). */
  readonly generated = new Map<string, number>();
  /** Generator runs per type URL. */
  readonly generatedTypes = new Map<string, number>();
  /** Push triggers per service account. */
  readonly pushes = new Map<string, number>();
  readonly generators: ReadonlyMap<string, ResourceGenerator>;
  readonly planner: PushPlanner<ProxyGroup>;
  carryOver: (
    ctx: GenerationContext,
    unaffected: (g: string, typeUrl: string, sub: string) => boolean,
  ) => void = () => {};
  private readonly identities = new Map<string, ProxyIdentity>();
  private view: MeshView | undefined;
  private readonly stopPublishing: () => void;

  constructor() {
    const counted = new Map<string, ResourceGenerator>();
    for (const [typeUrl, g] of meshGenerators()) {
      counted.set(typeUrl, {
        typeUrl: g.typeUrl,
        ...(g.shared ? { shared: true } : {}),
        generate: (proxy, ctx, requested) => {
          bump(this.generated, proxy.identity.serviceAccount);
          bump(this.generatedTypes, typeUrl);
          return g.generate(proxy, ctx, requested);
        },
      });
    }
    this.generators = counted;
    this.stopPublishing = publishStoreChanges(this.store, this.bus);
    this.planner = new PushPlanner<ProxyGroup>(this.bus, {
      tracker: this.tracker,
      context: () => this.generationContext(),
      membership: (identity, mesh, previous) => proxyGroup(identity, mesh, previous),
      carryOver: (ctx, unaffected) => this.carryOver(ctx, unaffected),
      minIntervalMs: 0,
      logger: silentLogger(),
    });
  }

  currentView(): MeshView {
    this.view = buildMeshView(this.store, {
      meshName: DEFAULT_MESH_NAME,
      ...(this.view ? { previous: this.view } : {}),
    });
    return this.view;
  }
  proxyConnected(identity: ProxyIdentity, streamId: string): void {
    this.identities.set(streamId, identity);
  }
  proxyDisconnected(streamId: string): void {
    this.identities.delete(streamId);
  }
  proxyContext(identity: ProxyIdentity): ProxyContext {
    return proxyContext(identity, this.currentView());
  }
  generationContext(): GenerationContext {
    return { mesh: this.currentView(), secrets: this.secrets };
  }
  onPush(streamId: string, push: (changedAt?: number) => void): () => void {
    const identity = this.identities.get(streamId);
    if (identity === undefined) throw new Error('onPush before proxyConnected');
    return this.planner.register(streamId, identity, (at) => {
      bump(this.pushes, identity.serviceAccount);
      push(at);
    });
  }
  close(): void {
    this.planner.close();
    this.stopPublishing();
  }
}

function bump(m: Map<string, number>, key: string): void {
  m.set(key, (m.get(key) ?? 0) + 1);
}

const REFERENCED: readonly [TypeUrl, keyof ReturnType<typeof referencesOf>][] = [
  [TypeUrl.ClusterLoadAssignment, 'edsClusters'],
  [TypeUrl.RouteConfiguration, 'routes'],
  [TypeUrl.Secret, 'secrets'],
];

/** A SotW client that subscribes and ACKs like Envoy: wildcard CDS/LDS, then the names they reference. */
class EnvoyLike {
  readonly held = new Map<string, ReceivedResponse>();
  private readonly subscribed = new Map<string, string[]>();

  constructor(
    readonly name: PodName,
    readonly ctx: ProxyContext,
    private readonly c: RawAdsClient,
  ) {}

  /**
   * Handles responses until none arrived for `quietMs`; returns them. With
   * `expecting`, waits up to 5 s for the first one (a loaded machine).
   */
  async settle(quietMs = 300, expecting = false): Promise<ReceivedResponse[]> {
    const got: ReceivedResponse[] = [];
    for (;;) {
      let r: ReceivedResponse;
      try {
        r = await this.c.next(got.length === 0 && expecting ? 5000 : quietMs);
      } catch {
        return got;
      }
      got.push(r);
      this.held.set(r.typeUrl, r);
      this.c.ack(r, this.subscribed.get(r.typeUrl) ?? []);
      const refs = referencesOf(
        [TypeUrl.Listener, TypeUrl.Cluster, TypeUrl.RouteConfiguration].flatMap((t) => this.resources(t)),
      );
      for (const [typeUrl, key] of REFERENCED) {
        const names = [...refs[key]].sort();
        if (names.join() === (this.subscribed.get(typeUrl) ?? []).join()) continue;
        this.subscribed.set(typeUrl, names);
        const last = this.held.get(typeUrl);
        this.c.send({
          typeUrl,
          resourceNames: names,
          versionInfo: last?.versionInfo ?? '',
          responseNonce: last?.nonce ?? '',
        });
      }
    }
  }

  start(): void {
    this.c.send({ typeUrl: TypeUrl.Cluster, node: { id: this.ctx.identity.cn, cluster: 'x' } });
    this.c.send({ typeUrl: TypeUrl.Listener });
  }

  resources(typeUrl: TypeUrl): Resource[] {
    const r = this.held.get(typeUrl);
    if (r === undefined) return [];
    return r.messages.map((message, i) => ({ name: r.names[i] ?? '', typeUrl, message }));
  }

  /** Waits `ms` and returns what arrived (expected: nothing). */
  drain(ms = 200): Promise<ReceivedResponse[]> {
    return this.c.drain(ms);
  }
}

const PODS: readonly PodName[] = [
  'bookbuyer-1',
  'bookthief-1',
  'bookstore-v1-1',
  'bookwarehouse-1',
  'mysql-1',
];

describe('targeted pushes (PushPlanner + DependencyTracker)', () => {
  let source: MeshSource;
  let f: Fixture<MeshSource>;
  const proxies = new Map<PodName, EnvoyLike>();
  const proxy = (name: PodName): EnvoyLike => {
    const p = proxies.get(name);
    if (p === undefined) throw new Error(name);
    return p;
  };

  before(async () => {
    source = new MeshSource();
    for (const key of ['bookbuyer/bookbuyer', 'bookstore/bookstore-v1', 'bookwarehouse/bookwarehouse'])
      source.secrets.issue(key);
    f = await startFixture({ source, dependencies: source.tracker });
    source.carryOver = (ctx, unaffected) => f.server.cache.carryOver(ctx, unaffected);
    const mesh = source.currentView();
    for (const name of PODS) {
      const ctx = proxyFor(mesh, name);
      proxies.set(name, new EnvoyLike(name, ctx, await f.client(ctx.identity.cn)));
    }
    for (const p of proxies.values()) p.start();
    await Promise.all([...proxies.values()].map((p) => p.settle(300, true)));
  });
  after(async () => {
    source.close();
    await f.close();
  });

  /** Generator runs and push triggers per service account while `act` runs and everything settles. */
  async function during(
    act: () => void,
    expecting: readonly PodName[] = [],
  ): Promise<{
    generated: Map<string, number>;
    types: Map<string, number>;
    pushed: Map<string, number>;
    got: Map<PodName, ReceivedResponse[]>;
  }> {
    const gen0 = new Map(source.generated);
    const types0 = new Map(source.generatedTypes);
    const push0 = new Map(source.pushes);
    act();
    const got = new Map<PodName, ReceivedResponse[]>();
    await Promise.all(
      [...proxies.values()].map(async (p) => {
        got.set(p.name, await p.settle(300, expecting.includes(p.name)));
      }),
    );
    const diff = (now: Map<string, number>, then: Map<string, number>): Map<string, number> => {
      const out = new Map<string, number>();
      for (const [k, v] of now) if (v !== (then.get(k) ?? 0)) out.set(k, v - (then.get(k) ?? 0));
      return out;
    };
    return {
      generated: diff(source.generated, gen0),
      types: diff(source.generatedTypes, types0),
      pushed: diff(source.pushes, push0),
      got,
    };
  }

  it('converged: every proxy holds CDS, LDS and what they reference', () => {
    for (const p of proxies.values()) {
      assert.ok(p.held.has(TypeUrl.Cluster), `${p.name} has CDS`);
      assert.ok(p.held.has(TypeUrl.Listener), `${p.name} has LDS`);
    }
    assert.ok(proxy('bookwarehouse-1').held.has(TypeUrl.ClusterLoadAssignment));
  });

  it('an endpoint change pushes only the callers of that service; nobody else is pushed or generated for', async () => {
    const { generated, types, pushed, got } = await during(() => {
      source.store.upsert(
        endpointSlice('bookwarehouse', 'mysql', 'mysql-extra', [{ ip: '10.244.2.99' }], [{ port: 3306 }]),
      );
    }, ['bookwarehouse-1']);
    // bookwarehouse calls mysql: it gets the new endpoint.
    const eds = got.get('bookwarehouse-1')?.find((r) => r.typeUrl === TypeUrl.ClusterLoadAssignment);
    assert.ok(eds, 'bookwarehouse got EDS');
    assert.match(JSON.stringify(eds.messages), /10\.244\.2\.99/);
    assert.deepEqual([...pushed.keys()], ['bookwarehouse'], 'only the caller is pushed');
    assert.deepEqual([...generated.keys()], ['bookwarehouse'], 'only the caller is generated for');
    // Its clusters, listeners, routes and secrets read nothing that changed: carried over.
    assert.deepEqual([...types], [[TypeUrl.ClusterLoadAssignment, 1]], 'only its EDS, once');
    for (const name of ['bookbuyer-1', 'bookthief-1', 'bookstore-v1-1', 'mysql-1'] as const)
      assert.deepEqual(got.get(name), [], `${name} received nothing`);
  });

  it('a certificate issued for one identity pushes that identity only', async () => {
    const { pushed, generated, got } = await during(() => {
      source.secrets.issue('bookwarehouse/mysql');
      source.bus.announce('certificate', 'issued bookwarehouse/mysql');
    }, ['mysql-1']);
    assert.deepEqual([...pushed.keys()], ['mysql']);
    assert.deepEqual([...generated.keys()], ['mysql']);
    const sds = got.get('mysql-1')?.find((r) => r.typeUrl === TypeUrl.Secret);
    assert.ok(sds?.names.includes('service-cert:self'), 'mysql got its certificate');
    for (const name of ['bookbuyer-1', 'bookthief-1', 'bookstore-v1-1', 'bookwarehouse-1'] as const)
      assert.deepEqual(got.get(name), []);
  });

  it('a TrafficSplit weight change pushes the callers of the apex only', async () => {
    const { pushed, generated, types, got } = await during(() => {
      source.store.upsert(
        trafficSplit('bookstore', 'bookstore-split', 'bookstore', [
          { service: 'bookstore-v1', weight: 50 },
          { service: 'bookstore-v2', weight: 50 },
        ]),
      );
    }, ['bookbuyer-1']);
    assert.deepEqual([...pushed.keys()], ['bookbuyer']);
    assert.deepEqual([...generated.keys()], ['bookbuyer']);
    // The weights live in the routes; the clusters stay the same set (common/outbound.ts).
    assert.ok(types.has(TypeUrl.RouteConfiguration));
    assert.ok(!types.has(TypeUrl.Cluster), `no CDS generation: ${[...types.keys()].join(', ')}`);
    const rds = got.get('bookbuyer-1')?.find((r) => r.typeUrl === TypeUrl.RouteConfiguration);
    assert.ok(rds, 'bookbuyer got new routes');
    assert.match(JSON.stringify(rds.messages), /"weight":\{"value":50\}/);
    for (const name of ['bookthief-1', 'bookstore-v1-1', 'bookwarehouse-1', 'mysql-1'] as const)
      assert.deepEqual(got.get(name), [], `${name} received nothing`);
  });

  it('a TrafficTarget change pushes the new source and the destination, not the bystanders', async () => {
    const { pushed, generated, got } = await during(() => {
      source.store.upsert(
        trafficTarget(
          'bookstore',
          'thief-allowed',
          sa('bookstore-v1'),
          [sa('bookthief', 'bookthief')],
          [{ kind: 'HTTPRouteGroup', name: 'bookstore-routes' }],
        ),
      );
    }, ['bookthief-1', 'bookstore-v1-1']);
    assert.deepEqual([...pushed.keys()].sort(), ['bookstore-v1', 'bookthief']);
    assert.deepEqual([...generated.keys()].sort(), ['bookstore-v1', 'bookthief']);
    assert.ok(
      got.get('bookthief-1')?.some((r) => r.typeUrl === TypeUrl.Cluster),
      'bookthief got clusters for bookstore',
    );
    for (const name of ['bookbuyer-1', 'bookwarehouse-1', 'mysql-1'] as const)
      assert.deepEqual(got.get(name), [], `${name} received nothing`);
  });

  it('the ticker pushes every stream, which generates nothing and sends nothing', async () => {
    const { pushed, generated, got } = await during(() => source.bus.announce('ticker', 'resync'));
    assert.equal(
      [...pushed.values()].reduce((a, b) => a + b, 0),
      PODS.length,
    );
    assert.deepEqual([...generated.keys()], []);
    for (const r of got.values()) assert.deepEqual(r, []);
  });

  it('a proxy whose pod stops backing its service changes group and is pushed', async () => {
    const before = source.currentView().podOfProxy(proxy('mysql-1').ctx.identity.uuid);
    assert.ok(before);
    const done: Pod = { ...before, status: { ...before.status, phase: 'Succeeded' } };
    const { pushed, got } = await during(() => source.store.upsert(done), ['mysql-1']);
    // mysql's own inbound listener is gone; bookwarehouse (its caller) loses the endpoint.
    assert.ok(pushed.has('mysql'), 'mysql pushed');
    assert.ok(
      got.get('mysql-1')?.some((r) => r.typeUrl === TypeUrl.Listener),
      'mysql got new listeners',
    );
    for (const name of ['bookbuyer-1', 'bookthief-1', 'bookstore-v1-1'] as const)
      assert.deepEqual(got.get(name), [], `${name} received nothing`);
  });
});
