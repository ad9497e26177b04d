// LDS for Envoy sidecars. iptables (installed by the injector) redirects the
// app's outbound traffic to 15001 and inbound traffic to 15003; the
// original_dst listener filter recovers the real destination, which selects
// a filter chain.
import type { MeshService, MeshView, ProxyContext } from '../../catalog/types.js';
import { PORT_INBOUND_LISTENER, PORT_OUTBOUND_LISTENER } from '../../mesh/constants.js';
import { type Identity, identityKey } from '../../mesh/identity.js';
import { TrafficDirection } from '../common/enums.js';
import { type InboundPort, inboundPorts, inboundRulesOf, isHttpLike } from '../common/inbound.js';
import { IdentityMemo } from '../common/memo.js';
import { byName, type OutboundPlan, type OutboundPort, outboundPlan } from '../common/outbound.js';
import { downstreamTlsSocket } from '../common/tls.js';
import { AnyType, adsConfigSource, ExtName, socketAddress, typed } from '../common/xds.js';
import {
  INBOUND_LISTENER,
  inboundFilterChainName,
  inboundRouteConfigName,
  OUTBOUND_LISTENER,
  outboundFilterChainName,
  outboundRouteConfigName,
  PASSTHROUGH_CLUSTER,
} from '../names.js';
import { httpRbacFilter, networkRbacFilter } from '../rbac/rbac.js';
import { type ProtoObject, type Resource, type ResourceGenerator, TypeUrl } from '../types.js';

function listenerFilter(name: string, typeUrl: string): ProtoObject {
  return { name, typed_config: typed(typeUrl) };
}

function httpConnectionManager(
  statPrefix: string,
  routeConfig: string,
  httpFilters: ProtoObject[],
): ProtoObject {
  return {
    name: ExtName.HttpConnectionManager,
    typed_config: typed(AnyType.HttpConnectionManager, {
      stat_prefix: statPrefix,
      rds: { route_config_name: routeConfig, config_source: adsConfigSource() },
      // The router must be the last HTTP filter.
      http_filters: [...httpFilters, { name: ExtName.Router, typed_config: typed(AnyType.Router) }],
    }),
  };
}

function tcpProxy(statPrefix: string, target: ProtoObject): ProtoObject {
  return {
    name: ExtName.TcpProxy,
    typed_config: typed(AnyType.TcpProxy, { stat_prefix: statPrefix, ...target }),
  };
}

function tcpTarget(p: OutboundPort): ProtoObject {
  const [only] = p.targets;
  if (p.targets.length === 1 && only && only.weight === undefined) return { cluster: only.cluster };
  return {
    weighted_clusters: { clusters: p.targets.map((t) => ({ name: t.cluster, weight: t.weight ?? 0 })) },
  };
}

function hasClusterIP(svc: MeshService): svc is MeshService & { clusterIP: string } {
  return svc.clusterIP !== undefined && svc.clusterIP !== '' && svc.clusterIP !== 'None';
}

/**
 * One filter chain per outbound service port, matched on the service's
 * clusterIP and port. A service without a clusterIP (headless) is matched on
 * the port alone, so it catches every otherwise unmatched destination on that
 * port; when several headless services share a port only the first (by key)
 * gets a chain, because Envoy rejects a listener with two identical matches.
 */
function outboundListener(plan: OutboundPlan, permissive: boolean): ProtoObject | undefined {
  const chains: ProtoObject[] = [];
  const portOnly = new Set<number>();
  for (const p of plan.ports) {
    const name = outboundFilterChainName(p.service, p.port);
    const match: ProtoObject = { destination_port: { value: p.port.port } };
    if (hasClusterIP(p.service)) {
      const ip = p.service.clusterIP;
      match['prefix_ranges'] = [{ address_prefix: ip, prefix_len: { value: ip.includes(':') ? 128 : 32 } }];
    } else {
      if (portOnly.has(p.port.port)) continue;
      portOnly.add(p.port.port);
    }
    const filter = isHttpLike(p.port)
      ? httpConnectionManager(name, outboundRouteConfigName(p.port.port), [])
      : tcpProxy(name, tcpTarget(p));
    chains.push({ name, filter_chain_match: match, filters: [filter] });
  }
  const listener: ProtoObject = {
    name: OUTBOUND_LISTENER,
    address: socketAddress('0.0.0.0', PORT_OUTBOUND_LISTENER),
    traffic_direction: TrafficDirection.OUTBOUND,
    listener_filters: [listenerFilter(ExtName.OriginalDst, AnyType.OriginalDst)],
    filter_chains: chains,
  };
  // Permissive mode lets traffic to non-mesh destinations out unchanged; in
  // SMI mode an unmatched connection has no chain and Envoy closes it.
  if (permissive) {
    listener['default_filter_chain'] = {
      name: PASSTHROUGH_CLUSTER,
      filters: [tcpProxy(PASSTHROUGH_CLUSTER, { cluster: PASSTHROUGH_CLUSTER })],
    };
  }
  // Envoy rejects a listener without any filter chain: leave it out, so the
  // redirected connections are refused (nothing to call is allowed anyway).
  return chains.length > 0 || permissive ? listener : undefined;
}

function inboundChain(mesh: MeshView, own: Identity, p: InboundPort): ProtoObject {
  const name = inboundFilterChainName(p.service, p.port);
  const rules = inboundRulesOf(mesh, p);
  const match: ProtoObject = { destination_port: { value: p.port.targetPort }, transport_protocol: 'tls' };
  // Two services of this pod on one target port are told apart by the SNI
  // their clients send (cds/sidecar.ts sets sni = service FQDN); otherwise
  // any SNI is accepted, which also admits clients that send none.
  if (p.sharedTargetPort) match['server_names'] = [p.service.fqdn];
  const filters = isHttpLike(p.port)
    ? [
        httpConnectionManager(name, inboundRouteConfigName(p.port.targetPort), [
          httpRbacFilter(rules, mesh.trustDomain),
        ]),
      ]
    : [networkRbacFilter(rules, mesh.trustDomain, name), tcpProxy(name, { cluster: p.localCluster })];
  return { name, filter_chain_match: match, transport_socket: downstreamTlsSocket(own), filters };
}

/** Inbound mTLS listener; undefined when the pod serves no service port. */
function inboundListener(mesh: MeshView, proxy: ProxyContext, ports: readonly InboundPort[]): ProtoObject {
  return {
    name: INBOUND_LISTENER,
    address: socketAddress('0.0.0.0', PORT_INBOUND_LISTENER),
    traffic_direction: TrafficDirection.INBOUND,
    listener_filters: [
      listenerFilter(ExtName.TlsInspector, AnyType.TlsInspector),
      listenerFilter(ExtName.OriginalDst, AnyType.OriginalDst),
    ],
    filter_chains: ports.map((p) => inboundChain(mesh, proxy.identity, p)),
  };
}

// Listeners memoised on the view answers they are built from (the same
// objects while unchanged, MeshView contract). The outbound listener depends
// on the outbound plan alone, so proxies sharing a plan share the message.
const outboundListeners = new IdentityMemo<ProtoObject | undefined>();
const inboundListeners = new IdentityMemo<ProtoObject>();

/**
 * The inbound listener reads, per inbound port, its service (ports, fqdn, key)
 * and the inbound rules of every service port behind it; inboundPorts derives
 * the rest from the services.
 */
function inboundListenerOf(mesh: MeshView, proxy: ProxyContext): ProtoObject | undefined {
  const ports = inboundPorts(proxy);
  if (ports.length === 0) return undefined;
  const parts: object[] = [];
  for (const p of ports) {
    parts.push(p.service);
    for (const port of p.servicePorts) parts.push(mesh.inboundRules(p.service.key, port));
  }
  return inboundListeners.get(parts, `${identityKey(proxy.identity)}|${mesh.trustDomain}`, () =>
    inboundListener(mesh, proxy, ports),
  );
}

/** Full set every time: LDS is state-of-the-world (xDS rule 7). */
export const sidecarLdsGenerator: ResourceGenerator = {
  typeUrl: TypeUrl.Listener,
  generate(proxy, ctx): Resource[] {
    if (proxy.identity.kind !== 'sidecar') return [];
    const out: Resource[] = [];
    const plan = outboundPlan(ctx.mesh, proxy.identity);
    const outbound = outboundListeners.get([plan], String(ctx.mesh.permissive), () =>
      outboundListener(plan, ctx.mesh.permissive),
    );
    if (outbound) out.push({ name: OUTBOUND_LISTENER, typeUrl: TypeUrl.Listener, message: outbound });
    const inbound = inboundListenerOf(ctx.mesh, proxy);
    if (inbound) out.push({ name: INBOUND_LISTENER, typeUrl: TypeUrl.Listener, message: inbound });
    return byName(out);
  },
};
