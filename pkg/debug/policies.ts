import type { IngressPolicy, IngressRoute } from '../catalog/ingress.js';
import type { RetryRule } from '../catalog/retry.js';
import type { MeshView } from '../catalog/types.js';
import { ingressPorts, retryTables } from '../catalog/view.js';
import { identityKey } from '../mesh/identity.js';
import type { HTTPMatch } from '../model/objects.js';

export interface DebugRule {
  /** `<namespace>/<serviceAccount>` of each allowed source, or 'any' (permissive). */
  sources: string[] | 'any';
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

export interface DebugPolicies {
  version: number;
  permissive: boolean;
  services: DebugServicePolicy[];
  ingress: DebugIngressPort[];
  retries: DebugRetry[];
}

/** `/debug/policies`: per meshed service and port, who may connect and how, and split weights. */
export function buildPolicies(view: MeshView): DebugPolicies {
  const services = view.services().map((svc) => {
    const out: DebugServicePolicy = {
      service: svc.key,
      ports: svc.ports.map((p) => ({
        port: p.port,
        ...(p.name !== undefined ? { name: p.name } : {}),
        protocol: p.protocol,
        rules: view.inboundRules(svc.key, p.port).map((r) => ({
          sources: r.sources === 'any' ? 'any' : r.sources.map(identityKey),
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
  return { version: view.version, permissive: view.permissive, services, ingress, retries };
}
