import type { DisconnectedProxy } from '../catalog/proxies.js';
import { proxyContext } from '../catalog/proxies.js';
import type { MeshView } from '../catalog/types.js';
import { buildPolicies } from '../debug/policies.js';
import { buildProxies, type DebugProxy } from '../debug/proxies.js';
import { PUSH_ORDER, TypeUrl } from '../envoy/types.js';
import { identityKey, type ProxyIdentity } from '../mesh/identity.js';
import type { EdgeSummary } from '../stats/collector.js';
import type { StreamStatus } from '../xds/server/types.js';
import {
  EVERY_SOURCE,
  type GraphEdge,
  type GraphIdentity,
  type GraphProblem,
  type GraphProxy,
  type GraphService,
  type GraphTraffic,
  type GraphTypeStatus,
  type MeshGraph,
  type ProxyState,
} from './graph-types.js';
import { outsideGraph } from './outside.js';
import { routeSummary } from './summary.js';

export { routeSummary } from './summary.js';

export interface GraphSources {
  meshName: string;
  view: MeshView;
  /** Live xDS streams (the ADS server's `streams()`). */
  streams: readonly StreamStatus[];
  /** Streams that ended recently (ProxyRegistry.recentlyDisconnected()), shown grey. */
  disconnected?: readonly DisconnectedProxy[];
  /** Problems in force (the controller's problem book). */
  problems?: readonly GraphProblem[];
  /** Per-edge figures the sidecars reported (pkg/stats' EdgeStats.edges()). */
  edgeStats?: readonly EdgeSummary[];
}

const SHORT_TYPE: Record<string, string> = {
  [TypeUrl.Cluster]: 'CDS',
  [TypeUrl.ClusterLoadAssignment]: 'EDS',
  [TypeUrl.Secret]: 'SDS',
  [TypeUrl.Listener]: 'LDS',
  [TypeUrl.RouteConfiguration]: 'RDS',
};

/**
 * The mesh as a graph for the web view: namespaces holding services (with
 * their ports, endpoints and proxies) and source-only identities; edges for
 * what TrafficTargets allow (none in permissive mode: every edge would be
 * drawn), for TrafficSplit apex → backend weights, and across the mesh's
 * boundary for Egress and IngressBackend (outside.ts). Policy comes from
 * `/debug/policies`' model and proxy state from `/debug/proxies`', so the
 * page and those endpoints never disagree.
 */
export function buildGraph(src: GraphSources): MeshGraph {
  const { view } = src;
  const policies = buildPolicies(view);
  const services = new Map<string, GraphService>();
  const servicesOfIdentity = new Map<string, GraphService[]>();
  for (const svc of view.services()) {
    const identities = [...new Set(view.serviceIdentities(svc.key).map(identityKey))].sort();
    const seen = new Set<string>();
    const endpoints: GraphService['endpoints'] = [];
    for (const p of svc.ports) {
      for (const e of view.endpoints(svc.key, p.port)) {
        const k = `${e.ip}:${e.port}`;
        if (seen.has(k)) continue;
        seen.add(k);
        endpoints.push({ ip: e.ip, port: e.port, ready: e.ready, ...(e.podName ? { pod: e.podName } : {}) });
      }
    }
    const g: GraphService = {
      id: `svc:${svc.key}`,
      key: svc.key,
      namespace: svc.namespace,
      name: svc.name,
      fqdn: svc.fqdn,
      ...(svc.clusterIP !== undefined ? { clusterIP: svc.clusterIP } : {}),
      ports: [],
      endpoints,
      identities,
      proxies: [],
    };
    services.set(svc.key, g);
    for (const id of identities) {
      const list = servicesOfIdentity.get(id) ?? [];
      list.push(g);
      servicesOfIdentity.set(id, list);
    }
  }
  for (const p of policies.services) {
    const g = services.get(p.service);
    if (g === undefined) continue;
    const meshSvc = view.service(p.service);
    g.ports = p.ports.map((port) => ({
      port: port.port,
      ...(port.name !== undefined ? { name: port.name } : {}),
      protocol: port.protocol,
      targetPort: meshSvc?.ports.find((mp) => mp.port === port.port)?.targetPort ?? port.port,
      rules: port.rules.map((r) => ({ sources: r.sources, routes: routeSummary(r), origin: r.origin })),
    }));
    if (p.split !== undefined) g.split = p.split;
  }

  const identities = new Map<string, GraphIdentity>();
  const identityNode = (key: string): GraphIdentity => {
    let n = identities.get(key);
    if (n === undefined) {
      const [namespace = '', name = ''] = key.split('/');
      n = { id: `id:${key}`, key, namespace, name, proxies: [] };
      identities.set(key, n);
    }
    return n;
  };

  attachProxies(src, services, identityNode);

  // A source identity is drawn from the services its pods back; a split apex only
  // when nothing else stands for it (its pods are the backends' pods).
  const sourceNodes = (key: string): string[] => {
    const all = servicesOfIdentity.get(key) ?? [];
    const concrete = all.filter((s) => s.split === undefined);
    const chosen = concrete.length > 0 ? concrete : all;
    return chosen.length > 0 ? chosen.map((s) => s.id) : [identityNode(key).id];
  };

  const edges = new Map<string, GraphEdge>();
  for (const dst of services.values()) {
    for (const port of dst.ports) {
      for (const rule of port.rules) {
        // Permissive mode's rule is said once, not drawn.
        if (rule.sources === EVERY_SOURCE) continue;
        for (const source of rule.sources) {
          for (const from of sourceNodes(source)) {
            const id = `allow:${from}->${dst.id}`;
            let e = edges.get(id);
            if (e === undefined) {
              e = { id, source: from, target: dst.id, kind: 'allow', targets: [], ports: [], label: '' };
              edges.set(id, e);
            }
            const target = rule.origin.replace(/^TrafficTarget /, '');
            if (!e.targets?.includes(target)) e.targets?.push(target);
            const ep = e.ports?.find((x) => x.port === port.port);
            if (ep === undefined) e.ports?.push({ port: port.port, routes: [...rule.routes] });
            else for (const r of rule.routes) if (!ep.routes.includes(r)) ep.routes.push(r);
          }
        }
      }
    }
  }
  for (const e of edges.values()) {
    e.targets?.sort();
    e.label = (e.targets ?? []).map((t) => t.split('/')[1] ?? t).join(', ');
  }
  for (const apex of services.values()) {
    if (apex.split === undefined) continue;
    const total = apex.split.reduce((sum, b) => sum + b.weight, 0);
    for (const b of apex.split) {
      const backend = services.get(b.service);
      if (backend === undefined) continue;
      const percent = total > 0 ? Math.round((b.weight / total) * 1000) / 10 : 0;
      const id = `split:${apex.id}->${backend.id}`;
      edges.set(id, {
        id,
        source: apex.id,
        target: backend.id,
        kind: 'split',
        weight: b.weight,
        percent,
        label: `weight ${b.weight} (${percent}%)`,
      });
    }
  }

  // Reported traffic on the allow edge it went along, else an edge of its own.
  for (const stat of src.edgeStats ?? []) {
    const to = services.get(stat.destination)?.id;
    if (to === undefined) continue;
    const traffic = graphTraffic(stat);
    for (const from of sourceNodes(stat.source)) {
      const allow = edges.get(`allow:${from}->${to}`);
      if (allow !== undefined) {
        allow.traffic = traffic;
        allow.label = `${allow.label} · ${traffic.label}`;
        continue;
      }
      const id = `traffic:${from}->${to}`;
      edges.set(id, { id, source: from, target: to, kind: 'traffic', traffic, label: traffic.label });
    }
  }

  // After the identity nodes policy needs exist, so Egress sources find theirs (or add one).
  const outside = outsideGraph({
    view,
    sourceNodes,
    serviceNode: (key) => services.get(key)?.id,
    problems: src.problems ?? [],
  });
  for (const e of outside.edges) edges.set(e.id, e);

  const serviceList = [...services.values()];
  const identityList = [...identities.values()].sort((a, b) => a.key.localeCompare(b.key));
  const namespaces = [
    ...new Set([...serviceList.map((s) => s.namespace), ...identityList.map((i) => i.namespace)]),
  ].sort();
  const edgeList = [...edges.values()].sort((a, b) => a.id.localeCompare(b.id));
  // A pod backing two services is drawn under both but counted once.
  const unique = new Map<string, ProxyState>();
  for (const holder of [...serviceList, ...identityList])
    for (const p of holder.proxies) unique.set(p.uuid ?? `pod:${p.pod?.namespace}/${p.pod?.name}`, p.state);
  const byState: Record<ProxyState, number> = { SYNCED: 0, STALE: 0, NACKED: 0, DISCONNECTED: 0 };
  for (const s of unique.values()) byState[s]++;
  return {
    mesh: src.meshName,
    version: view.version,
    permissive: view.permissive,
    namespaces,
    services: serviceList,
    identities: identityList,
    external: outside.external,
    ingressSources: outside.ingressSources,
    edges: edgeList,
    problems: [...(src.problems ?? [])],
    counts: {
      namespaces: namespaces.length,
      services: serviceList.length,
      proxies: unique.size,
      edges: edgeList.filter((e) => e.kind === 'allow').length,
      egress: edgeList.filter((e) => e.kind === 'egress').length,
      ingress: edgeList.filter((e) => e.kind === 'ingress').length,
      traffic: edgeList.filter((e) => e.traffic !== undefined).length,
      byState,
    },
  };
}

/**
 * Puts each proxy under the services its pod backs (the generators' own
 * ProxyContext), else under its identity; and each endpoint pod without a
 * proxy under its service, as not connected.
 */
function attachProxies(
  src: GraphSources,
  services: Map<string, GraphService>,
  identityNode: (key: string) => GraphIdentity,
): void {
  const { view } = src;
  // Newest stream per proxy UUID; a stream that ended counts only when none is live.
  const latest = new Map<string, { identity: ProxyIdentity; live?: DebugProxy; gone?: DisconnectedProxy }>();
  for (const p of buildProxies(src.streams, () => undefined))
    latest.set(p.identity.uuid, { identity: p.identity, live: p });
  for (const d of src.disconnected ?? []) {
    const have = latest.get(d.identity.uuid);
    if (have?.live) continue;
    if (have?.gone && have.gone.disconnectedAt >= d.disconnectedAt) continue;
    latest.set(d.identity.uuid, { identity: d.identity, gone: d });
  }
  const podsWithProxy = new Set<string>();
  for (const [uuid, { identity, live, gone }] of latest) {
    const ctx = proxyContext(identity, view);
    const podRef = ctx.pod
      ? { namespace: ctx.pod.metadata.namespace ?? '', name: ctx.pod.metadata.name }
      : undefined;
    const types: GraphTypeStatus[] = [];
    if (live) {
      const urls = Object.keys(live.types).sort((a, b) => typeRank(a) - typeRank(b) || a.localeCompare(b));
      for (const typeUrl of urls) {
        const t = live.types[typeUrl];
        if (t === undefined) continue;
        types.push({
          type: SHORT_TYPE[typeUrl] ?? typeUrl,
          typeUrl,
          ...(t.sentVersion !== undefined ? { sent: t.sentVersion } : {}),
          ...(t.ackedVersion !== undefined ? { acked: t.ackedVersion } : {}),
          ...(t.nackedVersion !== undefined ? { nacked: t.nackedVersion } : {}),
          ...(t.lastNackMessage !== undefined ? { lastNack: t.lastNackMessage } : {}),
          syncState: t.syncState,
        });
      }
    }
    const base = {
      label: podRef?.name ?? uuid,
      state: live ? overallState(types) : 'DISCONNECTED',
      identity: identityKey(identity),
      kind: identity.kind,
      uuid,
      ...(podRef ? { pod: podRef } : {}),
      ...(live
        ? { streamId: live.streamId, connectedAt: live.connectedAt }
        : gone
          ? {
              streamId: gone.streamId,
              connectedAt: gone.connectedAt.toISOString(),
              disconnectedAt: gone.disconnectedAt.toISOString(),
            }
          : {}),
      types,
    } satisfies Omit<GraphProxy, 'id'>;
    const suffix = podRef ? `${podRef.namespace}/${podRef.name}` : uuid;
    if (ctx.services.length === 0) {
      const n = identityNode(identityKey(identity));
      n.proxies.push({ id: `px:${n.id}:${suffix}`, ...base });
      continue;
    }
    if (podRef) podsWithProxy.add(`${podRef.namespace}/${podRef.name}`);
    for (const s of ctx.services) {
      const g = services.get(s.key);
      g?.proxies.push({ id: `px:${g.id}:${suffix}`, ...base });
    }
  }
  for (const g of services.values()) {
    for (const e of g.endpoints) {
      if (e.pod === undefined || podsWithProxy.has(`${g.namespace}/${e.pod}`)) continue;
      if (g.proxies.some((p) => p.pod?.name === e.pod && p.pod?.namespace === g.namespace)) continue;
      g.proxies.push({
        id: `px:${g.id}:${g.namespace}/${e.pod}`,
        label: e.pod,
        state: 'DISCONNECTED',
        pod: { namespace: g.namespace, name: e.pod },
        types: [],
      });
    }
    g.proxies.sort((a, b) => a.label.localeCompare(b.label) || a.id.localeCompare(b.id));
  }
}

/** An edge's figures as the page shows them: rounded, with a one-line label. */
export function graphTraffic(e: EdgeSummary): GraphTraffic {
  const rps = Math.round(e.rps * 100) / 100;
  const successPercent = e.successRate === undefined ? undefined : Math.round(e.successRate * 1000) / 10;
  const round = (ms: number) => Math.round(ms * 10) / 10;
  return {
    rps,
    ...(successPercent !== undefined ? { successPercent } : {}),
    ...(e.p50Ms !== undefined ? { p50Ms: round(e.p50Ms) } : {}),
    ...(e.p99Ms !== undefined ? { p99Ms: round(e.p99Ms) } : {}),
    requests: e.requests,
    errors: e.errors,
    seconds: e.seconds,
    proxies: e.proxies,
    label: `${rps < 10 ? rps.toFixed(2) : rps.toFixed(1)} rps · ${successPercent === undefined ? 'no responses' : `${successPercent}% ok`}`,
  };
}

const ORDER: readonly string[] = PUSH_ORDER;

function typeRank(typeUrl: string): number {
  const i = ORDER.indexOf(typeUrl);
  return i < 0 ? ORDER.length : i;
}

/** The worst per-type state; a stream that was sent nothing yet is still catching up (STALE). */
export function overallState(types: readonly GraphTypeStatus[]): ProxyState {
  if (types.some((t) => t.syncState === 'NACKED')) return 'NACKED';
  if (types.some((t) => t.syncState === 'STALE')) return 'STALE';
  return types.some((t) => t.syncState === 'SYNCED') ? 'SYNCED' : 'STALE';
}
