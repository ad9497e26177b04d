// `skein policy check` as a pure function of a MeshView: may the source pod's
// identity reach the destination pod through the mesh, and which TrafficTarget
// (with which route matches) says so. The answer is read from the same
// inboundRules the controller turns into the destination proxy's RBAC.

import { EVERY_SOURCE, type EverySource, type MeshService, type MeshView } from '../catalog/types.js';
import { monitoredNamespaces, policyProblems } from '../catalog/view.js';
import { type Identity, identityKey } from '../mesh/identity.js';
import type { HTTPMatch, Pod } from '../model/objects.js';

export interface PortVerdict {
  /** `<ns>/<svc>` */
  service: string;
  port: number;
  protocol: string;
  /** Rules that let the source in: the TrafficTarget (or 'permissive') and what it allows. */
  allowedBy: { origin: string; http: readonly HTTPMatch[] | 'all' }[];
  /** Every rule on the port (for saying who is allowed when the source is not). */
  rules: { origin: string; sources: string[] | EverySource }[];
}

export type PolicyVerdict =
  | {
      verdict: 'ALLOWED' | 'DENIED';
      permissive: boolean;
      source: Identity;
      destination: Identity;
      ports: PortVerdict[];
      /** Set when nothing was checked port by port (e.g. no Service selects the destination). */
      reason?: string;
      /**
       * Policy problems that may change this answer: those of SMI objects and
       * splits in the destination's namespace, and of the Services that select
       * the destination (`<Kind> <ns>/<name>: <reason>`).
       */
      problems: string[];
    }
  | { verdict: 'NOT_IN_MESH'; reason: string };

export function podIdentity(pod: Pod): Identity {
  return {
    namespace: pod.metadata.namespace ?? '',
    serviceAccount: pod.spec?.serviceAccountName || 'default',
  };
}

export function checkPolicy(view: MeshView, meshName: string, src: Pod, dst: Pod): PolicyVerdict {
  const monitored = new Set(monitoredNamespaces(view));
  for (const [role, pod] of [
    ['source', src],
    ['destination', dst],
  ] as const) {
    const ns = pod.metadata.namespace ?? '';
    if (!monitored.has(ns))
      return {
        verdict: 'NOT_IN_MESH',
        reason: `the ${role} pod ${ns}/${pod.metadata.name} is not in mesh ${meshName}: namespace ${ns} is not labelled skein.dev/monitored-by=${meshName} (skein namespace add ${ns})`,
      };
  }
  const source = podIdentity(src);
  const destination = podIdentity(dst);
  const services = view.servicesOfPod(dst);
  const base = {
    permissive: view.permissive,
    source,
    destination,
    problems: problemsAffecting(view, destination.namespace, services),
  };
  if (services.length === 0)
    return {
      verdict: 'DENIED',
      ...base,
      ports: [],
      reason: `no Service in the mesh selects pod ${dst.metadata.namespace}/${dst.metadata.name}, so no traffic reaches it through the mesh`,
    };
  const key = identityKey(source);
  const ports: PortVerdict[] = [];
  for (const svc of services) {
    for (const p of svc.ports) {
      const rules = view.inboundRules(svc.key, p.port);
      ports.push({
        service: svc.key,
        port: p.port,
        protocol: p.protocol,
        allowedBy: rules
          .filter((r) => r.sources === EVERY_SOURCE || r.sources.some((s) => identityKey(s) === key))
          .map((r) => ({ origin: r.origin, http: r.http })),
        rules: rules.map((r) => ({
          origin: r.origin,
          sources: r.sources === EVERY_SOURCE ? EVERY_SOURCE : r.sources.map(identityKey),
        })),
      });
    }
  }
  // The verdict first: it is what a reader of the JSON looks for.
  return { verdict: ports.some((p) => p.allowedBy.length > 0) ? 'ALLOWED' : 'DENIED', ...base, ports };
}

const POLICY_KINDS = new Set(['TrafficTarget', 'HTTPRouteGroup', 'TCPRoute', 'TrafficSplit']);

function problemsAffecting(view: MeshView, namespace: string, services: readonly MeshService[]): string[] {
  const selecting = new Set(services.map((s) => s.name));
  return policyProblems(view)
    .filter(
      (p) =>
        p.namespace === namespace &&
        (POLICY_KINDS.has(p.kind) || (p.kind === 'Service' && selecting.has(p.name))),
    )
    .map((p) => `${p.kind} ${p.namespace}/${p.name}: ${p.reason}`);
}

export function describeMatch(m: HTTPMatch): string {
  const parts = [
    m.pathRegex !== undefined ? `path ~ ${m.pathRegex}` : '',
    m.methods && m.methods.length > 0 ? `methods ${m.methods.join(',')}` : '',
    ...Object.entries(m.headers ?? {}).map(([k, v]) => `header ${k} ~ ${v}`),
  ].filter(Boolean);
  return parts.length > 0 ? `${m.name} (${parts.join('; ')})` : m.name;
}

/** Human-readable answer; the first line starts with ALLOWED, DENIED or NOT IN MESH. */
export function policyText(v: PolicyVerdict, src: string, dst: string): string {
  if (v.verdict === 'NOT_IN_MESH') return `NOT IN MESH: ${v.reason}\n`;
  const lines = [
    `${v.verdict}: ${src} (identity ${identityKey(v.source)}) -> ${dst} (identity ${identityKey(v.destination)})`,
  ];
  if (v.permissive) lines.push('  permissive mode: every identity in the mesh may reach every service in it');
  if (v.reason) lines.push(`  ${v.reason}`);
  for (const p of v.problems) lines.push(`  problem: ${p}`);
  for (const p of v.ports) {
    const at = `${p.service} port ${p.port} (${p.protocol})`;
    if (p.allowedBy.length > 0) {
      for (const a of p.allowedBy) {
        const by = a.origin === 'permissive' ? 'permissive mode' : a.origin;
        lines.push(`  ${at}: allowed by ${by}`);
        if (p.protocol !== 'tcp')
          lines.push(
            a.http === 'all'
              ? '    every request'
              : `    routes: ${a.http.length === 0 ? 'none' : a.http.map(describeMatch).join(', ')}`,
          );
      }
      continue;
    }
    if (p.rules.length === 0) {
      lines.push(`  ${at}: denied: no TrafficTarget allows anyone here`);
      continue;
    }
    lines.push(`  ${at}: denied: no TrafficTarget allows ${identityKey(v.source)}; allowed are:`);
    for (const r of p.rules)
      lines.push(`    ${r.sources === EVERY_SOURCE ? 'any identity' : r.sources.join(', ')} by ${r.origin}`);
  }
  return `${lines.join('\n')}\n`;
}
