// Envoy messages of an egress plan (plan.ts), for the sidecar's outbound
// listener 15001 (lds/sidecar.ts), RDS and CDS. Pure functions of the plan.
//
// - http:   a filter chain on the destination port (+ addresses) and the
//           http_inspector's protocols; an RBAC filter lets only the allowed
//           Host headers through (the rest: 403, `http.egress_<port>.rbac.egress.denied`),
//           routes by Host to a STRICT_DNS cluster per host:port, so a request
//           goes to the host it names, whatever address the app dialled. The
//           allowed hosts are on the route config (RDS), the RBAC policy on each
//           host's virtual host: an Egress change reaches the app's open
//           connections (rbac/rbac.ts, INBOUND_HTTP_RBAC_FILTER, says why).
// - https:  a chain on port + SNI (tls_inspector) (+ addresses) → tcp_proxy to
//           ORIGINAL_DST (no TLS origination: the app's own TLS to the host).
// - tcp:    a chain on port + addresses → tcp_proxy to ORIGINAL_DST.
// - tcp-server-first: the same, with both inspectors off on that port.
// On a port with egress chains, what they do not match gets an `egress_denied`
// chain (tcp_proxy to the endpoint-less blackhole cluster: closed).
import type { IpRange } from '../../catalog/egress.js';
import type { HTTPMatch } from '../../model/objects.js';
import type {
  CidrRange,
  Cluster,
  EnvoyTypeMatcher$StringMatcher,
  FilterChain,
  FilterChainMatch,
  HeaderMatcher,
  Listener$Filter,
  ListenerFilter,
  LocalReplyConfig,
  Policy,
  RouteConfiguration,
  RouteMatch,
  TypedAny,
} from '../api/envoy.js';
import { DiscoveryType, RbacAction } from '../common/enums.js';
import { localReplyBody } from '../common/local-reply.js';
import { AnyType, adsConfigSource, durationSeconds, ExtName, socketAddress, typed } from '../common/xds.js';
import { BLACKHOLE_CLUSTER, PASSTHROUGH_CLUSTER } from '../names.js';
import {
  denyAllRbacFilter,
  EVERY_PEER,
  headerRegexToSafeRegex,
  pathRegexToSafeRegex,
  rbacPerRoute,
} from '../rbac/rbac.js';
import type { EgressDnsCluster, EgressHttpPort, EgressPlan } from './plan.js';

/** Stat prefix and chain name of what an egress port refuses. */
export const EGRESS_DENIED = 'egress_denied';

export function egressRouteConfigName(port: number): string {
  return `rds-egress.${port}`;
}

// http_inspector's results (application_protocols on the socket).
const HTTP_PROTOCOLS = ['http/1.0', 'http/1.1', 'h2c'];

// External hosts are farther away than mesh pods (1 s there, cds/sidecar.ts).
const CONNECT_TIMEOUT_S = 5;

function prefixRanges(ranges: readonly IpRange[]): CidrRange[] {
  return ranges.map((r) => ({ address_prefix: r.address, prefix_len: { value: r.prefixLen } }));
}

function tcpProxy(statPrefix: string, cluster: string): Listener$Filter {
  return {
    name: ExtName.TcpProxy,
    typed_config: typed(AnyType.TcpProxy, { stat_prefix: statPrefix, cluster }),
  };
}

function deniedChain(name: string, match: FilterChainMatch): FilterChain {
  return { name, filter_chain_match: match, filters: [tcpProxy(EGRESS_DENIED, BLACKHOLE_CLUSTER)] };
}

/** `:authority` values allowed for a host (RFC 9110 §7.2: the port may follow). */
function authorityMatchers(host: string, port: number): EnvoyTypeMatcher$StringMatcher[] {
  if (host.startsWith('*.')) {
    const suffix = host.slice(1);
    return [
      { suffix, ignore_case: true },
      { suffix: `${suffix}:${port}`, ignore_case: true },
    ];
  }
  return [
    { exact: host, ignore_case: true },
    { exact: `${host}:${port}`, ignore_case: true },
  ];
}

// Envoy appends a dot: http.egress_<port>.rbac.egress.allowed / .denied
const EGRESS_RULES_STAT_PREFIX = 'egress';

/**
 * The egress HCM's RBAC filter denies every request by itself, so a Host that
 * no virtual host of the route config names gets the 403; each allowed host's
 * virtual host overrides it (hostRbacPerRoute).
 */
const EGRESS_RBAC_FILTER = denyAllRbacFilter(EGRESS_RULES_STAT_PREFIX);

/** A virtual host's RBAC: ALLOW its own host's `:authority` values, nothing else. */
function hostRbacPerRoute(
  host: string,
  port: number,
): Record<string, TypedAny<typeof AnyType.HttpRbacPerRoute>> {
  const permissions = authorityMatchers(host, port).map((m) => ({
    header: { name: ':authority', string_match: m },
  }));
  const policies: { [name: string]: Policy } = {
    'egress-hosts': {
      permissions: [{ or_rules: { rules: permissions } }],
      // The chain is this proxy's own outbound traffic, so who calls is settled; only the host is checked.
      principals: [EVERY_PEER],
    },
  };
  return rbacPerRoute({ action: RbacAction.ALLOW, policies }, EGRESS_RULES_STAT_PREFIX);
}

function deniedReply(port: number): LocalReplyConfig {
  return localReplyBody(
    403,
    `skein: egress to %REQ(:authority)% on port ${port} is not allowed for this proxy` +
      ' (SMI mode: no Egress lets its identity reach this host and path; %RESPONSE_CODE_DETAILS%)\n',
  );
}

function httpChain(p: EgressHttpPort): FilterChain {
  const match: FilterChainMatch = {
    destination_port: { value: p.port },
    application_protocols: HTTP_PROTOCOLS,
  };
  if (p.ipRanges.length > 0) match.prefix_ranges = prefixRanges(p.ipRanges);
  const name = `egress_http_${p.port}`;
  const hcm = typed(AnyType.HttpConnectionManager, {
    stat_prefix: `egress_${p.port}`,
    rds: { route_config_name: egressRouteConfigName(p.port), config_source: adsConfigSource() },
    // The router must be the last HTTP filter.
    http_filters: [EGRESS_RBAC_FILTER, { name: ExtName.Router, typed_config: typed(AnyType.Router) }],
    local_reply_config: deniedReply(p.port),
  });
  return {
    name,
    filter_chain_match: match,
    filters: [{ name: ExtName.HttpConnectionManager, typed_config: hcm }],
  };
}

/** What the egress plan adds to the outbound listener (SMI mode, no enableEgress). */
export interface EgressListenerPart {
  chains: FilterChain[];
  /** Ports whose port-only HTTP denial an egress chain replaces (identical matches are rejected). */
  httpPortsTaken: ReadonlySet<number>;
  /** Ports where no inspector may run (tcp and tcp-server-first egress). */
  inspectorOffPorts: readonly number[];
  /** Ports where tls_inspector must run (https egress). */
  tlsPorts: readonly number[];
}

/**
 * The outbound chains of a plan. `portOnlyTaken`: ports where a headless mesh
 * service already has a port-only chain (Envoy rejects two equal matches, and
 * the mesh destination keeps its chain).
 */
export function egressListenerPart(plan: EgressPlan, portOnlyTaken: ReadonlySet<number>): EgressListenerPart {
  const chains: FilterChain[] = [];
  const httpPortsTaken = new Set<number>();
  const inspectorOff: number[] = [];
  const tlsPorts = new Set<number>();
  for (const p of plan.http) {
    chains.push(httpChain(p));
    if (p.ipRanges.length === 0) httpPortsTaken.add(p.port);
  }
  plan.tls.forEach((t, i) => {
    const match: FilterChainMatch = { destination_port: { value: t.port }, transport_protocol: 'tls' };
    if (t.ipRanges.length > 0) match.prefix_ranges = prefixRanges(t.ipRanges);
    if (t.serverNames.length > 0) match.server_names = [...t.serverNames];
    chains.push({
      name: `egress_https_${t.port}_${i}`,
      filter_chain_match: match,
      filters: [tcpProxy(`egress_https_${t.port}`, PASSTHROUGH_CLUSTER)],
    });
    tlsPorts.add(t.port);
  });
  for (const port of tlsPorts) {
    // TLS with another SNI, or not TLS at all, on an https egress port.
    chains.push(deniedChain(`${EGRESS_DENIED}_https_${port}`, { destination_port: { value: port } }));
  }
  for (const t of plan.tcp) {
    inspectorOff.push(t.port);
    const match: FilterChainMatch = { destination_port: { value: t.port } };
    if (t.ipRanges.length === 0) {
      if (portOnlyTaken.has(t.port)) continue;
    } else {
      match.prefix_ranges = prefixRanges(t.ipRanges);
      if (!portOnlyTaken.has(t.port))
        chains.push(deniedChain(`${EGRESS_DENIED}_tcp_${t.port}`, { destination_port: { value: t.port } }));
    }
    chains.push({
      name: `egress_tcp_${t.port}`,
      filter_chain_match: match,
      filters: [tcpProxy(`egress_tcp_${t.port}`, PASSTHROUGH_CLUSTER)],
    });
  }
  return {
    chains,
    httpPortsTaken,
    inspectorOffPorts: inspectorOff,
    tlsPorts: [...tlsPorts].sort((a, b) => a - b),
  };
}

/**
 * tls_inspector, run only on the https egress ports: elsewhere it would hold
 * server-first protocols until the listener-filter timeout like http_inspector
 * (ListenerFilter.filter_disabled, a ListenerFilterChainMatchPredicate).
 */
export function egressTlsInspector(ports: readonly number[]): ListenerFilter {
  const rules = ports.map((p) => ({ destination_port_range: { start: p, end: p + 1 } }));
  // MatchSet needs at least two rules (PGV min_items 2).
  const on = rules.length === 1 && rules[0] ? rules[0] : { or_match: { rules } };
  return {
    name: ExtName.TlsInspector,
    typed_config: typed(AnyType.TlsInspector),
    filter_disabled: { not_match: on },
  };
}

// ---- RDS ----------------------------------------------------------------------

function routeMatch(m: HTTPMatch): RouteMatch {
  const match: RouteMatch = {};
  if (m.pathRegex !== undefined && m.pathRegex !== '' && m.pathRegex !== '.*')
    match.safe_regex = { regex: pathRegexToSafeRegex(m.pathRegex) };
  else match.prefix = '/';
  const headers: HeaderMatcher[] = [];
  const methods = (m.methods ?? []).filter((x) => x !== '*');
  if (methods.length > 0 && !(m.methods ?? []).includes('*'))
    headers.push({
      name: ':method',
      string_match: { safe_regex: { regex: `(?:${methods.map((x) => x.toUpperCase()).join('|')})` } },
    });
  for (const name of Object.keys(m.headers ?? {}).sort())
    headers.push({
      name: name.toLowerCase(),
      string_match: { safe_regex: { regex: headerRegexToSafeRegex(m.headers?.[name] ?? '') } },
    });
  if (headers.length > 0) match.headers = headers;
  return match;
}

/**
 * `rds-egress.<port>`: a virtual host per allowed host (`host`, `host:port`), routes from its
 * HTTPRouteGroups, and the RBAC that admits that host (the filter's own config denies all).
 */
export function egressRouteConfig(p: EgressHttpPort): RouteConfiguration {
  return {
    name: egressRouteConfigName(p.port),
    virtual_hosts: p.hosts.map((h) => {
      const to = { route: { cluster: h.cluster } };
      const routes =
        h.http === 'all'
          ? [{ match: { prefix: '/' }, ...to }]
          : [
              ...h.http.map((m) => ({ match: routeMatch(m), ...to })),
              // A request no HTTPRouteGroup match allows: 403 (the local reply says why), not 404.
              { match: { prefix: '/' }, direct_response: { status: 403 } },
            ];
      return {
        name: `egress|${h.host}:${p.port}`,
        domains: [h.host, `${h.host}:${p.port}`],
        routes,
        typed_per_filter_config: hostRbacPerRoute(h.host, p.port),
      };
    }),
  };
}

// ---- CDS ----------------------------------------------------------------------

/** STRICT_DNS: Envoy resolves the allowed host itself (no Host-header spoofing to another address). */
export function egressDnsCluster(c: EgressDnsCluster): Cluster {
  return {
    name: c.name,
    type: DiscoveryType.STRICT_DNS,
    connect_timeout: durationSeconds(CONNECT_TIMEOUT_S),
    load_assignment: {
      cluster_name: c.name,
      endpoints: [{ lb_endpoints: [{ endpoint: { address: socketAddress(c.host, c.port) } }] }],
    },
  };
}
