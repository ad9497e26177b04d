// The graph's edges across the mesh's boundary: Egress (a source's sidecar
// letting traffic out to a destination outside the mesh) and ingress (a
// backend's sidecar admitting traffic from outside). Both are read from the
// answers the Envoy generators use — the per-identity egress plan
// (envoy/egress/plan.ts) and the compiled ingress ports (catalog/ingress.ts)
// — so the page shows what the sidecars enforce, grouped the same way.
import type { IpRange } from '../catalog/egress.js';
import type { MeshView } from '../catalog/types.js';
import { egressPassthrough, egressRulesOf, egressSources, ingressPorts } from '../catalog/view.js';
import { egressPlan } from '../envoy/egress/plan.js';
import { identityKey } from '../mesh/identity.js';
import {
  ANY_ADDRESS,
  type GraphEdge,
  type GraphEgressPort,
  type GraphExternal,
  type GraphIngressPort,
  type GraphIngressSource,
  type GraphProblem,
} from './graph-types.js';
import { ingressRouteSummary, objectName, routeSummary } from './summary.js';

export interface OutsideInputs {
  view: MeshView;
  /** The graph nodes standing for a source identity (`<ns>/<sa>`): the services its pods back, else its identity node. */
  sourceNodes(identity: string): string[];
  /** The node id of a mesh service, when the graph has it. */
  serviceNode(key: string): string | undefined;
  problems: readonly GraphProblem[];
}

export interface OutsideGraph {
  external: GraphExternal[];
  ingressSources: GraphIngressSource[];
  edges: GraphEdge[];
}

const ANY_ID = `ext:${ANY_ADDRESS}`;

function cidr(r: IpRange): string {
  return `${r.address}/${r.prefixLen}`;
}

export function outsideGraph(inp: OutsideInputs): OutsideGraph {
  const external = new Map<string, GraphExternal>();
  const sources = new Map<string, GraphIngressSource>();
  const edges = new Map<string, GraphEdge>();
  egressPart(inp, external, edges);
  ingressPart(inp, sources, edges);
  for (const e of edges.values()) {
    const objects = new Set<string>();
    for (const p of e.egress ?? []) for (const o of p.egresses) objects.add(`Egress ${o}`);
    for (const p of e.ingress ?? []) {
      objects.add(`IngressBackend ${p.ingressBackend}`);
      for (const i of p.ingresses) objects.add(`Ingress ${i}`);
    }
    const problems = inp.problems.filter(
      (p) =>
        p.kind !== undefined && objects.has(`${p.kind} ${p.namespace ? `${p.namespace}/` : ''}${p.name}`),
    );
    if (problems.length > 0) e.problems = problems;
  }
  return {
    external: [...external.values()].sort((a, b) => a.id.localeCompare(b.id)),
    ingressSources: [...sources.values()].sort((a, b) => a.id.localeCompare(b.id)),
    edges: [...edges.values()],
  };
}

function egressPart(
  inp: OutsideInputs,
  external: Map<string, GraphExternal>,
  edges: Map<string, GraphEdge>,
): void {
  const { view } = inp;
  const ids = egressSources(view);
  const reason = egressPassthrough(view);
  if (reason !== undefined) {
    // Said once, like permissive mode's allow edges: an edge from every workload would say nothing.
    const moot = new Set<string>();
    for (const id of ids) for (const r of egressRulesOf(view, id)) moot.add(objectName(r.origin));
    external.set(ANY_ID, {
      id: ANY_ID,
      kind: ANY_ADDRESS,
      label: 'any destination outside the mesh',
      passthrough: reason,
      moot: [...moot].sort(),
    });
    return;
  }
  const destination = (kind: GraphExternal['kind'], name: string): GraphExternal => {
    const id = kind === ANY_ADDRESS ? ANY_ID : `ext:${kind}:${name}`;
    let d = external.get(id);
    if (d === undefined) {
      d = { id, kind, label: kind === ANY_ADDRESS ? 'any address outside the mesh' : name };
      external.set(id, d);
    }
    return d;
  };
  // Hostless, rangeless https and tcp chains match on the port alone: any address.
  const byRange = (ranges: readonly IpRange[]) =>
    ranges.length === 0 ? [destination(ANY_ADDRESS, '')] : ranges.map((r) => destination('cidr', cidr(r)));
  for (const id of ids) {
    const plan = egressPlan(view, id);
    const entries: { to: GraphExternal; port: GraphEgressPort }[] = [];
    for (const p of plan.http) {
      for (const h of p.hosts) {
        entries.push({
          to: destination('host', h.host),
          port: {
            port: p.port,
            protocol: 'http',
            ipRanges: p.ipRanges.map(cidr),
            routes: routeSummary(h),
            egresses: h.origins.map(objectName),
          },
        });
      }
    }
    for (const c of plan.tls) {
      const to =
        c.serverNames.length > 0 ? c.serverNames.map((n) => destination('host', n)) : byRange(c.ipRanges);
      for (const d of to)
        entries.push({
          to: d,
          port: {
            port: c.port,
            protocol: 'https',
            ipRanges: c.ipRanges.map(cidr),
            egresses: c.origins.map(objectName),
          },
        });
    }
    for (const c of plan.tcp) {
      for (const d of byRange(c.ipRanges))
        entries.push({
          to: d,
          port: {
            port: c.port,
            protocol: c.serverFirst ? 'tcp-server-first' : 'tcp',
            ipRanges: c.ipRanges.map(cidr),
            egresses: c.origins.map(objectName),
          },
        });
    }
    for (const from of inp.sourceNodes(identityKey(id))) {
      for (const { to, port } of entries) {
        const eid = `egress:${from}->${to.id}`;
        let e = edges.get(eid);
        if (e === undefined) {
          e = { id: eid, source: from, target: to.id, kind: 'egress', egress: [], label: '' };
          edges.set(eid, e);
        }
        const list = e.egress ?? [];
        const same = list.find((x) => x.port === port.port && x.protocol === port.protocol);
        // Two identities drawn as one service node: the union of what they may do.
        if (same === undefined)
          list.push({ ...port, ipRanges: [...port.ipRanges], egresses: [...port.egresses] });
        else {
          for (const o of port.egresses) if (!same.egresses.includes(o)) same.egresses.push(o);
          for (const r of port.routes ?? []) if (same.routes && !same.routes.includes(r)) same.routes.push(r);
        }
      }
    }
  }
  for (const e of edges.values()) {
    if (e.kind !== 'egress') continue;
    const ports = e.egress ?? [];
    ports.sort((a, b) => a.port - b.port || a.protocol.localeCompare(b.protocol));
    for (const p of ports) p.egresses.sort();
    const names = [...new Set(ports.flatMap((p) => p.egresses.map((o) => o.split('/')[1] ?? o)))];
    e.label = `${ports.map((p) => `${p.protocol} ${p.port}`).join(', ')} · ${names.join(', ')}`;
  }
}

function ingressPart(
  inp: OutsideInputs,
  sources: Map<string, GraphIngressSource>,
  edges: Map<string, GraphEdge>,
): void {
  const labelRoutes = new Map<string, Set<string>>();
  for (const [key, p] of ingressPorts(inp.view)) {
    // Keys are `<ns>/<svc>|<targetPort>` (catalog/ingress.ts ingressPortKey).
    const bar = key.lastIndexOf('|');
    const target = inp.serviceNode(key.slice(0, bar));
    if (target === undefined) continue;
    const targetPort = Number(key.slice(bar + 1));
    const routes = p.routes === 'all' ? ['any host and path'] : p.routes.map(ingressRouteSummary);
    // Labels say hosts and paths the short way: `shop.example.com/books`.
    const short = p.routes === 'all' ? [] : p.routes.map((r) => `${r.host ?? '*'}${r.path?.value ?? ''}`);
    for (const policy of p.policies) {
      for (const f of policy.from) {
        // An unresolved Service source admits nobody (and is reported): nothing to draw.
        if (f.cidrs.length === 0) continue;
        let from = f.kind === 'Service' ? inp.serviceNode(f.name) : undefined;
        if (from === undefined) {
          const id = f.kind === 'Service' ? `in:svc:${f.name}` : `in:ip:${f.name}`;
          if (!sources.has(id))
            sources.set(id, {
              id,
              kind: f.kind,
              label: f.kind === 'Service' ? `Service ${f.name}` : f.name,
              cidrs: [...f.cidrs],
            });
          from = id;
        }
        const eid = `ingress:${from}->${target}`;
        let e = edges.get(eid);
        if (e === undefined) {
          e = { id: eid, source: from, target, kind: 'ingress', ingress: [], label: '' };
          edges.set(eid, e);
        }
        const labels = labelRoutes.get(eid) ?? new Set<string>();
        for (const r of short) labels.add(r);
        labelRoutes.set(eid, labels);
        const origin = objectName(policy.origin);
        const list = e.ingress ?? [];
        if (list.some((x) => x.targetPort === targetPort && x.ingressBackend === origin)) continue;
        const clientCert =
          p.protocol === 'https' ? (p.skipClientCertValidation ? 'skip' : 'mTLS') : undefined;
        const entry: GraphIngressPort = {
          targetPort,
          protocol: p.protocol,
          ...(clientCert !== undefined ? { clientCert } : {}),
          how:
            p.protocol === 'http' ? 'http' : clientCert === 'skip' ? 'https (no client cert)' : 'https mTLS',
          principals: [...policy.principals],
          sniHosts: [...policy.sniHosts],
          routes,
          requests: routeSummary({ http: policy.matches }),
          ingressBackend: origin,
          ingresses: p.ingresses.map(objectName),
        };
        list.push(entry);
      }
    }
  }
  for (const e of edges.values()) {
    if (e.kind !== 'ingress') continue;
    const ports = e.ingress ?? [];
    ports.sort((a, b) => a.targetPort - b.targetPort || a.ingressBackend.localeCompare(b.ingressBackend));
    const how = [...new Set(ports.map((p) => p.how))];
    const routes = [...(labelRoutes.get(e.id) ?? [])];
    const shown = routes.length > 2 ? [...routes.slice(0, 2), `+${routes.length - 2}`] : routes;
    e.label = [how.join(', '), ...(shown.length > 0 ? [shown.join(', ')] : [])].join(' · ');
  }
}
