import { LABEL_MONITORED_BY } from '../mesh/constants.js';
import { type Identity, identityKey } from '../mesh/identity.js';
import {
  type EndpointSlice,
  type HTTPRouteGroup,
  type Ingress,
  type IngressBackend,
  type MeshConfig,
  objectKey,
  type Pod,
  type Service,
} from '../model/objects.js';
import type { MeshStore } from '../registry/store.js';
import { derive } from './derive.js';
import { type EgressRule, egressPolicy } from './egress.js';
import { compileGateway, type GatewayPlan } from './gateway.js';
import {
  compileIngress,
  type IngressCompilation,
  type IngressPort,
  type IngressTable,
  ingressPortKey,
} from './ingress.js';
import { selectMeshConfig } from './meshconfig.js';
import { compareStrings, PodIndex, selectorMatches } from './pods.js';
import { type CompiledTarget, compileTrafficTargets, ruleForPort } from './policy.js';
import { type PolicyProblem, ProblemList } from './problems.js';
import { unmatchedRoutes } from './ratelimit.js';
import { type RetryRule, retriesBySource } from './retry.js';
import {
  LABEL_SERVICE_NAME,
  parseServiceHost,
  podIdentities,
  serviceKey,
  sliceEndpoints,
  toMeshService,
} from './services.js';
import { mergeSplits, type SplitTable, splitOnPort } from './split.js';
import { ViewLineage } from './stable.js';
import {
  type Endpoint,
  EVERY_SOURCE,
  type InboundRule,
  type MeshService,
  type MeshView,
  type SplitBackend,
} from './types.js';
import { compileUpstreamSettings, type UpstreamSetting } from './upstream.js';

export interface BuildMeshViewOptions {
  meshName: string;
  /**
   * The view this one replaces. Used to return it unchanged when the store did
   * not move, and to hand out the previous view's answers again (the same
   * objects) wherever they did not change — see the identity contract on
   * MeshView — so caches keyed by them stay warm.
   */
  previous?: MeshView;
}

/**
 * Computes the MeshView of a store (the policy engine). Everything is read
 * from the store here, so the view stays consistent while the store moves on;
 * expensive answers are computed on first use and memoized.
 */
export function buildMeshView(store: MeshStore, opts: BuildMeshViewOptions): MeshView {
  const prev = opts.previous instanceof CatalogView ? opts.previous : undefined;
  if (prev && prev.store === store && prev.meshName === opts.meshName && prev.version === store.version) {
    return prev;
  }
  return new CatalogView(store, opts.meshName, prev?.lineage ?? new ViewLineage());
}

const problemsOfView = new WeakMap<MeshView, readonly PolicyProblem[]>();

/**
 * Semantic problems of the view: those found while building it (missing route
 * objects, split apexes/backends, …) and split backends left without ready
 * endpoints (their share goes to the other backends, catalog/split.ts).
 */
export function policyProblems(view: MeshView): readonly PolicyProblem[] {
  if (!(view instanceof CatalogView)) return [];
  let list = problemsOfView.get(view);
  if (!list) {
    list = Object.freeze([
      ...view.problems,
      ...emptyBackends(view),
      ...view.ingressTable().problems,
      ...view.gatewayTable().problems,
      ...rateLimitRouteProblems(view),
    ]);
    problemsOfView.set(view, list);
  }
  return list;
}

/** httpRoutes entries of UpstreamTrafficSettings that select no route of their service (catalog/ratelimit.ts). */
function rateLimitRouteProblems(view: CatalogView): PolicyProblem[] {
  const out: PolicyProblem[] = [];
  for (const [key, setting] of view.upstream) {
    const routes = setting.rateLimit?.routes;
    const svc = routes ? view.service(key) : undefined;
    if (!routes || !svc) continue;
    // origin: `UpstreamTrafficSetting <ns>/<name>`, in the service's namespace.
    const name = setting.origin.slice(setting.origin.indexOf('/') + 1);
    for (const reason of unmatchedRoutes(svc, routes, (k, port) => view.inboundRules(k, port)))
      out.push({ kind: 'UpstreamTrafficSetting', namespace: svc.namespace, name, reason });
  }
  return out;
}

function emptyBackends(view: MeshView): PolicyProblem[] {
  const out: PolicyProblem[] = [];
  for (const apex of view.services()) {
    const backends = view.split(apex.key);
    if (!backends) continue;
    for (const port of apex.ports) {
      const taking = new Set(splitOnPort(view, apex.key, port.port).map((b) => b.service.key));
      for (const b of backends) {
        if (
          taking.has(b.service.key) ||
          !(b.weight > 0) ||
          !b.service.ports.some((p) => p.port === port.port)
        )
          continue;
        out.push({
          kind: 'Service',
          namespace: b.service.namespace,
          name: b.service.name,
          reason: `TrafficSplit backend of ${apex.key} without ready endpoints on port ${port.port}: its share goes to the other backends until it has some`,
        });
      }
    }
  }
  return out;
}

/**
 * What the backend's sidecar admits from outside the mesh on one target port
 * of a service (catalog/ingress.ts), or undefined. The same object while
 * unchanged (lineage pool), and a derived answer, so a group that read it is
 * pushed only when it changes.
 */
export function ingressPort(view: MeshView, serviceKey: string, targetPort: number): IngressPort | undefined {
  const key = ingressPortKey(serviceKey, targetPort);
  return derive(view, `ingress\0${key}`, (v) => (v instanceof CatalogView ? v.ingressPort(key) : undefined));
}

const NO_GATEWAY: GatewayPlan = Object.freeze({ hosts: [], tls: [], ingresses: [] });

/**
 * What skein's ingress gateway serves (catalog/gateway.ts): the same object
 * while the Ingresses of class skein and their backends are unchanged.
 */
export function gatewayPlan(view: MeshView): GatewayPlan {
  return derive(view, 'gateway', (v) => (v instanceof CatalogView ? v.gatewayTable().plan : NO_GATEWAY));
}

/**
 * Whether any service port has an ingress answer: one derived question for
 * the whole mesh, so a proxy of a mesh without ingress asks nothing per port
 * (and every group that asked hears of the first IngressBackend).
 */
export function anyIngress(view: MeshView): boolean {
  return derive(view, 'ingress\0any', (v) => v instanceof CatalogView && v.ingressTable().ports.size > 0);
}

/** Every ingress answer of the view by `<ns>/<svc>|<targetPort>` (debug, CLI). */
export function ingressPorts(view: MeshView): ReadonlyMap<string, IngressPort> {
  return view instanceof CatalogView ? view.ingressTable().ports : new Map();
}

/** Every source's Retry rules by source identity key (debug, CLI). */
export function retryTables(view: MeshView): ReadonlyMap<string, RetryTable> {
  return view instanceof CatalogView ? view.retries : new Map();
}

/** Namespaces of the mesh, sorted. */
export function monitoredNamespaces(view: MeshView): readonly string[] {
  return view instanceof CatalogView ? view.namespaces : [];
}

/** The MeshConfig the view's settings came from, if any. */
export function meshConfigOf(view: MeshView): MeshConfig | undefined {
  return view instanceof CatalogView ? view.meshConfig : undefined;
}

/**
 * The Egress rules of one source identity (catalog/egress.ts), empty when
 * none; the same array for the life of the view.
 */
export function egressRulesOf(view: MeshView, source: Identity): readonly EgressRule[] {
  return view instanceof CatalogView ? (view.egress.get(identityKey(source)) ?? EMPTY) : EMPTY;
}

/** Every source identity some Egress names, sorted by key (the web view draws their edges). */
export function egressSources(view: MeshView): readonly Identity[] {
  if (!(view instanceof CatalogView)) return EMPTY;
  return [...view.egress.keys()].sort(compareStrings).map((k) => {
    const slash = k.indexOf('/');
    return { namespace: k.slice(0, slash), serviceAccount: k.slice(slash + 1) };
  });
}

/** Whether some source identity has Egress rules. */
export function anyEgress(view: MeshView): boolean {
  return view instanceof CatalogView && view.egress.size > 0;
}

/** MeshConfig spec.traffic.enableEgress: destinations outside the mesh pass through. */
export function egressEnabled(view: MeshView): boolean {
  return meshConfigOf(view)?.spec.traffic?.enableEgress === true;
}

/**
 * Why every destination outside the mesh leaves unchecked, or undefined when
 * the Egress rules are what the sidecars enforce (SMI mode without
 * enableEgress). lds/sidecar.ts: either puts the passthrough default chain on
 * the outbound listener and no egress chains.
 */
export function egressPassthrough(view: MeshView): string | undefined {
  if (view.permissive) return 'permissive mode: every destination outside the mesh passes through';
  if (egressEnabled(view))
    return 'MeshConfig spec.traffic.enableEgress: every destination outside the mesh passes through';
  return undefined;
}

const EMPTY: readonly never[] = Object.freeze([]);
const NO_SETTINGS: ReadonlyMap<string, UpstreamSetting> = new Map();

/**
 * Every UpstreamTrafficSetting in force, by service key (catalog/upstream.ts):
 * the same map while none changed, and each setting the same object while
 * it is unchanged, so generators can key memos on them.
 */
export function upstreamSettings(view: MeshView): ReadonlyMap<string, UpstreamSetting> {
  return derive(view, 'upstream-settings', (v) => (v instanceof CatalogView ? v.upstream : NO_SETTINGS));
}

/** The UpstreamTrafficSetting in force for one service, if any. */
export function upstreamSettingOf(view: MeshView, serviceKey: string): UpstreamSetting | undefined {
  return derive(view, `upstream\0${serviceKey}`, (v) =>
    v instanceof CatalogView ? v.upstream.get(serviceKey) : undefined,
  );
}

/** A source's Retry rules by destination service key (`ns/name`). */
export type RetryTable = ReadonlyMap<string, RetryRule>;
const NO_RETRIES: RetryTable = new Map();

/**
 * The Retry rules of one source identity (catalog/retry.ts) by destination
 * service key: the same map while they are unchanged (lineage pool), and a
 * derived answer, so a proxy that read it is pushed only when it changes.
 */
export function retryTableOf(view: MeshView, source: Identity): RetryTable {
  const key = identityKey(source);
  return derive(view, `retry\0${key}`, (v) =>
    v instanceof CatalogView ? (v.retries.get(key) ?? NO_RETRIES) : NO_RETRIES,
  );
}

/** The same elements in the same order (lists a view builds afresh from unchanged objects). */
function sameElements(a: readonly unknown[], b: readonly unknown[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

const NO_INGRESS: IngressTable = Object.freeze({
  ports: new Map(),
  problems: EMPTY,
});

/** An index key: a namespace and one label pair (Kubernetes names and label values hold no NUL). */
function pairKey(namespace: string, key: string, value: string): string {
  return `${namespace}\0${key}\0${value}`;
}

class CatalogView implements MeshView {
  readonly version: number;
  readonly permissive: boolean;
  readonly trustDomain: string;
  readonly meshConfig: MeshConfig | undefined;
  readonly problems: readonly PolicyProblem[];
  readonly namespaces: readonly string[];

  private readonly monitored: ReadonlySet<string>;
  private readonly rawServices: ReadonlyMap<string, Service>;
  private readonly serviceKeysByNs = new Map<string, string[]>();
  private readonly pods: PodIndex;
  private readonly slicesByService = new Map<string, EndpointSlice[]>();
  /** Compiled TrafficTargets by destination identity key (`ns/sa`), in origin order. */
  private readonly targetsByDest = new Map<string, CompiledTarget[]>();
  private readonly splits: SplitTable;
  /** Egress rules by source identity key. */
  readonly egress: ReadonlyMap<string, readonly EgressRule[]>;
  /** Retry rules by source identity key, then destination service key (settled). */
  readonly retries: ReadonlyMap<string, RetryTable>;
  /** UpstreamTrafficSettings in force by service key (settled in the lineage). */
  readonly upstream: ReadonlyMap<string, UpstreamSetting>;

  /** Answers shared with the views before and after this one (stable.ts). */
  readonly lineage: ViewLineage;

  // Lazily computed, then fixed for the life of the view.
  private meshServices: { list: readonly MeshService[]; byKey: Map<string, MeshService> } | undefined;
  private readonly selectedPods = new Map<string, readonly Pod[]>();
  private readonly ownIdentities = new Map<string, readonly Identity[]>();
  private readonly identities = new Map<string, readonly Identity[]>();
  private readonly endpointMemo = new Map<string, readonly Endpoint[]>();
  private readonly inboundMemo = new Map<string, readonly InboundRule[]>();
  private readonly outboundMemo = new Map<string, readonly MeshService[]>();
  private readonly splitMemo = new Map<string, readonly SplitBackend[] | undefined>();
  private readonly podServices = new WeakMap<Pod, readonly MeshService[]>();
  /** Service keys by namespace and one pair of their selector (servicesOfPod), built on first use. */
  private servicesByPair: Map<string, string[]> | undefined;
  private reachable: Map<string, Set<string>> | undefined;
  private ingress: IngressTable | undefined;
  private gateway: { plan: GatewayPlan; problems: readonly PolicyProblem[] } | undefined;
  /**
   * Read with everything else at construction (the store moves on), compiled
   * on first use; undefined when there is no Ingress and no IngressBackend.
   */
  private readonly ingressObjects:
    | {
        ingresses: readonly Ingress[];
        backends: readonly IngressBackend[];
        groups: ReadonlyMap<string, HTTPRouteGroup>;
      }
    | undefined;

  constructor(
    readonly store: MeshStore,
    readonly meshName: string,
    lineage: ViewLineage,
  ) {
    this.version = store.version;
    this.lineage = lineage;
    const problems = new ProblemList();

    const monitored = new Set(
      store
        .list('Namespace')
        .filter((n) => n.metadata.labels?.[LABEL_MONITORED_BY] === meshName)
        .map((n) => n.metadata.name),
    );
    this.namespaces = Object.freeze([...monitored].sort(compareStrings));
    this.monitored = monitored;
    const inMesh = (o: { metadata: { namespace?: string } }) => monitored.has(o.metadata.namespace ?? '');

    const settings = selectMeshConfig(store.list('MeshConfig'), meshName, problems);
    this.permissive = settings.permissive;
    this.trustDomain = settings.trustDomain;
    this.meshConfig = settings.config;

    const services = new Map<string, Service>();
    for (const s of store.list('Service').filter(inMesh)) {
      const key = serviceKey(s.metadata.namespace ?? '', s.metadata.name);
      services.set(key, s);
    }
    for (const key of [...services.keys()].sort(compareStrings)) {
      const ns = key.slice(0, key.indexOf('/'));
      const list = this.serviceKeysByNs.get(ns);
      if (list) list.push(key);
      else this.serviceKeysByNs.set(ns, [key]);
    }
    this.rawServices = services;

    this.pods = new PodIndex(store.list('Pod').filter(inMesh));

    for (const slice of store.list('EndpointSlice').filter(inMesh)) {
      const owner = slice.metadata.labels?.[LABEL_SERVICE_NAME];
      if (owner === undefined) continue;
      const key = serviceKey(slice.metadata.namespace ?? '', owner);
      const list = this.slicesByService.get(key);
      if (list) list.push(slice);
      else this.slicesByService.set(key, [slice]);
    }

    const targets = compileTrafficTargets(
      store.list('TrafficTarget').filter(inMesh),
      {
        // Route objects are only meaningful inside the mesh too.
        httpRouteGroup: (ns, name) =>
          monitored.has(ns) ? store.get('HTTPRouteGroup', `${ns}/${name}`) : undefined,
        tcpRoute: (ns, name) => (monitored.has(ns) ? store.get('TCPRoute', `${ns}/${name}`) : undefined),
      },
      problems,
    );
    for (const t of targets) {
      const k = `${t.namespace}/${t.destination}`;
      const list = this.targetsByDest.get(k);
      if (list) list.push(t);
      else this.targetsByDest.set(k, [t]);
    }
    const ingresses = store.list('Ingress').filter(inMesh);
    const backends = store.list('IngressBackend').filter(inMesh);
    // Without either kind there is nothing to compile: no copy of the route groups per view.
    this.ingressObjects =
      ingresses.length === 0 && backends.length === 0
        ? undefined
        : {
            ingresses,
            backends,
            groups: new Map(
              store
                .list('HTTPRouteGroup')
                .filter(inMesh)
                .map((g) => [objectKey(g), g]),
            ),
          };
    this.splits = mergeSplits(store.list('TrafficSplit').filter(inMesh), (k) => services.has(k), problems);
    // Recompiled only when an Egress or a group it reads changed (egressPolicy).
    const egress = egressPolicy(
      store.list('Egress').filter(inMesh),
      (ns, name) => (monitored.has(ns) ? store.get('HTTPRouteGroup', `${ns}/${name}`) : undefined),
      lineage.egress,
    );
    lineage.egress = egress;
    for (const p of egress.problems) problems.add(p);
    this.egress = egress.bySource;
    this.retries = this.settleRetries(retriesBySource(store.list('Retry').filter(inMesh), problems));
    const upstream = new Map<string, UpstreamSetting>();
    // This view becomes the lineage's head below, so it records.
    for (const [k, s] of compileUpstreamSettings(
      store.list('UpstreamTrafficSetting').filter(inMesh),
      (k) => services.has(k),
      problems,
    ))
      upstream.set(k, lineage.upstream.settle(k, s, true));
    this.upstream = upstream.size === 0 ? NO_SETTINGS : lineage.upstreamTable.settle('', upstream, true);
    this.problems = Object.freeze(problems.items);

    const sources = new Set<string>();
    for (const t of targets) for (const id of t.sources) sources.add(identityKey(id));
    lineage.sweep(
      (k) => services.has(k),
      (k) => sources.has(k),
    );
    lineage.head = this;
  }

  /** Retry answers handed out as the previous view's objects where unchanged. */
  private settleRetries(fresh: Map<string, Map<string, RetryRule>>): ReadonlyMap<string, RetryTable> {
    // Built in the constructor of the lineage's newest view: it records.
    const record = true;
    const out = new Map<string, RetryTable>();
    for (const [source, byDest] of fresh) {
      const table = new Map<string, RetryRule>();
      for (const [dest, rule] of byDest)
        table.set(dest, this.lineage.retryRules.settle(`${source}|${dest}`, rule, record));
      out.set(source, this.lineage.retryTables.settle(source, table, record));
    }
    this.lineage.retryRules.sweep(
      (k) => fresh.get(k.slice(0, k.indexOf('|')))?.has(k.slice(k.indexOf('|') + 1)) === true,
    );
    this.lineage.retryTables.sweep((k) => fresh.has(k));
    return out;
  }

  /**
   * Ingress policy, compiled on first use (most views are never asked), or
   * the last compilation's table when everything it read is unchanged: a
   * change elsewhere in the mesh costs one lookup per input read, not a
   * compilation.
   */
  ingressTable(): IngressTable {
    if (this.ingress) return this.ingress;
    const objects = this.ingressObjects;
    if (objects === undefined) {
      this.ingress = NO_INGRESS;
      return NO_INGRESS;
    }
    const previous = this.lineage.ingressCompiled;
    if (previous && this.sameIngressInputs(previous, objects)) {
      this.ingress = previous.table;
      return previous.table;
    }
    const reads = new Map<string, unknown>();
    const read = <T>(what: string): T => {
      const answer = this.ingressRead(objects, what) as T;
      reads.set(what, answer);
      return answer;
    };
    const problems = new ProblemList();
    const compiled = compileIngress(
      {
        ingresses: objects.ingresses,
        backends: objects.backends,
        service: (k) => read<MeshService | undefined>(`s${k}`),
        httpRouteGroup: (ns, name) => read<HTTPRouteGroup | undefined>(`g${ns}/${name}`),
        sourceAddresses: (ns, name) => {
          const slices = read<readonly EndpointSlice[] | undefined>(`a${serviceKey(ns, name)}`);
          if (slices === undefined) return undefined;
          const out = new Set<string>();
          for (const slice of slices)
            for (const ep of slice.endpoints) for (const a of ep.addresses) out.add(a);
          return [...out].sort(compareStrings);
        },
        permissive: this.permissive,
      },
      problems,
    );
    const ports = new Map<string, IngressPort>();
    for (const [k, p] of compiled) ports.set(k, this.lineage.ingress.settle(k, p, this.recording));
    this.ingress = { ports, problems: Object.freeze(problems.items) };
    if (this.recording)
      this.lineage.ingressCompiled = {
        ingresses: objects.ingresses,
        backends: objects.backends,
        permissive: this.permissive,
        reads,
        table: this.ingress,
      };
    return this.ingress;
  }

  /** The ingress gateway's routes, compiled on first use. */
  gatewayTable(): { plan: GatewayPlan; problems: readonly PolicyProblem[] } {
    if (this.gateway) return this.gateway;
    const problems = new ProblemList();
    const fresh = compileGateway(
      { ingresses: this.ingressObjects?.ingresses ?? [], service: (k) => this.service(k) },
      problems,
    );
    const plan = this.lineage.gateway.settle('gateway', fresh, this.recording);
    this.gateway = { plan, problems: Object.freeze(problems.items) };
    return this.gateway;
  }

  /** One input of the ingress compilation: a service (`s`), a route group (`g`), a source's slices (`a`). */
  private ingressRead(objects: NonNullable<CatalogView['ingressObjects']>, what: string): unknown {
    const key = what.slice(1);
    if (what[0] === 's') return this.service(key);
    if (what[0] === 'g') return objects.groups.get(key);
    return this.rawServices.has(key) ? (this.slicesByService.get(key) ?? EMPTY) : undefined;
  }

  private sameIngressInputs(
    c: IngressCompilation,
    objects: NonNullable<CatalogView['ingressObjects']>,
  ): boolean {
    if (c.permissive !== this.permissive) return false;
    if (!sameElements(c.ingresses, objects.ingresses) || !sameElements(c.backends, objects.backends))
      return false;
    for (const [what, answer] of c.reads) {
      const now = this.ingressRead(objects, what);
      // Slice lists are built per view: the same slices in the same order are the same input.
      if (now !== answer && !(Array.isArray(now) && Array.isArray(answer) && sameElements(now, answer)))
        return false;
    }
    return true;
  }

  ingressPort(key: string): IngressPort | undefined {
    return this.ingressTable().ports.get(key);
  }

  /** Whether this view may record answers in the lineage (only the newest one does). */
  private get recording(): boolean {
    return this.lineage.head === this;
  }

  services(): readonly MeshService[] {
    return this.serviceTable().list;
  }

  service(key: string): MeshService | undefined {
    return this.serviceTable().byKey.get(key);
  }

  serviceByHost(host: string): MeshService | undefined {
    const parsed = parseServiceHost(host);
    return parsed ? this.service(serviceKey(parsed.namespace, parsed.name)) : undefined;
  }

  endpoints(key: string, port: number): readonly Endpoint[] {
    const memoKey = `${key}|${port}`;
    let eps = this.endpointMemo.get(memoKey);
    if (eps === undefined) {
      const svc = this.service(key);
      const sp = svc?.ports.find((p) => p.port === port);
      eps = svc && sp ? Object.freeze(sliceEndpoints(svc, sp, this.slicesByService.get(key) ?? [])) : EMPTY;
      eps = eps.length === 0 ? EMPTY : this.lineage.endpoints.settle(memoKey, eps, this.recording);
      this.endpointMemo.set(memoKey, eps);
    }
    return eps;
  }

  serviceIdentities(key: string): readonly Identity[] {
    let ids = this.identities.get(key);
    if (ids === undefined) {
      const backends = this.splits.get(key);
      if (!backends) ids = this.directIdentities(key);
      else {
        // A client of an apex talks to the backends' pods: their SANs must match too.
        const all = new Map<string, Identity>();
        for (const k of [key, ...backends.keys()]) {
          for (const id of this.directIdentities(k)) all.set(identityKey(id), id);
        }
        ids = Object.freeze([...all.entries()].sort(([a], [b]) => compareStrings(a, b)).map(([, id]) => id));
      }
      ids = ids.length === 0 ? EMPTY : this.lineage.identities.settle(key, ids, this.recording);
      this.identities.set(key, ids);
    }
    return ids;
  }

  inMesh(namespace: string): boolean {
    return this.monitored.has(namespace);
  }

  podOfProxy(uuid: string): Pod | undefined {
    return this.pods.proxyPod(uuid);
  }

  servicesOfPod(pod: Pod): readonly MeshService[] {
    let out = this.podServices.get(pod);
    if (out === undefined) {
      const phase = pod.status?.phase;
      const labels = pod.metadata.labels;
      const list: MeshService[] = [];
      if (phase !== 'Succeeded' && phase !== 'Failed' && labels) {
        for (const k of this.candidateServices(pod.metadata.namespace ?? '', labels)) {
          const svc = this.service(k);
          if (svc && selectorMatches(svc.selector, labels)) list.push(svc);
        }
      }
      out = Object.freeze(list);
      this.podServices.set(pod, out);
    }
    return out;
  }

  /**
   * The services of `namespace` that may select a pod with `labels`, in key
   * order: each service is indexed under one pair of its selector, which every
   * pod it selects carries, so a pod is checked against the few services
   * sharing one of its labels instead of every service of its namespace.
   */
  private candidateServices(namespace: string, labels: Readonly<Record<string, string>>): readonly string[] {
    const index = this.selectorPairIndex();
    let found: string[] | undefined;
    let merged = false;
    for (const [k, v] of Object.entries(labels)) {
      const keys = index.get(pairKey(namespace, k, v));
      if (!keys) continue;
      if (!found) found = keys;
      else {
        found = [...found, ...keys];
        merged = true;
      }
    }
    // A service sits under one pair only, so the lists are disjoint; sorted, they keep the key order.
    if (merged && found) found.sort(compareStrings);
    return found ?? EMPTY;
  }

  private selectorPairIndex(): Map<string, string[]> {
    if (this.servicesByPair) return this.servicesByPair;
    const index = new Map<string, string[]>();
    for (const [ns, keys] of this.serviceKeysByNs) {
      for (const key of keys) {
        // Without a selector a Service selects no pods (selectorMatches): it is not indexed.
        const first = Object.entries(this.rawServices.get(key)?.spec?.selector ?? {})[0];
        if (!first) continue;
        const at = pairKey(ns, first[0], first[1]);
        const list = index.get(at);
        if (list) list.push(key);
        else index.set(at, [key]);
      }
    }
    this.servicesByPair = index;
    return index;
  }

  outboundServices(source: Identity): readonly MeshService[] {
    if (this.permissive) return this.services();
    const key = identityKey(source);
    let out = this.outboundMemo.get(key);
    if (out === undefined) {
      const allowed = this.reachableBySource().get(key) ?? new Set<string>();
      const result = new Set(allowed);
      for (const [apex, backends] of this.splits) {
        for (const b of backends.keys()) {
          if (allowed.has(b)) {
            result.add(apex);
            break;
          }
        }
      }
      const list = [...result]
        .sort(compareStrings)
        .map((k) => this.service(k))
        .filter((s): s is MeshService => s !== undefined);
      out = list.length > 0 ? this.lineage.outbound.settle(key, Object.freeze(list), this.recording) : EMPTY;
      this.outboundMemo.set(key, out);
    }
    return out;
  }

  split(apexKey: string): readonly SplitBackend[] | undefined {
    if (this.splitMemo.has(apexKey)) return this.splitMemo.get(apexKey);
    const table = this.splits.get(apexKey);
    let out: readonly SplitBackend[] | undefined;
    if (table) {
      const list: SplitBackend[] = [];
      for (const k of [...table.keys()].sort(compareStrings)) {
        const svc = this.service(k);
        const weight = table.get(k) ?? 0;
        if (svc && weight > 0) list.push({ service: svc, weight });
      }
      out =
        list.length > 0
          ? this.lineage.splits.settle(apexKey, Object.freeze(list), this.recording)
          : undefined;
    }
    this.splitMemo.set(apexKey, out);
    return out;
  }

  inboundRules(key: string, port: number): readonly InboundRule[] {
    const memoKey = `${key}|${port}`;
    let rules = this.inboundMemo.get(memoKey);
    if (rules === undefined) {
      rules = this.computeInbound(key, port);
      rules = rules.length === 0 ? EMPTY : this.lineage.inbound.settle(memoKey, rules, this.recording);
      this.inboundMemo.set(memoKey, rules);
    }
    return rules;
  }

  private computeInbound(key: string, port: number): readonly InboundRule[] {
    const sp = this.service(key)?.ports.find((p) => p.port === port);
    if (!sp) return EMPTY;
    if (this.permissive) return Object.freeze([{ sources: EVERY_SOURCE, http: 'all', origin: 'permissive' }]);
    // A TrafficTarget applies to the services backed by pods of its destination
    // identity. Apex identities are not included: traffic to an apex lands on
    // backend pods, whose own rules decide.
    const rules: InboundRule[] = [];
    for (const id of this.directIdentities(key)) {
      for (const t of this.targetsByDest.get(identityKey(id)) ?? []) {
        const r = ruleForPort(t, sp);
        if (r) rules.push(r);
      }
    }
    return Object.freeze(rules.sort((a, b) => compareStrings(a.origin, b.origin)));
  }

  /** source identity key → keys of services it has an inbound rule on (some port). */
  private reachableBySource(): Map<string, Set<string>> {
    if (this.reachable) return this.reachable;
    const bySource = new Map<string, Set<string>>();
    for (const svc of this.services()) {
      for (const sp of svc.ports) {
        for (const rule of this.inboundRules(svc.key, sp.port)) {
          if (rule.sources === EVERY_SOURCE) continue;
          for (const id of rule.sources) {
            const k = identityKey(id);
            const set = bySource.get(k);
            if (set) set.add(svc.key);
            else bySource.set(k, new Set([svc.key]));
          }
        }
      }
    }
    this.reachable = bySource;
    return bySource;
  }

  private podsOf(key: string): readonly Pod[] {
    let pods = this.selectedPods.get(key);
    if (pods === undefined) {
      const svc = this.rawServices.get(key);
      pods = svc
        ? Object.freeze(this.pods.select(svc.metadata.namespace ?? '', svc.spec?.selector ?? {}))
        : EMPTY;
      this.selectedPods.set(key, pods);
    }
    return pods;
  }

  private directIdentities(key: string): readonly Identity[] {
    let ids = this.ownIdentities.get(key);
    if (ids === undefined) {
      ids = Object.freeze(podIdentities(this.podsOf(key)));
      this.ownIdentities.set(key, ids);
    }
    return ids;
  }

  private serviceTable(): { list: readonly MeshService[]; byKey: Map<string, MeshService> } {
    if (this.meshServices) return this.meshServices;
    const byKey = new Map<string, MeshService>();
    const list: MeshService[] = [];
    for (const key of [...this.rawServices.keys()].sort(compareStrings)) {
      const raw = this.rawServices.get(key);
      if (!raw) continue;
      const svc = this.lineage.services.settle(key, toMeshService(raw, this.podsOf(key)), this.recording);
      byKey.set(key, svc);
      list.push(svc);
    }
    const settled = this.lineage.serviceList.settle('', Object.freeze(list), this.recording);
    this.meshServices = { list: settled, byKey };
    return this.meshServices;
  }
}
