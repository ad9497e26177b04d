// `skein policy check <src-pod> --to <url>` as a pure function of a MeshView:
// may the source pod's identity reach a destination outside the mesh, and
// which Egress (with which HTTPRouteGroup match) or MeshConfig setting says
// so. The answer is read from the same egress plan the controller turns into
// the source proxy's outbound listener (envoy/egress/plan.ts, match.ts).
import { type EgressRule, type IpRange, isIpAddress } from '../catalog/egress.js';
import type { MeshService, MeshView } from '../catalog/types.js';
import { egressRulesOf, monitoredNamespaces, policyProblems } from '../catalog/view.js';
import { type EgressDestination, type EgressMatch, matchEgress } from '../envoy/egress/match.js';
import { egressPlan } from '../envoy/egress/plan.js';
import { PASSTHROUGH_CLUSTER } from '../envoy/names.js';
import { type Identity, identityKey } from '../mesh/identity.js';
import type { HTTPMatch, Pod } from '../model/objects.js';
import { UsageError } from './errors.js';
import { describeMatch, podIdentity } from './policy-check.js';

/** A `--to` destination. */
export interface EgressTarget {
  scheme: 'http' | 'https' | 'tcp';
  /** Host name (lower case) or IP address (IPv6 without brackets). */
  host: string;
  port: number;
  /** http: the request path (with its query, if given). */
  path: string;
  /** The address dialled: the host itself when it is an IP, else `--address` if given. */
  address?: string;
}

const DEFAULT_PORTS = { http: 80, https: 443 } as const;

/** `http://host[:port][/path]`, `https://host[:port]`, `tcp://host:port` or a bare `host:port` (tcp). */
export function parseEgressTarget(text: string, address?: string): EgressTarget {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `tcp://${text}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new UsageError(
      `--to ${JSON.stringify(text)} is not a destination: use http://host[:port][/path], https://host[:port], tcp://host:port or host:port`,
    );
  }
  const scheme = url.protocol.slice(0, -1).toLowerCase();
  if (scheme !== 'http' && scheme !== 'https' && scheme !== 'tcp')
    throw new UsageError(`--to ${JSON.stringify(text)}: scheme ${scheme} is not one of http, https, tcp`);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (host === '') throw new UsageError(`--to ${JSON.stringify(text)} names no host`);
  const port = url.port === '' ? (scheme === 'tcp' ? undefined : DEFAULT_PORTS[scheme]) : Number(url.port);
  if (port === undefined) throw new UsageError(`--to ${JSON.stringify(text)}: tcp needs a port (host:port)`);
  if (address !== undefined && !isIpAddress(address))
    throw new UsageError(`--address ${JSON.stringify(address)} is not an IP address`);
  if (address !== undefined && isIpAddress(host) && address !== host)
    throw new UsageError(`--address ${address} contradicts --to ${text}, which names address ${host}`);
  const target: EgressTarget = {
    scheme,
    host,
    port,
    path: scheme === 'http' ? `${url.pathname}${url.search}` : '',
  };
  const dialled = isIpAddress(host) ? host : address;
  if (dialled !== undefined) target.address = dialled;
  return target;
}

export function targetText(t: EgressTarget): string {
  const host = t.host.includes(':') ? `[${t.host}]` : t.host;
  const port = t.scheme !== 'tcp' && t.port === DEFAULT_PORTS[t.scheme] ? '' : `:${t.port}`;
  return `${t.scheme}://${host}${port}${t.scheme === 'http' ? t.path : ''}`;
}

/** The mesh Service a destination names (its FQDN, short forms or ClusterIP): not outside the mesh. */
export function meshServiceAt(view: MeshView, host: string): MeshService | undefined {
  return view
    .services()
    .find(
      (s) =>
        host === s.fqdn ||
        host === `${s.name}.${s.namespace}` ||
        host === `${s.name}.${s.namespace}.svc` ||
        (s.clusterIP !== undefined && s.clusterIP === host),
    );
}

export type EgressVerdict =
  | {
      verdict: 'ALLOWED' | 'DENIED';
      permissive: boolean;
      /** MeshConfig spec.traffic.enableEgress */
      passthrough: boolean;
      source: Identity;
      destination: EgressTarget;
      /** What lets it out: `Egress <ns>/<name>` (with its HTTPRouteGroup match), or the MeshConfig setting. */
      allowedBy: { origin: string; match?: string }[];
      /** The sidecar's chain and where it sends the connection. */
      via?: string;
      /** Why it is denied (or why everything is allowed). */
      reason?: string;
      notes: string[];
      /** Problems of the Egress objects that apply to the source (`Egress <ns>/<name>: <reason>`). */
      problems: string[];
    }
  | { verdict: 'NOT_IN_MESH'; reason: string };

export interface EgressRequestExtras {
  method?: string;
  headers?: Readonly<Record<string, string>>;
}

function rangesText(ranges: readonly IpRange[]): string {
  return ranges.map((r) => `${r.address}/${r.prefixLen}`).join(', ');
}

function hostListed(rule: EgressRule, host: string): boolean {
  return rule.hosts.some((h) => h === host || (h.startsWith('*.') && host.endsWith(h.slice(1))));
}

function portsText(rules: readonly EgressRule[]): string {
  const seen = new Map<number, string>();
  for (const r of rules) if (!seen.has(r.port)) seen.set(r.port, r.protocol);
  return [...seen].map(([p, proto]) => `${p} (${proto})`).join(', ');
}

/** `; <host> is allowed on port(s) … by …` when the host is listed on other ports only. */
function otherPorts(rules: readonly EgressRule[], t: EgressTarget): string {
  const elsewhere = rules.filter((r) => r.port !== t.port && hostListed(r, t.host));
  if (elsewhere.length === 0) return '';
  const ports = [...new Set(elsewhere.map((r) => r.port))].join(', ');
  const by = [...new Set(elsewhere.map((r) => r.origin))].join(', ');
  return `; ${t.host} is allowed on port ${ports} (${by}), not on ${t.port}`;
}

export function checkEgress(
  view: MeshView,
  meshName: string,
  src: Pod,
  target: EgressTarget,
  extras: EgressRequestExtras = {},
): EgressVerdict {
  const ns = src.metadata.namespace ?? '';
  if (!monitoredNamespaces(view).includes(ns))
    return {
      verdict: 'NOT_IN_MESH',
      reason: `the source pod ${ns}/${src.metadata.name} is not in mesh ${meshName}: namespace ${ns} is not labelled skein.dev/monitored-by=${meshName} (skein namespace add ${ns}); outside the mesh its calls leave unchanged`,
    };
  const source = podIdentity(src);
  const key = identityKey(source);
  const rules = egressRulesOf(view, source);
  const origins = new Set(rules.map((r) => r.origin));
  const problems = policyProblems(view)
    .filter(
      (p) =>
        p.kind === 'Egress' &&
        // Its rules apply to the source, or one was dropped for it (egressBySource names the identity).
        (origins.has(`Egress ${p.namespace}/${p.name}`) || p.reason.includes(` for ${key} `)),
    )
    .map((p) => `Egress ${p.namespace}/${p.name}: ${p.reason}`);
  const plan = egressPlan(view, source);
  const base = {
    permissive: view.permissive,
    passthrough: plan.passthrough,
    source,
    destination: target,
    allowedBy: [] as { origin: string; match?: string }[],
    notes: [] as string[],
    problems,
  };
  if (view.permissive)
    return {
      verdict: 'ALLOWED',
      ...base,
      allowedBy: [{ origin: 'permissive mode' }],
      via: `default chain → ${PASSTHROUGH_CLUSTER}`,
      reason:
        'permissive mode: everything outside the mesh leaves unchanged (Egress objects apply in SMI mode only)',
    };
  const sniSent = target.scheme === 'https' && !isIpAddress(target.host);
  const dest: EgressDestination = {
    protocol: target.scheme === 'https' ? 'tls' : target.scheme,
    port: target.port,
  };
  if (target.address !== undefined) dest.address = target.address;
  if (target.scheme === 'http' || sniSent) dest.host = target.host;
  if (target.scheme === 'http') {
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(extras.headers ?? {})) headers[k.toLowerCase()] = v;
    dest.request = { path: target.path, method: (extras.method ?? 'GET').toUpperCase(), headers };
  }
  const m = matchEgress(plan, dest);
  const { verdict, notes, ...rest } = explain(m, rules, target, key, sniSent);
  if (verdict === 'ALLOWED' && m.result === 'tcp' && target.scheme !== 'tcp')
    notes.push(
      `port ${target.port} is a tcp Egress port: the sidecar does not look at ${target.scheme === 'http' ? 'HTTP' : 'TLS'} there, only at the address`,
    );
  // The verdict first: it is what a reader of the JSON looks for.
  return { verdict, ...base, ...rest, notes };
}

interface Explained {
  verdict: 'ALLOWED' | 'DENIED';
  allowedBy: { origin: string; match?: string }[];
  via?: string;
  reason?: string;
  notes: string[];
}

function explain(
  m: EgressMatch,
  rules: readonly EgressRule[],
  t: EgressTarget,
  key: string,
  sniSent: boolean,
): Explained {
  const allowed = (allowedBy: Explained['allowedBy'], via: string, notes: string[] = []): Explained => ({
    verdict: 'ALLOWED',
    allowedBy,
    via,
    notes,
  });
  const denied = (reason: string): Explained => ({ verdict: 'DENIED', allowedBy: [], reason, notes: [] });
  const list = (xs: readonly string[]) => xs.join(', ');
  switch (m.result) {
    case 'passthrough':
      return allowed(
        [{ origin: 'MeshConfig spec.traffic.enableEgress' }],
        `default chain → ${PASSTHROUGH_CLUSTER}`,
        ['enableEgress: everything outside the mesh leaves as without a mesh (Egress objects are moot)'],
      );
    case 'http': {
      const match = m.match;
      const by = rules
        .filter(
          (r) =>
            r.port === t.port &&
            r.hosts.includes(m.host.host) &&
            (r.http === 'all' || match === 'all' || r.http.includes(match)),
        )
        .map((r) =>
          match === 'all' ? { origin: r.origin } : { origin: r.origin, match: describeMatch(match) },
        );
      return allowed(by, `egress_http_${t.port} → cluster ${m.host.cluster}`);
    }
    case 'tls':
      return allowed(
        m.chain.origins.map((origin) => ({ origin })),
        `egress_https_${t.port} (SNI ${m.chain.serverNames.length === 0 ? 'any' : list(m.chain.serverNames)}) → ${PASSTHROUGH_CLUSTER}`, // 'any': the word printed for no SNI restriction, not a TypeScript any
      );
    case 'tcp':
      return allowed(
        m.chain.origins.map((origin) => ({ origin })),
        `egress_tcp_${t.port} → ${PASSTHROUGH_CLUSTER}`,
        m.chain.serverFirst ? ['tcp-server-first: no listener filter waits for the client on this port'] : [],
      );
    case 'no-port':
      if (rules.length === 0) return denied(`no Egress lists ${key} as a source (outbound_denied)`);
      return denied(
        `no Egress allows port ${t.port} for ${key}; its Egress ports: ${portsText(rules)}${otherPorts(rules, t)} (outbound_denied)`,
      );
    case 'protocol': {
      const speaks = t.scheme === 'https' ? 'TLS' : t.scheme === 'http' ? 'HTTP' : 'neither HTTP nor TLS';
      const wants = m.portKind === 'http' ? 'plaintext HTTP' : 'TLS';
      return denied(
        `port ${t.port} is an ${m.portKind} Egress port for ${key} (${list(m.origins)}): only ${wants} passes there, this client sends ${speaks} (closed)`,
      );
    }
    case 'address': {
      const where = `${list(m.origins)} allow${m.origins.length === 1 ? 's' : ''} port ${t.port} only to ${rangesText(m.ranges)}`;
      return denied(
        m.addressKnown
          ? `${where}; ${t.address} is not in them (closed)`
          : `${where}; ${t.host} is a name: pass --address with the address the pod resolves it to (answered as if outside them)`,
      );
    }
    case 'sni':
      if (!sniSent)
        return denied(
          `port ${t.port} is an https Egress port for ${key} (${list(m.origins)}) that lets out SNI ${list(m.serverNames)} only; a client dialling an IP address sends no SNI (closed, egress_denied)`,
        );
      return denied(
        `SNI ${t.host} is not allowed on port ${t.port} for ${key}; allowed: ${list(m.serverNames)} (${list(m.origins)})${otherPorts(rules, t)} (closed, egress_denied)`,
      );
    case 'host':
      return denied(
        `host ${t.host} is not allowed on port ${t.port} for ${key}; allowed hosts: ${list(m.port.hosts.map((h) => h.host))}${otherPorts(rules, t)} (403, http.egress_${t.port}.rbac.egress.denied)`,
      );
    case 'route': {
      const http: readonly HTTPMatch[] = m.host.http === 'all' ? [] : m.host.http;
      const routes = http.length === 0 ? 'none' : list(http.map(describeMatch));
      return denied(
        `${list(m.host.origins)} allow${m.host.origins.length === 1 ? 's' : ''} ${m.host.host} on port ${t.port} only for requests matching: ${routes}; this request matches none (403)`,
      );
    }
  }
}

/** Human-readable answer; the first line starts with ALLOWED, DENIED or NOT IN MESH. */
export function egressText(v: EgressVerdict, src: string): string {
  if (v.verdict === 'NOT_IN_MESH') return `NOT IN MESH: ${v.reason}\n`;
  const lines = [
    `${v.verdict}: ${src} (identity ${identityKey(v.source)}) -> ${targetText(v.destination)}${v.destination.address !== undefined && v.destination.address !== v.destination.host ? ` (address ${v.destination.address})` : ''}`,
  ];
  for (const a of v.allowedBy) lines.push(`  allowed by ${a.origin}${a.match ? `, match ${a.match}` : ''}`);
  if (v.via) lines.push(`  via ${v.via}`);
  if (v.reason) lines.push(`  ${v.verdict === 'DENIED' ? 'denied: ' : ''}${v.reason}`);
  for (const n of v.notes) lines.push(`  note: ${n}`);
  for (const p of v.problems) lines.push(`  problem: ${p}`);
  return `${lines.join('\n')}\n`;
}
