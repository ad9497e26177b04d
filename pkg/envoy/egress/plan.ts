// What one source identity's Egress rules (catalog/egress.ts) become on its
// sidecar, grouped the way Envoy matches them: HTTP per destination port (by
// Host header), TLS per port and address set (by SNI), TCP per port (by
// address). A derived answer of the view, interned on its content, so every
// identity with the same rules shares one plan object and, keyed on it, the
// same listener, route and cluster messages.
import { derive } from '../../catalog/derive.js';
import type { EgressRule, IpRange } from '../../catalog/egress.js';
import type { MeshView } from '../../catalog/types.js';
import { anyEgress, egressEnabled, egressRulesOf } from '../../catalog/view.js';
import { type Identity, identityKey } from '../../mesh/identity.js';
import type { HTTPMatch } from '../../model/objects.js';
import { PASSTHROUGH_CLUSTER } from '../names.js';

export interface EgressHttpHost {
  host: string;
  /** `<host>:<port>` (STRICT_DNS), or the ORIGINAL_DST passthrough for a wildcard host. */
  cluster: string;
  http: readonly HTTPMatch[] | 'all';
  origins: readonly string[];
}
export interface EgressHttpPort {
  port: number;
  /** Empty: any destination address. */
  ipRanges: readonly IpRange[];
  hosts: readonly EgressHttpHost[];
}
export interface EgressTlsChain {
  port: number;
  ipRanges: readonly IpRange[];
  /** Empty: any SNI (an https Egress without hosts). */
  serverNames: readonly string[];
  origins: readonly string[];
}
export interface EgressTcpPort {
  port: number;
  ipRanges: readonly IpRange[];
  /** tcp-server-first: no listener filter may wait for the client's first bytes on this port. */
  serverFirst: boolean;
  origins: readonly string[];
}
/** A STRICT_DNS cluster for one allowed HTTP host and port. */
export interface EgressDnsCluster {
  name: string;
  host: string;
  port: number;
}

export interface EgressPlan {
  /** MeshConfig enableEgress: everything outside the mesh passes through (the rules are moot). */
  passthrough: boolean;
  http: readonly EgressHttpPort[];
  tls: readonly EgressTlsChain[];
  tcp: readonly EgressTcpPort[];
  clusters: readonly EgressDnsCluster[];
  /** Whether any chain sends to the ORIGINAL_DST passthrough cluster. */
  originalDst: boolean;
}

export function egressClusterName(host: string, port: number): string {
  // OSM's name for the same cluster.
  return `${host}:${port}`;
}

function rangeKey(ranges: readonly IpRange[]): string {
  return ranges.map((r) => `${r.address}/${r.prefixLen}`).join(',');
}

/** Union of address sets where empty means "any": any absorbs the rest. */
function unionRanges(sets: readonly (readonly IpRange[])[]): IpRange[] {
  if (sets.some((s) => s.length === 0)) return [];
  const byKey = new Map<string, IpRange>();
  for (const s of sets) for (const r of s) byKey.set(`${r.address}/${r.prefixLen}`, r);
  return [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, r]) => r);
}

function mergeMatches(
  a: readonly HTTPMatch[] | 'all',
  b: readonly HTTPMatch[] | 'all',
): readonly HTTPMatch[] | 'all' {
  if (a === 'all' || b === 'all') return 'all';
  return [...a, ...b.filter((m) => !a.includes(m))];
}

/** The plan of a rule list (sorted by port, one kind per port: catalog/egress.ts). */
export function planOfRules(rules: readonly EgressRule[], passthrough: boolean): EgressPlan {
  const byPort = new Map<number, EgressRule[]>();
  for (const r of rules) {
    const list = byPort.get(r.port);
    if (list) list.push(r);
    else byPort.set(r.port, [r]);
  }
  const http: EgressHttpPort[] = [];
  const tls: EgressTlsChain[] = [];
  const tcp: EgressTcpPort[] = [];
  const clusters = new Map<string, EgressDnsCluster>();
  let originalDst = false;
  for (const [port, list] of [...byPort].sort(([a], [b]) => a - b)) {
    const origins = [...new Set(list.map((r) => r.origin))];
    const kind = list[0]?.protocol;
    if (kind === 'http') {
      const hosts = new Map<string, EgressHttpHost>();
      for (const r of list) {
        for (const host of r.hosts) {
          const known = hosts.get(host);
          if (known) {
            hosts.set(host, {
              ...known,
              http: mergeMatches(known.http, r.http),
              origins: [...new Set([...known.origins, r.origin])],
            });
            continue;
          }
          // A wildcard names no host to resolve: the app's own connection
          // (its DNS answer) says where to go, as for TLS and TCP.
          const wildcard = host.startsWith('*.');
          const cluster = wildcard ? PASSTHROUGH_CLUSTER : egressClusterName(host, port);
          if (wildcard) originalDst = true;
          else clusters.set(cluster, { name: cluster, host, port });
          hosts.set(host, { host, cluster, http: r.http, origins: [r.origin] });
        }
      }
      http.push({
        port,
        ipRanges: unionRanges(list.map((r) => r.ipRanges)),
        hosts: [...hosts.values()].sort((a, b) => (a.host < b.host ? -1 : 1)),
      });
    } else if (kind === 'https') {
      // One chain per address set; SNI lists of one set merge.
      const groups = new Map<string, EgressRule[]>();
      for (const r of list) {
        const k = rangeKey(r.ipRanges);
        const g = groups.get(k);
        if (g) g.push(r);
        else groups.set(k, [r]);
      }
      for (const k of [...groups.keys()].sort()) {
        const g = groups.get(k) ?? [];
        const anySni = g.some((r) => r.hosts.length === 0);
        tls.push({
          port,
          ipRanges: g[0]?.ipRanges ?? [],
          serverNames: anySni ? [] : [...new Set(g.flatMap((r) => r.hosts))].sort(),
          origins: [...new Set(g.map((r) => r.origin))],
        });
      }
      originalDst = true;
    } else {
      tcp.push({
        port,
        ipRanges: unionRanges(list.map((r) => r.ipRanges)),
        serverFirst: list.some((r) => r.protocol === 'tcp-server-first'),
        origins,
      });
      originalDst = true;
    }
  }
  return {
    passthrough,
    http,
    tls,
    tcp,
    clusters: [...clusters.values()].sort((a, b) => (a.name < b.name ? -1 : 1)),
    originalDst,
  };
}

// Plans interned on their content: equal plans are one object, across
// identities and across views. Bounded: an evicted plan is only rebuilt.
const interned = new Map<string, EgressPlan>();
const MAX_INTERNED = 4096;

function intern(plan: EgressPlan): EgressPlan {
  const key = JSON.stringify(plan);
  const known = interned.get(key);
  if (known) return known;
  if (interned.size >= MAX_INTERNED) interned.clear();
  interned.set(key, plan);
  return plan;
}

export const NO_EGRESS: EgressPlan = Object.freeze(planOfRules([], false));
/** enableEgress without Egress rules: the same plan object for every identity. */
const PASSTHROUGH_ONLY: EgressPlan = Object.freeze(planOfRules([], true));

// Plans by rule list: a view hands out the same rule array while the Egress
// policy is unchanged (catalog/egress.ts egressPolicy), so a new view costs
// one lookup per identity, not a plan and its JSON key.
const byRules = new WeakMap<readonly EgressRule[], { off?: EgressPlan; on?: EgressPlan }>();

function planOfList(rules: readonly EgressRule[], passthrough: boolean): EgressPlan {
  // Most meshes have no Egress at all: no plan to build, no content to key.
  if (rules.length === 0) return passthrough ? PASSTHROUGH_ONLY : NO_EGRESS;
  let plans = byRules.get(rules);
  if (!plans) {
    plans = {};
    byRules.set(rules, plans);
  }
  const known = passthrough ? plans.on : plans.off;
  if (known) return known;
  const plan = intern(planOfRules(rules, passthrough));
  if (passthrough) plans.on = plan;
  else plans.off = plan;
  return plan;
}

/**
 * The egress plan of a source identity: without any Egress in the mesh one
 * derived question for the whole mesh (its answer changes with the first
 * Egress or enableEgress), otherwise one per identity (dependency tracking).
 */
export function egressPlan(mesh: MeshView, source: Identity): EgressPlan {
  const shared = derive(mesh, 'egressPlan\0*', (view) =>
    anyEgress(view) ? undefined : egressEnabled(view) ? PASSTHROUGH_ONLY : NO_EGRESS,
  );
  if (shared) return shared;
  const id = { namespace: source.namespace, serviceAccount: source.serviceAccount };
  return derive(mesh, `egressPlan\0${identityKey(id)}`, (view) =>
    planOfList(egressRulesOf(view, id), egressEnabled(view)),
  );
}
