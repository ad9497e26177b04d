// How proxyless gRPC workloads name things, shared by the proxyless LDS, RDS
// and CDS generators: client targets (`xds:///<host>:<port>`), server
// listener names, and where a client target's traffic goes.

import { splitOnPort } from '../../catalog/split.js';
import type { MeshService, MeshServicePort, MeshView } from '../../catalog/types.js';
import { upstreamClusterName } from '../names.js';

/** A client listener name resolved to one port of a mesh service. */
export interface ClientTarget {
  /** The listener name as the client asked for it (the `xds:///` target). */
  name: string;
  service: MeshService;
  port: MeshServicePort;
}

/**
 * Resolves a client listener name (`<host>[:<port>]`, host as accepted by
 * `mesh.serviceByHost`) to a service port. Without a port the name resolves
 * only when the service has exactly one port, so a target is never ambiguous.
 */
export function resolveClientTarget(mesh: MeshView, name: string): ClientTarget | undefined {
  const colon = name.lastIndexOf(':');
  const portText = colon >= 0 ? name.slice(colon + 1) : '';
  const hasPort = /^[0-9]+$/.test(portText);
  const host = hasPort ? name.slice(0, colon) : name;
  const service = mesh.serviceByHost(host);
  if (!service) return undefined;
  if (!hasPort) {
    const only = service.ports.length === 1 ? service.ports[0] : undefined;
    return only ? { name, service, port: only } : undefined;
  }
  const portNumber = Number(portText);
  const port = service.ports.find((p) => p.port === portNumber);
  return port ? { name, service, port } : undefined;
}

/**
 * Every name a client may use for one service port. The client picks the
 * virtual host by its target authority (the `xds:///` name), so the route
 * configuration lists all of them as domains.
 */
export function clientTargetAliases(service: MeshService, port: MeshServicePort): string[] {
  const hosts = [
    service.fqdn,
    `${service.name}.${service.namespace}.svc`,
    `${service.name}.${service.namespace}`,
  ];
  const names = hosts.map((h) => `${h}:${port.port}`);
  if (service.ports.length === 1) names.push(...hosts);
  return names;
}

/** One upstream cluster a client target routes to; `weight` only for a split apex. */
export interface RouteDestination {
  cluster: string;
  weight?: number;
}

/**
 * Where traffic for one apex port goes: a TrafficSplit apex fans out to the
 * backends catalog/split.ts picks for that port. When no backend is left the
 * apex's own endpoints take the traffic, because gRPC rejects a
 * weighted_clusters route whose weights sum to 0 (gRFC A28).
 */
export function routeDestinations(mesh: MeshView, service: MeshService, port: number): RouteDestination[] {
  const backends = splitOnPort(mesh, service.key, port);
  if (backends.length === 0) return [{ cluster: upstreamClusterName(service, port) }];
  return backends
    .map((b) => ({ cluster: upstreamClusterName(b.service, port), weight: b.weight }))
    .sort((a, b) => (a.cluster < b.cluster ? -1 : a.cluster > b.cluster ? 1 : 0));
}

const SERVER_LISTENER_PREFIX = 'grpc/server?xds.resource.listening_address=';

/** Whether a Listener name is in the server template's form, valid or not. */
export function isServerListenerName(name: string): boolean {
  return name.startsWith(SERVER_LISTENER_PREFIX);
}

/** Parses `grpc/server?xds.resource.listening_address=<ip>:<port>` (IPv6 in brackets). */
export function parseServerListenerName(name: string): { ip: string; port: number } | undefined {
  if (!name.startsWith(SERVER_LISTENER_PREFIX)) return undefined;
  const address = name.slice(SERVER_LISTENER_PREFIX.length);
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([0-9.]+)):([0-9]{1,5})$/.exec(address);
  if (!m) return undefined;
  const port = Number(m[3]);
  if (port < 1 || port > 65535) return undefined;
  const ip = m[1] ?? m[2];
  return ip === undefined ? undefined : { ip, port };
}
