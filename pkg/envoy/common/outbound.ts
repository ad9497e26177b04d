// What a source identity may call, resolved to upstream clusters: the one
// computation LDS, RDS, CDS, EDS and SDS share for a proxy. Memoised per
// (immutable) MeshView and identity, since all five generators ask for it,
// and across views on the view answers it is computed from, so an unchanged
// plan is the same object and messages keyed on it are reused.

import { derive } from '../../catalog/derive.js';
import { splitEmptiness, splitOnPort } from '../../catalog/split.js';
import type { MeshService, MeshServicePort, MeshView, ProxyContext } from '../../catalog/types.js';
import { type Identity, identityKey } from '../../mesh/identity.js';
import { upstreamClusterName } from '../names.js';
import { IdentityMemo, NONE } from './memo.js';

/** One upstream cluster of an outbound service port. */
export interface UpstreamTarget {
  cluster: string;
  /** The service behind the cluster (a split backend, or the service itself). */
  service: MeshService;
  /** Only for split apexes: the backend's weight, always > 0. */
  weight?: number;
}

/** One port of one service the source may call, and where its traffic goes. */
export interface OutboundPort {
  service: MeshService;
  port: MeshServicePort;
  /** One target, or several weighted ones for a split apex; never empty. */
  targets: UpstreamTarget[];
}

/** An upstream cluster `<ns>/<svc>|<port>` the proxy needs. */
export interface UpstreamCluster {
  name: string;
  service: MeshService;
  port: MeshServicePort;
}

export interface OutboundPlan {
  /** Sorted by service key, then port. */
  ports: OutboundPort[];
  /** Every cluster a route or tcp_proxy points at, by name. */
  clusters: ReadonlyMap<string, UpstreamCluster>;
  /** Services behind those clusters, by key (the outbound SDS validation contexts). */
  upstreamServices: ReadonlyMap<string, MeshService>;
}

const cache = new WeakMap<MeshView, Map<string, OutboundPlan>>();
const plans = new IdentityMemo<OutboundPlan>();
/** The last plan built for an outbound service list (the same array while unchanged). */
const lastPlanOf = new WeakMap<readonly MeshService[], OutboundPlan>();

const EMPTY_PLAN: OutboundPlan = Object.freeze({
  ports: [],
  clusters: new Map(),
  upstreamServices: new Map(),
});

/**
 * The plan a proxy's outbound configuration follows: none for a proxy outside
 * the mesh (its namespace left), so it gets no mesh destination, the way a
 * workload without a mesh has none (docs/design.md, "Outside the mesh").
 */
export function proxyOutboundPlan(mesh: MeshView, proxy: ProxyContext): OutboundPlan {
  return proxy.outsideMesh ? EMPTY_PLAN : outboundPlan(mesh, proxy.identity);
}

/**
 * The plan's clusters alone, as one derived answer: the same map object while
 * the set of clusters is the same, so a TrafficSplit weight change (which
 * changes the plan's routes) leaves the clusters of every proxy, and CDS,
 * untouched (planOf keeps the map).
 */
export function proxyUpstreamClusters(
  mesh: MeshView,
  proxy: ProxyContext,
): ReadonlyMap<string, UpstreamCluster> {
  if (proxy.outsideMesh) return EMPTY_PLAN.clusters;
  const id = { namespace: proxy.identity.namespace, serviceAccount: proxy.identity.serviceAccount };
  return derive(mesh, `outboundClusters\0${identityKey(id)}`, (view) => planOf(view, id).clusters);
}

export function outboundPlan(mesh: MeshView, source: Identity): OutboundPlan {
  // One derived answer for dependency tracking rather than a read of every
  // split: the plan object is the same exactly while its inputs are.
  const id = { namespace: source.namespace, serviceAccount: source.serviceAccount };
  return derive(mesh, `outboundPlan\0${identityKey(id)}`, (view) => planOf(view, id));
}

function planOf(mesh: MeshView, source: Identity): OutboundPlan {
  let byIdentity = cache.get(mesh);
  if (!byIdentity) {
    byIdentity = new Map();
    cache.set(mesh, byIdentity);
  }
  const key = identityKey(source);
  let plan = byIdentity.get(key);
  if (!plan) {
    // The plan is a function of the services the source may call and their
    // splits only (not of the source itself): sources allowed the same
    // services share one plan, in permissive mode every proxy does.
    const services = mesh.outboundServices(source);
    const parts: object[] = [services];
    const empty: string[] = [];
    for (const s of services) {
      const split = mesh.split(s.key);
      parts.push(split ?? NONE);
      if (split) empty.push(splitEmptiness(mesh, s.key));
    }
    plan = plans.get(parts, empty.join('|'), () => withKeptClusters(computePlan(mesh, services), services));
    byIdentity.set(key, plan);
  }
  return plan;
}

/** `plan`, holding the last plan's cluster maps for the same services when they have the same clusters. */
function withKeptClusters(plan: OutboundPlan, services: readonly MeshService[]): OutboundPlan {
  const last = lastPlanOf.get(services);
  lastPlanOf.set(services, plan);
  if (last === undefined || !sameClusters(last.clusters, plan.clusters)) return plan;
  const kept = { ...plan, clusters: last.clusters, upstreamServices: last.upstreamServices };
  lastPlanOf.set(services, kept);
  return kept;
}

function sameClusters(
  a: ReadonlyMap<string, UpstreamCluster>,
  b: ReadonlyMap<string, UpstreamCluster>,
): boolean {
  if (a.size !== b.size) return false;
  for (const [name, up] of b) {
    const other = a.get(name);
    if (other === undefined || other.service !== up.service || other.port !== up.port) return false;
  }
  return true;
}

function computePlan(mesh: MeshView, outbound: readonly MeshService[]): OutboundPlan {
  const ports: OutboundPort[] = [];
  const clusters = new Map<string, UpstreamCluster>();
  const upstreamServices = new Map<string, MeshService>();
  const addCluster = (service: MeshService, port: MeshServicePort): string => {
    const name = upstreamClusterName(service, port.port);
    if (!clusters.has(name)) {
      clusters.set(name, { name, service, port });
      upstreamServices.set(service.key, service);
    }
    return name;
  };

  const services = [...outbound].sort((a, b) => compare(a.key, b.key));
  for (const service of services) {
    for (const port of [...service.ports].sort((a, b) => a.port - b.port)) {
      const targets = splitTargets(mesh, service.key, port.port);
      if (targets.length > 0) {
        // Routes point at the backends (which must exist even when the source
        // could not call them directly); the apex itself gets no cluster.
        for (const t of targets) {
          const backendPort = t.service.ports.find((p) => p.port === port.port);
          if (backendPort) addCluster(t.service, backendPort);
        }
      } else {
        // Not a split, or no backend left: the apex's own endpoints take the
        // traffic (as without a mesh), matching the proxyless generators.
        targets.push({ cluster: addCluster(service, port), service });
      }
      ports.push({ service, port, targets });
    }
  }
  return { ports, clusters, upstreamServices };
}

/** The weighted clusters of a split apex port (catalog/split.ts says which backends); empty: no split. */
function splitTargets(mesh: MeshView, apexKey: string, port: number): UpstreamTarget[] {
  return splitOnPort(mesh, apexKey, port)
    .map((b) => ({ cluster: upstreamClusterName(b.service, port), service: b.service, weight: b.weight }))
    .sort((a, b) => compare(a.cluster, b.cluster));
}

/** A service reached by its clusterIP (not headless): its outbound chain matches that address. */
export function hasClusterIP(svc: MeshService): svc is MeshService & { clusterIP: string } {
  return svc.clusterIP !== undefined && svc.clusterIP !== '' && svc.clusterIP !== 'None';
}

export function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Sorts resources by name (the generator contract) in place and returns them. */
export function byName<T extends { name: string }>(items: T[]): T[] {
  return items.sort((a, b) => compare(a.name, b.name));
}
