// `skein policy check --from-ip <ip> <dst-pod>` as a pure function of a
// MeshView: may a client outside the mesh (an ingress controller) reach the
// pod, on which port and protocol, and which IngressBackend and Ingress rule
// say so. Read from the same compiled ingress answers (catalog/ingress.ts)
// and per-port choice (envoy/common/ingress.ts ingressInputs) the controller turns
// into the pod's inbound listener.
import { ipInRange, parseIpRange } from '../catalog/egress.js';
import { type HttpRequest, httpMatchAdmits, pathOnly } from '../catalog/http-match.js';
import { type IngressPort, type IngressRoute, routeAdmits } from '../catalog/ingress.js';
import { servedByPod } from '../catalog/services.js';
import type { MeshView } from '../catalog/types.js';
import { monitoredNamespaces, policyProblems } from '../catalog/view.js';
import { type InboundPort, inboundPorts } from '../envoy/common/inbound.js';
import { ingressInputs } from '../envoy/common/ingress.js';
import { inboundPlaintextChainName, ingressFilterChainName } from '../envoy/names.js';
import { type Identity, identityKey } from '../mesh/identity.js';
import type { Pod } from '../model/objects.js';
import { describeMatch, podIdentity } from './policy-check.js';

/** The client and request asked about. */
export interface IngressSource {
  /** The connection's source address (an ingress controller's pod IP, or any outside address). */
  ip: string;
  /** The SAN of the client certificate it presents (https backends). */
  principal?: string;
  /** The TLS SNI it sends (https backends). */
  sni?: string;
  /** The Host header without its port, lower case. */
  host?: string;
  request: HttpRequest;
}

export interface IngressPortVerdict {
  /** `<ns>/<svc>` */
  service: string;
  /** The pod's port (IngressBackend backends[].port.number). */
  targetPort: number;
  /** The IngressBackend's protocol, or the service port's when no IngressBackend names the port. */
  protocol: string;
  /** The inbound chain that takes the connection, if any. */
  chain?: string;
  admittedBy: { origin: string; match?: string; route?: string }[];
  /** Why not, when nothing admits. */
  denied?: string;
  /** `Ingress <ns>/<name>` objects routing to this port. */
  ingresses: string[];
  notes: string[];
}

export type IngressVerdict =
  | {
      verdict: 'ALLOWED' | 'DENIED';
      permissive: boolean;
      source: IngressSource;
      destination: Identity;
      ports: IngressPortVerdict[];
      /** Set when nothing was checked port by port. */
      reason?: string;
      /** Problems of Ingress, IngressBackend and HTTPRouteGroup objects in the destination's namespace. */
      problems: string[];
    }
  | { verdict: 'NOT_IN_MESH'; reason: string };

/** `shop.example.com:8080` → `shop.example.com`, `[::1]:80` → `::1`. */
export function hostWithoutPort(host: string): string {
  const h = host.toLowerCase();
  const v6 = /^\[(.*)\](:\d+)?$/.exec(h);
  if (v6?.[1] !== undefined) return v6[1];
  return h.replace(/:\d+$/, '');
}

function inCidrs(ip: string, cidrs: readonly string[]): boolean {
  return cidrs.some((c) => {
    const r = parseIpRange(c);
    return r !== undefined && ipInRange(ip, r);
  });
}

export function describeRoute(r: IngressRoute): string {
  const host = r.host ?? 'any host';
  const path = r.path ? `${r.path.type} ${r.path.value}` : 'any path';
  return `${host}, ${path}`;
}

const INGRESS_KINDS = new Set(['Ingress', 'IngressBackend', 'HTTPRouteGroup']);

export function checkIngress(view: MeshView, meshName: string, src: IngressSource, dst: Pod): IngressVerdict {
  const ns = dst.metadata.namespace ?? '';
  if (!monitoredNamespaces(view).includes(ns))
    return {
      verdict: 'NOT_IN_MESH',
      reason: `the destination pod ${ns}/${dst.metadata.name} is not in mesh ${meshName}: namespace ${ns} is not labelled skein.dev/monitored-by=${meshName} (skein namespace add ${ns})`,
    };
  const destination = podIdentity(dst);
  const base = {
    permissive: view.permissive,
    source: src,
    destination,
    problems: policyProblems(view)
      .filter((p) => p.namespace === ns && INGRESS_KINDS.has(p.kind))
      .map((p) => `${p.kind} ${p.namespace}/${p.name}: ${p.reason}`),
  };
  // The ports as the pod's proxy serves them (proxyContext: named target ports resolved on the pod).
  const ports = inboundPorts({ services: view.servicesOfPod(dst).map((s) => servedByPod(s, dst)) });
  if (ports.length === 0)
    return {
      verdict: 'DENIED',
      ...base,
      ports: [],
      reason: `no Service in the mesh selects pod ${ns}/${dst.metadata.name}, so its sidecar has no inbound port`,
    };
  const rows: IngressPortVerdict[] = [];
  const covered = new Set<number>();
  for (const input of ingressInputs(view, ports)) {
    covered.add(input.port.port.targetPort);
    rows.push(ingressRow(input.port, input.ingress, src, view.permissive));
  }
  for (const p of ports) {
    const t = p.port.targetPort;
    if (covered.has(t)) continue;
    covered.add(t);
    rows.push(withoutIngressBackend(p, view.permissive));
  }
  rows.sort((a, b) => a.targetPort - b.targetPort);
  return { verdict: rows.some((r) => r.admittedBy.length > 0) ? 'ALLOWED' : 'DENIED', ...base, ports: rows };
}

function withoutIngressBackend(p: InboundPort, permissive: boolean): IngressPortVerdict {
  const row: IngressPortVerdict = {
    service: p.service.key,
    targetPort: p.port.targetPort,
    protocol: p.port.protocol,
    admittedBy: [],
    ingresses: [],
    notes: [],
  };
  if (permissive) {
    row.chain = inboundPlaintextChainName(p.port.targetPort);
    row.admittedBy.push({ origin: 'permissive mode' });
    row.notes.push('permissive mode admits plaintext from anyone on every target port');
  } else
    row.denied = `no IngressBackend names target port ${p.port.targetPort} of ${p.service.key} (SMI mode: connections from outside the mesh are refused)`;
  return row;
}

function ingressRow(
  p: InboundPort,
  ing: IngressPort,
  src: IngressSource,
  permissive: boolean,
): IngressPortVerdict {
  const t = p.port.targetPort;
  const origins = ing.policies.map((x) => x.origin);
  const row: IngressPortVerdict = {
    service: p.service.key,
    targetPort: t,
    protocol: ing.protocol,
    admittedBy: [],
    ingresses: [...ing.ingresses],
    notes: [],
  };
  if (!inCidrs(src.ip, ing.cidrs)) {
    const why = `${src.ip} is not among the sources of ${origins.join(', ')}: ${ing.cidrs.join(', ')}`;
    if (permissive) {
      row.chain = inboundPlaintextChainName(t);
      row.admittedBy.push({ origin: 'permissive mode' });
      row.notes.push(`${why}; permissive mode admits plaintext from anyone on every target port`);
    } else row.denied = `${why} (no chain matches: closed)`;
    return row;
  }
  row.chain = ingressFilterChainName(t, ing.protocol);
  if (ing.protocol === 'https')
    row.notes.push(
      ing.skipClientCertValidation
        ? "TLS with the backend's certificate; the client certificate is not checked (skipClientCertValidation)"
        : "TLS with the backend's certificate; the client must present a certificate from the mesh CA",
    );
  if (permissive)
    row.notes.push('this source matches the ingress chain, so its rules apply even in permissive mode');
  const reasons: string[] = [];
  const path = pathOnly(src.request.path);
  for (const pol of ing.policies) {
    if (pol.cidrs.length === 0) continue; // no policy: it admits nobody (rbac/ingress.ts)
    if (!inCidrs(src.ip, pol.cidrs)) {
      reasons.push(`${pol.origin}: ${src.ip} is not among its sources`);
      continue;
    }
    if (
      pol.principals.length > 0 &&
      (src.principal === undefined || !pol.principals.includes(src.principal))
    ) {
      reasons.push(
        `${pol.origin}: needs a client certificate with SAN ${pol.principals.join(' or ')}${src.principal === undefined ? ' (pass --from-principal)' : `, not ${src.principal}`}`,
      );
      continue;
    }
    let route: IngressRoute | undefined;
    if (ing.routes !== 'all') {
      route = ing.routes.find((r) => routeAdmits(r, src.host, path));
      if (!route) {
        reasons.push(
          `${ing.ingresses.join(', ')} route${ing.ingresses.length === 1 ? 's' : ''} only ${ing.routes.map(describeRoute).join('; ')} here; ${src.host ?? '(no --host)'} ${path} is none of them`,
        );
        continue;
      }
    }
    let match: string | undefined;
    if (pol.matches !== 'all') {
      const m = pol.matches.find((x) => httpMatchAdmits(x, src.request));
      if (!m) {
        reasons.push(
          `${pol.origin}: spec.matches admit only ${pol.matches.length === 0 ? 'nothing' : pol.matches.map(describeMatch).join(', ')}; ${src.request.method} ${path} matches none`,
        );
        continue;
      }
      match = describeMatch(m);
    }
    if (pol.sniHosts.length > 0 && (src.sni === undefined || !pol.sniHosts.includes(src.sni))) {
      reasons.push(
        `${pol.origin}: needs TLS SNI ${pol.sniHosts.join(' or ')}${src.sni === undefined ? ' (pass --sni)' : `, not ${src.sni}`}`,
      );
      continue;
    }
    const by: IngressPortVerdict['admittedBy'][number] = { origin: pol.origin };
    if (match !== undefined) by.match = match;
    if (route) by.route = describeRoute(route);
    row.admittedBy.push(by);
  }
  if (row.admittedBy.length === 0) row.denied = `${[...new Set(reasons)].join('; ')} (403)`;
  return row;
}

/** Human-readable answer; the first line starts with ALLOWED, DENIED or NOT IN MESH. */
export function ingressText(v: IngressVerdict, dst: string): string {
  if (v.verdict === 'NOT_IN_MESH') return `NOT IN MESH: ${v.reason}\n`;
  const s = v.source;
  const who = [
    s.ip,
    s.principal !== undefined ? `principal ${s.principal}` : '',
    `${s.request.method} ${s.host ?? ''}${s.request.path}`,
  ]
    .filter(Boolean)
    .join(', ');
  const lines = [`${v.verdict}: ${who} -> ${dst} (identity ${identityKey(v.destination)})`];
  if (v.permissive)
    lines.push(
      '  permissive mode: plaintext from anyone reaches every target port without an IngressBackend',
    );
  if (v.reason) lines.push(`  ${v.reason}`);
  for (const p of v.problems) lines.push(`  problem: ${p}`);
  for (const r of v.ports) {
    const at = `${r.service} target port ${r.targetPort} (${r.protocol}${r.chain ? `, chain ${r.chain}` : ''})`;
    for (const a of r.admittedBy)
      lines.push(
        `  ${at}: allowed by ${a.origin}${a.route ? `, Ingress route ${a.route}` : ''}${a.match ? `, match ${a.match}` : ''}`,
      );
    if (r.admittedBy.length === 0) lines.push(`  ${at}: denied: ${r.denied ?? ''}`);
    if (r.ingresses.length > 0) lines.push(`    routed by ${r.ingresses.join(', ')}`);
    for (const n of r.notes) lines.push(`    note: ${n}`);
  }
  return `${lines.join('\n')}\n`;
}
