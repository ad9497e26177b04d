// The ports a sidecar's pod serves, as its inbound listener, local clusters
// and inbound route configs see them.
import type {
  InboundRule,
  MeshService,
  MeshServicePort,
  MeshView,
  ProxyContext,
} from '../../catalog/types.js';
import type { RouteAction } from '../api/envoy.js';
import { inboundRouteConfigName, inboundServiceRouteConfigName, localClusterName } from '../names.js';
import { compare } from './outbound.js';

/** One (service, targetPort) the pod serves. */
export interface InboundPort {
  service: MeshService;
  /** The first service port with this target port (its protocol wins). */
  port: MeshServicePort;
  /** Every service port number mapping to this target port. */
  servicePorts: number[];
  localCluster: string;
  /** True when another service of the pod uses the same target port. */
  sharedTargetPort: boolean;
}

/**
 * Sorted by service key, then service port. Two ports of one service with the
 * same target port collapse into one entry (their rules are merged), since
 * they would need identical filter chains and the same local cluster.
 */
export function inboundPorts(proxy: Pick<ProxyContext, 'services'>): InboundPort[] {
  const out: InboundPort[] = [];
  const servicesPerTarget = new Map<number, Set<string>>();
  const services = [...proxy.services].sort((a, b) => compare(a.key, b.key));
  for (const service of services) {
    const byTarget = new Map<number, InboundPort>();
    for (const port of [...service.ports].sort((a, b) => a.port - b.port)) {
      const seen = byTarget.get(port.targetPort);
      if (seen) {
        seen.servicePorts.push(port.port);
        continue;
      }
      const entry: InboundPort = {
        service,
        port,
        servicePorts: [port.port],
        localCluster: localClusterName(service, port.targetPort),
        sharedTargetPort: false,
      };
      byTarget.set(port.targetPort, entry);
      out.push(entry);
      let keys = servicesPerTarget.get(port.targetPort);
      if (!keys) {
        keys = new Set();
        servicesPerTarget.set(port.targetPort, keys);
      }
      keys.add(service.key);
    }
  }
  for (const e of out) e.sharedTargetPort = (servicesPerTarget.get(e.port.targetPort)?.size ?? 0) > 1;
  return out;
}

/** The inbound rules of every service port behind one inbound port. */
export function inboundRulesOf(mesh: MeshView, p: InboundPort): readonly InboundRule[] {
  if (p.servicePorts.length === 1) return mesh.inboundRules(p.service.key, p.port.port);
  return p.servicePorts.flatMap((port) => mesh.inboundRules(p.service.key, port));
}

/**
 * Permissive mode's plaintext chains (lds/ingress.ts): one per target port,
 * serving the first service on it (by key), whose protocol and limits it takes.
 */
export function permissivePlaintextPorts(ports: readonly InboundPort[]): InboundPort[] {
  const seen = new Set<number>();
  return ports.filter((p) => {
    if (seen.has(p.port.targetPort)) return false;
    seen.add(p.port.targetPort);
    return true;
  });
}

/** The route to the app behind an inbound port (127.0.0.1:<targetPort>). */
export function localAppRoute(p: InboundPort): RouteAction {
  const route: RouteAction = { cluster: p.localCluster };
  // gRPC streams outlive Envoy's 15 s default route timeout: 0 disables it.
  if (p.port.protocol === 'grpc') route.timeout = { seconds: 0 };
  return route;
}

export function isHttpLike(port: MeshServicePort): boolean {
  return port.protocol === 'http' || port.protocol === 'grpc';
}

/**
 * The inbound route config of a port: `rds-inbound.<targetPort>`, or one per
 * service when services share the target port. It never depends on whether
 * the service has rate limits, so adding one changes no filter chain (a
 * changed chain would keep serving its open connections until drained).
 */
export function inboundRouteConfigOf(p: InboundPort): string {
  return p.sharedTargetPort
    ? inboundServiceRouteConfigName(p.port.targetPort, p.service)
    : inboundRouteConfigName(p.port.targetPort);
}
