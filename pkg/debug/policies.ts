import type { IpRange } from '../catalog/egress.js';
import type { IngressPolicy, IngressRoute } from '../catalog/ingress.js';
import type { RetryRule } from '../catalog/retry.js';
import { EVERY_SOURCE, type EverySource, type MeshView } from '../catalog/types.js';
import { egressPassthrough, egressSources, gatewayPlan, ingressPorts, retryTables } from '../catalog/view.js';
import { egressPlan } from '../envoy/egress/plan.js';
import { identityKey } from '../mesh/identity.js';
import type { HTTPMatch } from '../model/objects.js';

export interface DebugRule {
  /** `<namespace>/<serviceAccount>` of each allowed source, or EVERY_SOURCE (permissive). */
  sources: string[] | EverySource;
  http: HTTPMatch[] | 'all';
  /** The SMI object behind the edge, e.g. `TrafficTarget bookstore/bookbuyer-access-bookstore`. */
  origin: string;
}

export interface DebugServicePolicy {
  service: string;
  ports: { port: number; name?: string; protocol: string; rules: DebugRule[] }[];
  /** TrafficSplit backends when the service is a split apex. */
  split?: { service: string; weight: number }[];
}

/** What a backend's sidecar admits from outside the mesh on one target port (IngressBackend, Ingress). */
export interface DebugIngressPort {
  service: string;
  /** The pod's port (IngressBackend `port.number`). */
  targetPort: number;
  protocol: 'http' | 'https';
  skipClientCertValidation: boolean;
  /** Source prefixes the chain matches. */
  cidrs: readonly string[];
  /** Ingress host/paths admitted, or 'all' when no Ingress names the port. */
  routes: readonly IngressRoute[] | 'all';
  ingresses: readonly string[];
  policies: readonly IngressPolicy[];
}

/** The Retry in force for one source → destination pair (catalog/retry.ts). */
export interface DebugRetry extends RetryRule {
  /** `<namespace>/<serviceAccount>` */
  source: string;
  /** `<namespace>/<service>` */
  destination: string;
}

/** One allowed host on an http egress port: told apart by the Host header (`host` or `host:port`). */
export interface DebugEgressHttpHost {
  host: string;
  /** The Envoy cluster the requests go to: `<host>:<port>` (DNS), or the passthrough for a wildcard. */
  cluster: string;
  /** The HTTPRouteGroup matches allowed (Egress `matches`), or 'all'. */
  http: readonly HTTPMatch[] | 'all';
  /** `Egress <ns>/<name>` behind it. */
  egresses: readonly string[];
}

/** What one source identity's sidecar lets out of the mesh, grouped the way Envoy matches it (envoy/egress/plan.ts). */
export interface DebugEgressSource {
  /** `<namespace>/<serviceAccount>` */
  source: string;
  /** By Host header, per destination port; `ipRanges` empty = any address. */
  http: { port: number; ipRanges: string[]; hosts: DebugEgressHttpHost[] }[];
  /** TLS passed through, by SNI; `serverNames` empty = any SNI. */
  https: { port: number; ipRanges: string[]; serverNames: readonly string[]; egresses: readonly string[] }[];
  /** By destination address and port; tcp-server-first waits for no client bytes. */
  tcp: {
    port: number;
    protocol: 'tcp' | 'tcp-server-first';
    ipRanges: string[];
    egresses: readonly string[];
  }[];
}

export interface DebugEgress {
  /**
   * Why every destination outside the mesh passes through (permissive mode,
   * MeshConfig enableEgress): the rules below are then moot. Absent when the
   * rules are what the sidecars enforce and everything else is refused.
   */
  passthrough?: string;
  sources: DebugEgressSource[];
}

/** A route of skein's ingress gateway (Ingresses of class skein). */
export interface DebugGatewayRoute {
  /** undefined = every path. */
  path?: NonNullable<IngressRoute['path']>;
  /** `<namespace>/<service>` and the service port called over mTLS. */
  service: string;
  port: number;
  /** `Ingress <ns>/<name>` */
  origin: string;
}

export interface DebugGateway {
  /** Sorted by host, `*` last; routes most specific first (Envoy's first-match order). */
  hosts: { host: string; tlsSecret?: string; routes: DebugGatewayRoute[] }[];
  ingresses: readonly string[];
}

export interface DebugPolicies {
  version: number;
  permissive: boolean;
  services: DebugServicePolicy[];
  ingress: DebugIngressPort[];
  gateway: DebugGateway;
  egress: DebugEgress;
  retries: DebugRetry[];
}

function cidr(r: IpRange): string {
  return `${r.address}/${r.prefixLen}`;
}

/** Per source identity an Egress names, its sidecar's egress plan (what the generators build listeners from). */
function buildEgress(view: MeshView): DebugEgress {
  const sources = egressSources(view).map((id): DebugEgressSource => {
    const plan = egressPlan(view, id);
    return {
      source: identityKey(id),
      http: plan.http.map((p) => ({
        port: p.port,
        ipRanges: p.ipRanges.map(cidr),
        hosts: p.hosts.map((h) => ({ host: h.host, cluster: h.cluster, http: h.http, egresses: h.origins })),
      })),
      https: plan.tls.map((c) => ({
        port: c.port,
        ipRanges: c.ipRanges.map(cidr),
        serverNames: c.serverNames,
        egresses: c.origins,
      })),
      tcp: plan.tcp.map((c) => ({
        port: c.port,
        protocol: c.serverFirst ? 'tcp-server-first' : 'tcp',
        ipRanges: c.ipRanges.map(cidr),
        egresses: c.origins,
      })),
    };
  });
  const passthrough = egressPassthrough(view);
  return passthrough === undefined ? { sources } : { passthrough, sources };
}

function buildGateway(view: MeshView): DebugGateway {
  const plan = gatewayPlan(view);
  return {
    hosts: plan.hosts.map((h) => ({
      host: h.host,
      ...(h.tlsSecret !== undefined ? { tlsSecret: h.tlsSecret } : {}),
      routes: h.routes.map((r) => ({
        ...(r.path !== undefined ? { path: r.path } : {}),
        service: r.service.key,
        port: r.port.port,
        origin: r.origin,
      })),
    })),
    ingresses: plan.ingresses,
  };
}

/**
 * `/debug/policies`: per meshed service and port, who may connect and how,
 * split weights; what crosses the mesh's boundary (ingress per backend port,
 * the ingress gateway's routes, egress per source identity); and retries.
 */
export function buildPolicies(view: MeshView): DebugPolicies {
  const services = view.services().map((svc) => {
    const out: DebugServicePolicy = {
      service: svc.key,
      ports: svc.ports.map((p) => ({
        port: p.port,
        ...(p.name !== undefined ? { name: p.name } : {}),
        protocol: p.protocol,
        rules: view.inboundRules(svc.key, p.port).map((r) => ({
          sources: r.sources === EVERY_SOURCE ? EVERY_SOURCE : r.sources.map(identityKey),
          http: r.http,
          origin: r.origin,
        })),
      })),
    };
    const split = view.split(svc.key);
    if (split !== undefined) out.split = split.map((b) => ({ service: b.service.key, weight: b.weight }));
    return out;
  });
  const ingress = [...ingressPorts(view)].map(([key, p]): DebugIngressPort => {
    // Keys are `<ns>/<svc>|<targetPort>` (catalog/ingress.ts ingressPortKey).
    const bar = key.lastIndexOf('|');
    return {
      service: key.slice(0, bar),
      targetPort: Number(key.slice(bar + 1)),
      protocol: p.protocol,
      skipClientCertValidation: p.skipClientCertValidation,
      cidrs: p.cidrs,
      routes: p.routes,
      ingresses: p.ingresses,
      policies: p.policies,
    };
  });
  ingress.sort((a, b) =>
    a.service === b.service ? a.targetPort - b.targetPort : a.service < b.service ? -1 : 1,
  );
  const retries: DebugRetry[] = [];
  for (const [source, table] of retryTables(view))
    for (const [destination, rule] of table) retries.push({ source, destination, ...rule });
  retries.sort((a, b) =>
    a.source === b.source ? (a.destination < b.destination ? -1 : 1) : a.source < b.source ? -1 : 1,
  );
  return {
    version: view.version,
    permissive: view.permissive,
    services,
    ingress,
    gateway: buildGateway(view),
    egress: buildEgress(view),
    retries,
  };
}
