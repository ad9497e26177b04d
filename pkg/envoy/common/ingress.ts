// Which inbound ports get an ingress chain: the IngressBackend answers of a
// proxy's inbound ports, read by LDS (the chains), RDS (their route configs),
// SDS (their certificates) and `skein policy check`.
import type { IngressPort } from '../../catalog/ingress.js';
import type { MeshView } from '../../catalog/types.js';
import { anyIngress, ingressPort } from '../../catalog/view.js';
import type { InboundPort } from './inbound.js';

/** One target port's ingress answer, with the inbound port it was found for. */
export interface IngressChainInput {
  port: InboundPort;
  ingress: IngressPort;
}

/**
 * The ingress answers of a proxy's inbound ports: per target port the first
 * service (by key) that has one, since one chain per target port and
 * transport is all Envoy can tell apart for plaintext.
 */
export function ingressInputs(mesh: MeshView, ports: readonly InboundPort[]): IngressChainInput[] {
  // Most meshes have no ingress policy: one question for the mesh, none per port.
  if (ports.length === 0 || !anyIngress(mesh)) return [];
  const out: IngressChainInput[] = [];
  const seen = new Set<string>();
  for (const p of ports) {
    const ingress = ingressPort(mesh, p.service.key, p.port.targetPort);
    if (!ingress || ingress.cidrs.length === 0) continue;
    const k = `${p.port.targetPort}|${ingress.protocol}`;
    if (seen.has(k)) continue;
    seen.add(k);
    out.push({ port: p, ingress });
  }
  return out;
}
