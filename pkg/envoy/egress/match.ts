// Which part of an egress plan (plan.ts) takes one connection, and what it
// does with it: the answer Envoy gives with the chains egress.ts builds from
// that plan, for `skein policy check --to`. Envoy picks a filter chain
// criterion by criterion — destination port, destination IP, server name,
// transport protocol, application protocol — keeping at each step only the
// most specific matches, and never backtracks (FilterChainMatch,
// listener_components.proto); what matches no chain gets the default chain.
import { type IpRange, ipInRange } from '../../catalog/egress.js';
import { type HttpRequest, httpMatchAdmits } from '../../catalog/http-match.js';
import type { HTTPMatch } from '../../model/objects.js';
import type { EgressHttpHost, EgressHttpPort, EgressPlan, EgressTcpPort, EgressTlsChain } from './plan.js';

/** One connection from the source's app to a destination outside the mesh. */
export interface EgressDestination {
  /** What the client sends first: an HTTP request, a TLS ClientHello, or other bytes. */
  protocol: 'http' | 'tls' | 'tcp';
  port: number;
  /** The address dialled, when known (an IP literal, or what the name resolves to). */
  address?: string;
  /** http: the Host header's host; tls: the SNI (none for an IP literal, RFC 6066 §3). Lower case. */
  host?: string;
  /** http only. */
  request?: HttpRequest;
}

export type EgressMatch =
  | { result: 'passthrough' }
  | { result: 'http'; port: EgressHttpPort; host: EgressHttpHost; match: HTTPMatch | 'all' }
  | { result: 'tls'; chain: EgressTlsChain }
  | { result: 'tcp'; chain: EgressTcpPort }
  /** No egress chain on the port: the outbound listener's own denial (403 for HTTP, else closed). */
  | { result: 'no-port' }
  /** The port's egress chains are for another protocol (`http`, `https` or `tcp`). */
  | { result: 'protocol'; portKind: 'http' | 'https' | 'tcp'; origins: readonly string[] }
  /** The port's chains are for other addresses (`addressKnown` false: assumed outside them). */
  | { result: 'address'; ranges: readonly IpRange[]; origins: readonly string[]; addressKnown: boolean }
  /** TLS whose SNI (or its absence) no chain of the selected address set lists. */
  | { result: 'sni'; serverNames: readonly string[]; origins: readonly string[] }
  /** HTTP whose Host the port's RBAC does not list (403). */
  | { result: 'host'; port: EgressHttpPort }
  /** HTTP to an allowed host that no route of its HTTPRouteGroups matches (403). */
  | { result: 'route'; port: EgressHttpPort; host: EgressHttpHost };

/**
 * The most specific prefix among `ranges` containing the address (Envoy: longest
 * prefix), -1 when none does, or `undefined` for an unknown address.
 */
function longestPrefix(ranges: readonly IpRange[], address: string | undefined): number {
  if (address === undefined) return -1;
  let best = -1;
  for (const r of ranges) if (r.prefixLen > best && ipInRange(address, r)) best = r.prefixLen;
  return best;
}

/**
 * Envoy's IP step for items with optional ranges: those whose range is the
 * longest containing the address, else those without ranges. An unknown
 * address is taken as outside every range (the caller says so).
 */
function byAddress<T extends { ipRanges: readonly IpRange[] }>(items: readonly T[], address?: string): T[] {
  let best = -1;
  for (const it of items) best = Math.max(best, longestPrefix(it.ipRanges, address));
  if (best >= 0) return items.filter((it) => longestPrefix(it.ipRanges, address) === best);
  return items.filter((it) => it.ipRanges.length === 0);
}

/**
 * Envoy's server-name step: exact names first, then wildcards from the most
 * specific (`www.example.com` tries `*.example.com`, then `*.com`), then chains
 * without names. No SNI: only chains without names.
 */
function byServerName(chains: readonly EgressTlsChain[], sni: string | undefined): EgressTlsChain[] {
  if (sni !== undefined) {
    const candidates = [sni];
    const labels = sni.split('.');
    for (let i = 1; i < labels.length; i++) candidates.push(`*.${labels.slice(i).join('.')}`);
    for (const name of candidates) {
      const hit = chains.filter((c) => c.serverNames.includes(name));
      if (hit.length > 0) return hit;
    }
  }
  return chains.filter((c) => c.serverNames.length === 0);
}

/**
 * Envoy's virtual host choice (exact domain, then the longest `*.` suffix) —
 * the same test the host RBAC makes: exact or suffix, any case.
 */
function hostOf(port: EgressHttpPort, host: string | undefined): EgressHttpHost | undefined {
  if (host === undefined) return undefined;
  const exact = port.hosts.find((h) => h.host === host);
  if (exact) return exact;
  const wild = port.hosts
    .filter((h) => h.host.startsWith('*.') && host.endsWith(h.host.slice(1)))
    .sort((a, b) => b.host.length - a.host.length);
  return wild[0];
}

function httpAnswer(port: EgressHttpPort, dest: EgressDestination): EgressMatch {
  const host = hostOf(port, dest.host);
  if (!host) return { result: 'host', port };
  if (host.http === 'all') return { result: 'http', port, host, match: 'all' };
  // Routes in order; the last one answers 403 (egress.ts egressRouteConfig).
  const req = dest.request ?? { path: '/', method: 'GET', headers: {} };
  const match = host.http.find((m) => httpMatchAdmits(m, req));
  return match ? { result: 'http', port, host, match } : { result: 'route', port, host };
}

/** What the source's sidecar does with a connection to a destination outside the mesh. */
export function matchEgress(plan: EgressPlan, dest: EgressDestination): EgressMatch {
  if (plan.passthrough) return { result: 'passthrough' };
  const known = dest.address !== undefined;
  const http = plan.http.find((p) => p.port === dest.port);
  if (http) {
    const origins = [...new Set(http.hosts.flatMap((h) => h.origins))];
    // The chain matches HTTP clients only (http_inspector's application protocols).
    if (dest.protocol !== 'http') return { result: 'protocol', portKind: 'http', origins };
    if (byAddress([http], dest.address).length === 0)
      return { result: 'address', ranges: http.ipRanges, origins, addressKnown: known };
    return httpAnswer(http, dest);
  }
  const tls = plan.tls.filter((t) => t.port === dest.port);
  if (tls.length > 0) {
    const origins = [...new Set(tls.flatMap((t) => t.origins))];
    // Only TLS reaches these chains; the rest gets the port's egress_denied chain.
    if (dest.protocol !== 'tls') return { result: 'protocol', portKind: 'https', origins };
    const atAddress = byAddress(tls, dest.address);
    if (atAddress.length === 0)
      return {
        result: 'address',
        ranges: tls.flatMap((t) => t.ipRanges),
        origins,
        addressKnown: known,
      };
    const [chain] = byServerName(atAddress, dest.host);
    if (chain) return { result: 'tls', chain };
    return {
      result: 'sni',
      serverNames: [...new Set(atAddress.flatMap((t) => t.serverNames))].sort(),
      origins: [...new Set(atAddress.flatMap((t) => t.origins))],
    };
  }
  const tcp = plan.tcp.find((t) => t.port === dest.port);
  if (tcp) {
    // No inspector runs on a tcp egress port: whatever the client speaks, the address decides.
    if (byAddress([tcp], dest.address).length === 0)
      return { result: 'address', ranges: tcp.ipRanges, origins: tcp.origins, addressKnown: known };
    return { result: 'tcp', chain: tcp };
  }
  return { result: 'no-port' };
}
