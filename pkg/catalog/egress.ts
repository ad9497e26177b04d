// Egress policy (policy.skein.dev/v1alpha1 Egress, OSM's Egress field for
// field): which destinations outside the mesh each source identity may reach,
// resolved per identity with per-port conflicts settled and reported here, so
// the generators only turn the result into Envoy messages.
import { type Identity, identityKey } from '../mesh/identity.js';
import type { Egress, EgressProtocol, HTTPMatch, HTTPRouteGroup } from '../model/objects.js';
import { compareStrings } from './pods.js';
import { type PolicyProblem, ProblemList } from './problems.js';

/** A CIDR, normalised (`10.0.0.0/8`). */
export interface IpRange {
  address: string;
  prefixLen: number;
}

/** One port of one Egress, as it applies to every source of that Egress. */
export interface EgressRule {
  /** `Egress <ns>/<name>` */
  origin: string;
  port: number;
  protocol: EgressProtocol;
  /** Lower-cased host names (`*.example.com` allowed); empty = any. */
  hosts: readonly string[];
  /** Empty = any destination IP. */
  ipRanges: readonly IpRange[];
  /** http ports: the HTTPRouteGroup matches allowed, or 'all' (no `matches`). */
  http: readonly HTTPMatch[] | 'all';
}

export interface CompiledEgress {
  origin: string;
  sources: readonly Identity[];
  rules: readonly EgressRule[];
}

/** How a port's traffic is told apart (one kind per port and source; protocols of one kind mix). */
function portKind(p: EgressProtocol): 'http' | 'https' | 'tcp' {
  return p === 'tcp-server-first' ? 'tcp' : p;
}

/** Parses a CIDR or a bare address; undefined when it is neither (the registry rejects those). */
export function parseIpRange(text: string): IpRange | undefined {
  const slash = text.indexOf('/');
  const address = slash < 0 ? text : text.slice(0, slash);
  const v6 = address.includes(':');
  const max = v6 ? 128 : 32;
  const lenText = slash < 0 ? String(max) : text.slice(slash + 1);
  if (!/^[0-9]{1,3}$/.test(lenText) || Number(lenText) > max) return undefined;
  if (!v6 && !/^(25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])){3}$/.test(address))
    return undefined;
  if (v6 && !/^[0-9a-fA-F:.]+$/.test(address)) return undefined;
  return { address: address.toLowerCase(), prefixLen: Number(lenText) };
}

/** An address as bits (IPv4 in 32, IPv6 in 128), or undefined when it is not one. */
function addressBits(address: string): { v6: boolean; bits: bigint } | undefined {
  if (!address.includes(':')) {
    const r = parseIpRange(address);
    if (!r) return undefined;
    return { v6: false, bits: r.address.split('.').reduce((a, o) => (a << 8n) | BigInt(o), 0n) };
  }
  // `::` stands for as many zero groups as are missing; a dotted IPv4 tail is two groups.
  let text = address.toLowerCase();
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4?.[1]) {
    const tail = addressBits(v4[1]);
    if (!tail) return undefined;
    text = `${text.slice(0, v4.index)}${(tail.bits >> 16n).toString(16)}:${(tail.bits & 0xffffn).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const groups = (s: string | undefined) => (s ? s.split(':') : []);
  const head = groups(halves[0]);
  const tail = groups(halves[1]);
  const fill = 8 - head.length - tail.length;
  if (halves.length === 1 ? fill !== 0 : fill < 1) return undefined;
  const all = [...head, ...Array<string>(Math.max(fill, 0)).fill('0'), ...tail];
  if (!all.every((g) => /^[0-9a-f]{1,4}$/.test(g))) return undefined;
  return { v6: true, bits: all.reduce((a, g) => (a << 16n) | BigInt(`0x${g}`), 0n) };
}

/** Whether an address lies in a range (Envoy's CidrRange semantics: the first prefixLen bits agree). */
export function ipInRange(address: string, range: IpRange): boolean {
  const a = addressBits(address);
  const r = addressBits(range.address);
  if (!a || !r || a.v6 !== r.v6) return false;
  const width = a.v6 ? 128n : 32n;
  const drop = width - BigInt(range.prefixLen);
  return a.bits >> drop === r.bits >> drop;
}

/** A bare IP address (no prefix length). */
export function isIpAddress(text: string): boolean {
  return !text.includes('/') && parseIpRange(text) !== undefined;
}

// RFC 1123 labels; a leading `*.` is Envoy's suffix wildcard (virtual host
// domains and server_names both accept it).
const HOST = /^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Reasons an Egress cannot be used (semantic checks beyond its CRD schema). */
export function egressProblems(e: Egress): string[] {
  const out: string[] = [];
  (e.spec.hosts ?? []).forEach((h, i) => {
    if (!HOST.test(h.toLowerCase())) out.push(`spec.hosts[${i}]: ${JSON.stringify(h)} is not a host name`);
  });
  (e.spec.ipAddresses ?? []).forEach((a, i) => {
    if (!parseIpRange(a))
      out.push(`spec.ipAddresses[${i}]: ${JSON.stringify(a)} is not an IP address or CIDR`);
  });
  const seen = new Set<number>();
  e.spec.ports.forEach((p, i) => {
    if (seen.has(p.number)) out.push(`spec.ports[${i}]: port ${p.number} is listed twice`);
    seen.add(p.number);
    // OSM: an http Egress routes by Host header, so it needs the hosts it allows.
    if (p.protocol === 'http' && (e.spec.hosts ?? []).length === 0)
      out.push(`spec.ports[${i}]: an http port needs spec.hosts (requests are routed by Host header)`);
  });
  return out;
}

/**
 * Compiles Egress objects (already schema- and semantically valid, in mesh
 * namespaces). HTTPRouteGroup refs are looked up in the Egress's namespace; a
 * missing group or one naming nothing makes the http rules allow no request
 * (never more than asked), and is reported.
 */
export function compileEgresses(
  egresses: readonly Egress[],
  routeGroup: (namespace: string, name: string) => HTTPRouteGroup | undefined,
  problems: ProblemList,
): CompiledEgress[] {
  const out: CompiledEgress[] = [];
  for (const e of egresses) {
    const ns = e.metadata.namespace ?? '';
    const origin = `Egress ${ns}/${e.metadata.name}`;
    const report = (reason: string) =>
      problems.add({ kind: 'Egress', namespace: ns, name: e.metadata.name, reason });
    let http: HTTPMatch[] | 'all' = 'all';
    if (e.spec.matches !== undefined) {
      http = [];
      for (const m of e.spec.matches) {
        const group = routeGroup(ns, m.name);
        if (!group) report(`HTTPRouteGroup ${ns}/${m.name} does not exist; its matches allow nothing`);
        else for (const match of group.spec?.matches ?? []) if (!http.includes(match)) http.push(match);
      }
    }
    const hosts = [...new Set((e.spec.hosts ?? []).map((h) => h.toLowerCase()))].sort(compareStrings);
    const ipRanges = (e.spec.ipAddresses ?? [])
      .map(parseIpRange)
      .filter((r): r is IpRange => r !== undefined);
    const rules = e.spec.ports.map((p) => ({
      origin,
      port: p.number,
      protocol: p.protocol,
      hosts: p.protocol === 'tcp' || p.protocol === 'tcp-server-first' ? [] : hosts,
      ipRanges,
      http: p.protocol === 'http' ? http : 'all',
    }));
    if ((e.spec.matches ?? []).length > 0 && !rules.some((r) => r.protocol === 'http'))
      report('spec.matches apply to http ports only; this Egress has none');
    const sources = new Map<string, Identity>();
    for (const s of e.spec.sources) {
      const id = { namespace: s.namespace, serviceAccount: s.name };
      sources.set(identityKey(id), id);
    }
    out.push({
      origin,
      sources: [...sources.entries()].sort(([a], [b]) => compareStrings(a, b)).map(([, id]) => id),
      rules,
    });
  }
  return out.sort((a, b) => compareStrings(a.origin, b.origin));
}

/**
 * The rules each source identity gets, by identity key, sorted by port then
 * origin. One port carries one kind of traffic per source (Envoy tells HTTP
 * by Host, TLS by SNI and TCP by address apart on different filter chains,
 * but one destination port can only be inspected one way): the first Egress
 * by name fixes a port's kind, a rule of another kind on it is dropped and
 * reported, the rest of the mesh unaffected.
 */
export function egressBySource(
  compiled: readonly CompiledEgress[],
  problems: ProblemList,
): Map<string, EgressRule[]> {
  const bySource = new Map<string, EgressRule[]>();
  for (const c of compiled) {
    for (const id of c.sources) {
      const k = identityKey(id);
      const list = bySource.get(k);
      if (list) list.push(...c.rules);
      else bySource.set(k, [...c.rules]);
    }
  }
  for (const [k, rules] of bySource) {
    const kinds = new Map<number, EgressRule>();
    const kept = rules.filter((r) => {
      const first = kinds.get(r.port);
      if (!first) {
        kinds.set(r.port, r);
        return true;
      }
      if (portKind(first.protocol) === portKind(r.protocol)) return true;
      const [ns, name] = r.origin.slice('Egress '.length).split('/');
      problems.add({
        kind: 'Egress',
        namespace: ns,
        name: name ?? '',
        reason: `port ${r.port} is ${first.protocol} for ${k} in ${first.origin}; this ${r.protocol} rule is ignored for it`,
      });
      return false;
    });
    kept.sort((a, b) => a.port - b.port || compareStrings(a.origin, b.origin));
    bySource.set(k, kept);
  }
  return bySource;
}

/** The Egress policy of one view: rules by source identity, and what compiling them read and reported. */
export interface EgressPolicy {
  /** The Egress objects compiled (the store's objects, in its order). */
  readonly egresses: readonly Egress[];
  /** Every HTTPRouteGroup lookup made, by `<ns>/<name>`, with what it found. */
  readonly groups: ReadonlyMap<string, HTTPRouteGroup | undefined>;
  readonly bySource: ReadonlyMap<string, readonly EgressRule[]>;
  readonly problems: readonly PolicyProblem[];
}

const NO_POLICY: EgressPolicy = Object.freeze({
  egresses: [],
  groups: new Map(),
  bySource: new Map(),
  problems: [],
});

function sameInputs(
  p: EgressPolicy,
  egresses: readonly Egress[],
  routeGroup: (namespace: string, name: string) => HTTPRouteGroup | undefined,
): boolean {
  if (p.egresses.length !== egresses.length) return false;
  for (let i = 0; i < egresses.length; i++) if (p.egresses[i] !== egresses[i]) return false;
  for (const [key, group] of p.groups) {
    const slash = key.indexOf('/');
    if (routeGroup(key.slice(0, slash), key.slice(slash + 1)) !== group) return false;
  }
  return true;
}

/**
 * compileEgresses + egressBySource, or `previous` itself when it was compiled
 * from the very same Egress objects and its HTTPRouteGroup lookups find the
 * same objects (the store replaces an object when it changes, never mutates
 * it): a view without Egress changes compiles nothing and hands out the same
 * rule arrays, so the plans keyed on them (envoy/egress/plan.ts) are not
 * rebuilt either.
 */
export function egressPolicy(
  egresses: readonly Egress[],
  routeGroup: (namespace: string, name: string) => HTTPRouteGroup | undefined,
  previous: EgressPolicy | undefined,
): EgressPolicy {
  if (egresses.length === 0) return NO_POLICY;
  if (previous && sameInputs(previous, egresses, routeGroup)) return previous;
  const groups = new Map<string, HTTPRouteGroup | undefined>();
  const problems = new ProblemList();
  const compiled = compileEgresses(
    egresses,
    (ns, name) => {
      const group = routeGroup(ns, name);
      groups.set(`${ns}/${name}`, group);
      return group;
    },
    problems,
  );
  const bySource = egressBySource(compiled, problems);
  return { egresses, groups, bySource, problems: Object.freeze(problems.items) };
}
