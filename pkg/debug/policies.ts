import type { MeshView } from '../catalog/types.js';
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

export interface DebugPolicies {
  version: number;
  permissive: boolean;
  services: DebugServicePolicy[];
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
  return { version: view.version, permissive: view.permissive, services };
}
