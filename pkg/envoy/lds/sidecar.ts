// LDS for Envoy sidecars. iptables (installed by the injector) redirects the
// app's outbound traffic to 15001 and inbound traffic to 15003; the
// original_dst listener filter recovers the real destination, which selects
// a filter chain.
import type { LocalRateLimits } from '../../catalog/ratelimit.js';
import type { MeshService, MeshView, ProxyContext } from '../../catalog/types.js';
import { upstreamSettingOf } from '../../catalog/view.js';
import { PORT_INBOUND_LISTENER, PORT_OUTBOUND_LISTENER } from '../../mesh/constants.js';
import { type Identity, identityKey } from '../../mesh/identity.js';
import type {
  Any,
  FilterChain,
  FilterChainMatch,
  Listener,
  Listener$Filter,
  ListenerFilter,
} from '../api/envoy.js';
import { accessLogSetting, withAccessLogs } from '../common/access-log.js';
import { TrafficDirection } from '../common/enums.js';
import { deepFreeze } from '../common/freeze.js';
import {
  type InboundPort,
  inboundPorts,
  inboundRouteConfigOf,
  inboundRulesOf,
  isHttpLike,
} from '../common/inbound.js';
import { type IngressChainInput, ingressInputs } from '../common/ingress.js';
import { localReplyBody } from '../common/local-reply.js';
import { IdentityMemo, NONE } from '../common/memo.js';
import {
  byName,
  hasClusterIP,
  type OutboundPlan,
  type OutboundPort,
  proxyOutboundPlan,
} from '../common/outbound.js';
import { httpLocalRateLimitFilter, networkLocalRateLimitFilter } from '../common/ratelimit.js';
import { downstreamTlsSocket } from '../common/tls.js';
import { tracingServiceName, tracingSetting, withTracing } from '../common/tracing.js';
import { AnyType, durationSeconds, ExtName, socketAddress, typed } from '../common/xds.js';
import { egressListenerPart, egressTlsInspector } from '../egress/egress.js';
import { type EgressPlan, egressPlan, NO_EGRESS } from '../egress/plan.js';
import {
  BLACKHOLE_CLUSTER,
  INBOUND_LISTENER,
  inboundFilterChainName,
  inboundRootSecretName,
  inboundTcpRootSecretName,
  OUTBOUND_DENIED,
  OUTBOUND_LISTENER,
  outboundFilterChainName,
  outboundRouteConfigName,
  outboundServiceRouteConfigName,
  PASSTHROUGH_CLUSTER,
} from '../names.js';
import { INBOUND_HTTP_RBAC_FILTER, networkRbacFilter } from '../rbac/rbac.js';
import { type Resource, type ResourceGenerator, TypeUrl } from '../types.js';
import { httpConnectionManager, rds } from './hcm.js';
import { ingressChain, permissivePlaintextChains } from './ingress.js';
import { type TcpTarget, tcpProxy } from './tcp-proxy.js';

// How long the outbound listener's http_inspector may wait for a client's first bytes.
const LISTENER_FILTERS_TIMEOUT_S = 1;

function listenerFilter(name: string, config: Any): ListenerFilter {
  return { name, typed_config: config };
}

// On the inbound HCMs only the RBAC filter replies 403 itself; it names the
// matched policy in the response code details (none: nothing allowed it).
const INBOUND_DENIED_REPLY = localReplyBody(
  403,
  'skein: RBAC denied: no TrafficTarget allows %DOWNSTREAM_PEER_URI_SAN% to call this route' +
    ' (%RESPONSE_CODE_DETAILS%)\n',
);

// The outbound listener is shared by every proxy with the same plan, so the
// reply cannot name the caller's identity: "this proxy".
const OUTBOUND_DENIED_REPLY = localReplyBody(
  403,
  'skein: %REQ(:authority)% is not allowed by the mesh policy for this proxy' +
    ' (SMI mode: no TrafficTarget allows its identity to call this destination)\n',
);

function tcpTarget(p: OutboundPort): TcpTarget {
  const [only] = p.targets;
  if (p.targets.length === 1 && only && only.weight === undefined) return { cluster: only.cluster };
  return {
    weighted_clusters: { clusters: p.targets.map((t) => ({ name: t.cluster, weight: t.weight ?? 0 })) },
  };
}

// An outbound HCM names only its destination (stat prefix and route config),
// so every proxy that may call a service port shares one, deep-frozen: the
// encoder packs its Any once for all of them (proto/direct-encode.ts), where
// each proxy group's listener packed its own. Keyed on the MeshService object
// (the same while unchanged, MeshView contract), so a changed service gets new ones.
const outboundHttpFilters = new IdentityMemo<Listener$Filter>();

function outboundHttpFilter(service: MeshService, name: string, routeConfig: string): Listener$Filter {
  return outboundHttpFilters.get([service], `${name}|${routeConfig}`, () =>
    deepFreeze(httpConnectionManager(name, rds(routeConfig), [])),
  );
}

// http_inspector's results (application_protocols on the socket).
const HTTP_PROTOCOLS = ['http/1.0', 'http/1.1', 'h2c'];

/**
 * SMI mode: an HTTP connection to a destination no chain matches (on `port`,
 * or on any port without chains when undefined) gets a 403 that says why.
 */
function deniedHttpChain(port: number | undefined): FilterChain {
  const match: FilterChainMatch = { application_protocols: HTTP_PROTOCOLS };
  if (port !== undefined) match.destination_port = { value: port };
  const routeConfig = {
    name: OUTBOUND_DENIED,
    virtual_hosts: [
      {
        name: OUTBOUND_DENIED,
        domains: ['*'],
        routes: [{ match: { prefix: '/' }, direct_response: { status: 403 } }],
      },
    ],
  };
  return {
    name: port === undefined ? `${OUTBOUND_DENIED}_http` : `${OUTBOUND_DENIED}_http_${port}`,
    filter_chain_match: match,
    filters: [
      httpConnectionManager(OUTBOUND_DENIED, { route_config: routeConfig }, [], {
        local_reply_config: OUTBOUND_DENIED_REPLY,
      }),
    ],
  };
}

/**
 * http_inspector, switched off on the given ports (Envoy runs listener filters
 * before choosing a chain, and the inspector waits for the client's first
 * bytes: a server-first TCP protocol would stall until the timeout).
 */
function httpInspector(offPorts: readonly number[]): ListenerFilter {
  const filter = listenerFilter(ExtName.HttpInspector, typed(AnyType.HttpInspector));
  // Int32Range: [start, end).
  const ranges = offPorts.map((p) => ({ destination_port_range: { start: p, end: p + 1 } }));
  const [only] = ranges;
  // MatchSet needs at least two rules (PGV min_items 2).
  if (ranges.length === 1 && only) filter.filter_disabled = only;
  else if (ranges.length > 1) filter.filter_disabled = { or_match: { rules: ranges } };
  return filter;
}

/**
 * One filter chain per outbound service port, matched on the service's
 * clusterIP and port. A service without a clusterIP (headless) is matched on
 * the port alone, so it catches every otherwise unmatched destination on that
 * port; when several headless services share a port only the first (by key)
 * gets a chain, because Envoy rejects a listener with two identical matches.
 *
 * What matches no chain: permissive mode lets it out unchanged (passthrough);
 * SMI mode denies it visibly — HTTP gets a 403 with a reason, anything else
 * a closed connection (tcp_proxy to the endpoint-less blackhole cluster).
 * Envoy prunes chains criterion by criterion, destination port first, keeping
 * only the most specific matches (FilterChainMatch, listener_components.proto):
 * once a port matches, port-less chains are out, so each port with IP-matched
 * chains gets its own HTTP denial chain besides the port-less one.
 */
function outboundListener(plan: OutboundPlan, permissive: boolean, egress: EgressPlan): Listener {
  const chains: FilterChain[] = [];
  const ports = new Set<number>();
  const portOnly = new Set<number>();
  const tcpPorts = new Set<number>();
  for (const p of plan.ports) {
    const name = outboundFilterChainName(p.service, p.port);
    const port = p.port.port;
    const match: FilterChainMatch = { destination_port: { value: port } };
    // A chain matched on the service's address routes with that service's own
    // route config; the port-only chain of headless services by Host (rds/sidecar.ts).
    let routeConfig = outboundRouteConfigName(port);
    if (hasClusterIP(p.service)) {
      const ip = p.service.clusterIP;
      match.prefix_ranges = [{ address_prefix: ip, prefix_len: { value: ip.includes(':') ? 128 : 32 } }];
      routeConfig = outboundServiceRouteConfigName(port, p.service);
    } else {
      if (portOnly.has(port)) continue;
      portOnly.add(port);
    }
    ports.add(port);
    const http = isHttpLike(p.port);
    if (!http) tcpPorts.add(port);
    const filter = http ? outboundHttpFilter(p.service, name, routeConfig) : tcpProxy(name, tcpTarget(p));
    chains.push({ name, filter_chain_match: match, filters: [filter] });
  }
  const listenerFilters = [listenerFilter(ExtName.OriginalDst, typed(AnyType.OriginalDst))];
  const listener: Listener = {
    name: OUTBOUND_LISTENER,
    address: socketAddress('0.0.0.0', PORT_OUTBOUND_LISTENER),
    traffic_direction: TrafficDirection.OUTBOUND,
    listener_filters: listenerFilters,
    filter_chains: chains,
  };
  // MeshConfig enableEgress: whatever is not a mesh destination leaves as it
  // would without a mesh; no port-wide HTTP denial may catch it first.
  if (permissive || egress.passthrough) {
    listener.default_filter_chain = {
      name: PASSTHROUGH_CLUSTER,
      filters: [tcpProxy(PASSTHROUGH_CLUSTER, { cluster: PASSTHROUGH_CLUSTER })],
    };
    return listener;
  }
  const byNumber = (a: number, b: number) => a - b;
  // Egress (SMI mode): chains for the identity's allowed external
  // destinations (egress/egress.ts). Their destinations are not mesh service
  // IPs, so they match by port (and ranges) below the mesh chains' /32s.
  const part = egressListenerPart(egress, portOnly);
  chains.push(...part.chains);
  for (const port of part.inspectorOffPorts) tcpPorts.add(port);
  // No HTTP denial where a headless chain takes the port, where the
  // inspector is off (it could never match there), or where an egress HTTP
  // chain with the same match denies itself.
  for (const port of [...ports].sort(byNumber)) {
    if (!portOnly.has(port) && !tcpPorts.has(port) && !part.httpPortsTaken.has(port))
      chains.push(deniedHttpChain(port));
  }
  chains.push(deniedHttpChain(undefined));
  if (part.tlsPorts.length > 0) listenerFilters.push(egressTlsInspector(part.tlsPorts));
  // Ports with a TCP chain keep the inspector off, so server-first protocols
  // to their mesh destinations start at once (as OSM does for tcp-server-first
  // egress ports); an HTTP client of an unknown destination on such a port
  // gets a closed connection instead of a 403.
  listenerFilters.push(httpInspector([...tcpPorts].sort(byNumber)));
  // Elsewhere a client that sends nothing (server-first, to a destination
  // that is denied anyway) is held this long, then gets its chain without the
  // inspector's answer instead of being closed by Envoy (default 15 s).
  listener.listener_filters_timeout = durationSeconds(LISTENER_FILTERS_TIMEOUT_S);
  listener.continue_on_listener_filters_timeout = true;
  listener.default_filter_chain = {
    name: OUTBOUND_DENIED,
    filters: [tcpProxy(OUTBOUND_DENIED, { cluster: BLACKHOLE_CLUSTER })],
  };
  return listener;
}

function inboundChain(
  mesh: MeshView,
  own: Identity,
  p: InboundPort,
  limits: LocalRateLimits | undefined,
): FilterChain {
  const name = inboundFilterChainName(p.service, p.port);
  // Connections beyond the bucket are closed before tcp_proxy or the HCM sees them.
  const connectionLimit = limits?.tcp ? [networkLocalRateLimitFilter(name, limits.tcp)] : [];
  const match: FilterChainMatch = {
    destination_port: { value: p.port.targetPort },
    transport_protocol: 'tls',
  };
  // Two services of this pod on one target port are told apart by the SNI
  // their clients send (cds/sidecar.ts sets sni = service FQDN); otherwise
  // any SNI is accepted, which also admits clients that send none.
  if (p.sharedTargetPort) match.server_names = [p.service.fqdn];
  if (isHttpLike(p.port)) {
    // Any mesh identity completes the handshake (sds/sds.ts); the RBAC filter
    // decides per request, before the router, so a denied request never
    // reaches the app and gets a 403 saying why. Its policy is on the route
    // config (rbac/rbac.ts, INBOUND_HTTP_RBAC_FILTER), so a policy change
    // reaches the connections already open.
    // local_ratelimit after RBAC: a denied request never spends an allowed
    // caller's token. Always there (it does nothing without a bucket on the
    // route config), so a limit added later reaches the connections already
    // open through RDS instead of a new chain that only new connections get.
    const httpFilters = [INBOUND_HTTP_RBAC_FILTER, httpLocalRateLimitFilter(name)];
    const hcm = httpConnectionManager(name, rds(inboundRouteConfigOf(p)), httpFilters, {
      local_reply_config: INBOUND_DENIED_REPLY,
    });
    const tls = downstreamTlsSocket(inboundRootSecretName(identityKey(own)));
    return { name, filter_chain_match: match, transport_socket: tls, filters: [...connectionLimit, hcm] };
  }
  // TCP keeps the allowed callers pinned in the handshake: the network RBAC
  // filter only decides on the first byte from the client, while tcp_proxy
  // connects to the app at once, so a server-first app (MySQL, SMTP) would
  // greet a denied caller before RBAC closes the connection.
  const tls = downstreamTlsSocket(inboundTcpRootSecretName(p.service.key, p.port.targetPort));
  const filters = [
    networkRbacFilter(inboundRulesOf(mesh, p), mesh.trustDomain, name),
    ...connectionLimit,
    tcpProxy(name, { cluster: p.localCluster }),
  ];
  return { name, filter_chain_match: match, transport_socket: tls, filters };
}

/**
 * Inbound listener: the mesh's mTLS chains, ingress chains (lds/ingress.ts),
 * and in permissive mode plaintext from anywhere.
 */
function inboundListener(
  mesh: MeshView,
  proxy: ProxyContext,
  ports: readonly InboundPort[],
  ingress: readonly IngressChainInput[],
): Listener {
  // The service's rate limits on every chain into it: mesh, ingress and plaintext (common/ratelimit.ts).
  const limitsOf = (p: InboundPort) => upstreamSettingOf(mesh, p.service.key)?.rateLimit;
  const chains = ports.map((p) => inboundChain(mesh, proxy.identity, p, limitsOf(p)));
  for (const i of ingress) chains.push(ingressChain(proxy.identity, i, limitsOf(i.port)));
  if (mesh.permissive) chains.push(...permissivePlaintextChains(ports, limitsOf));
  return {
    name: INBOUND_LISTENER,
    address: socketAddress('0.0.0.0', PORT_INBOUND_LISTENER),
    traffic_direction: TrafficDirection.INBOUND,
    listener_filters: [
      listenerFilter(ExtName.TlsInspector, typed(AnyType.TlsInspector)),
      listenerFilter(ExtName.OriginalDst, typed(AnyType.OriginalDst)),
    ],
    filter_chains: chains,
  };
}

// Listeners memoised on the view answers they are built from (the same
// objects while unchanged, MeshView contract). The outbound listener depends
// on the outbound plan alone, so proxies sharing a plan share the message.
const outboundListeners = new IdentityMemo<Listener>();
const inboundListeners = new IdentityMemo<Listener>();

/**
 * The inbound listener reads, per inbound port, its service (ports, fqdn, key)
 * and, for TCP ports, the inbound rules of every service port behind it (HTTP
 * ports' rules are on their route configs); inboundPorts derives the rest from
 * the services.
 */
function inboundListenerOf(mesh: MeshView, proxy: ProxyContext): Listener | undefined {
  const ports = inboundPorts(proxy);
  if (ports.length === 0) return undefined;
  const parts: object[] = [];
  for (const p of ports) {
    parts.push(p.service);
    if (!isHttpLike(p.port))
      for (const port of p.servicePorts) parts.push(mesh.inboundRules(p.service.key, port));
    // Its rate limits (the same object while the setting is unchanged).
    parts.push(upstreamSettingOf(mesh, p.service.key)?.rateLimit ?? NONE);
  }
  const ingress = ingressInputs(mesh, ports);
  // Which ports have ingress chains and what the chains read of the answer; its
  // policy is on the chain's route config (lds/ingress.ts).
  const ingressKey = ingress
    .map(({ port: p, ingress: i }) =>
      [p.service.key, p.port.targetPort, i.protocol, i.skipClientCertValidation, i.cidrs.join(' ')].join('|'),
    )
    .join(',');
  const key = `${identityKey(proxy.identity)}|${mesh.trustDomain}|${mesh.permissive}|${ingressKey}`;
  return inboundListeners.get(parts, key, () => inboundListener(mesh, proxy, ports, ingress));
}

/** Full set every time: LDS is state-of-the-world (xDS rule 7). */
export const sidecarLdsGenerator: ResourceGenerator = {
  typeUrl: TypeUrl.Listener,
  generate(proxy, ctx): Resource[] {
    if (proxy.identity.kind !== 'sidecar') return [];
    const out: Resource[] = [];
    const plan = proxyOutboundPlan(ctx.mesh, proxy);
    // Outside the mesh the app's calls leave unchanged, as without a mesh.
    const passthrough = ctx.mesh.permissive || proxy.outsideMesh === true;
    // Egress applies in SMI mode only (permissive mode passes everything through).
    const egress = passthrough ? NO_EGRESS : egressPlan(ctx.mesh, proxy.identity);
    const outbound = outboundListeners.get([plan, egress], String(passthrough), () =>
      outboundListener(plan, passthrough, egress),
    );
    // MeshConfig observability.accessLog, on every HCM and tcp_proxy (common/access-log.ts).
    const logs = accessLogSetting(ctx.mesh);
    // MeshConfig observability.tracing, on every HCM (common/tracing.ts).
    const tracing = tracingSetting(ctx.mesh);
    const service = tracingServiceName(proxy.identity);
    const finish = (l: Listener) => withTracing(withAccessLogs(l, logs), tracing, service);
    out.push({ name: OUTBOUND_LISTENER, typeUrl: TypeUrl.Listener, message: finish(outbound) });
    const inbound = inboundListenerOf(ctx.mesh, proxy);
    if (inbound) out.push({ name: INBOUND_LISTENER, typeUrl: TypeUrl.Listener, message: finish(inbound) });
    return byName(out);
  },
};
