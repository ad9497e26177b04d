// Resource names, following OSM v1.2's conventions (openservicemesh/osm `pkg/envoy`) so
// operators coming from OSM recognise them.
import type { MeshService, MeshServicePort } from '../catalog/types.js';

export const OUTBOUND_LISTENER = 'outbound-listener';
export const INBOUND_LISTENER = 'inbound-listener';
export const PASSTHROUGH_CLUSTER = 'passthrough-outbound';
/** SMI mode: a STATIC cluster without endpoints, where denied outbound TCP goes (and is closed). */
export const BLACKHOLE_CLUSTER = 'blackhole';
/** The tracing collector (MeshConfig observability.tracing; OSM called it envoy-tracing-cluster). */
export const TRACING_CLUSTER = 'skein-tracing';
/** Stat prefix and chain name of the outbound denials (SMI mode). */
export const OUTBOUND_DENIED = 'outbound_denied';

export function outboundFilterChainName(svc: MeshService, port: MeshServicePort): string {
  return `outbound_${svc.key}_${port.port}_${port.protocol}`;
}
export function inboundFilterChainName(svc: MeshService, port: MeshServicePort): string {
  return `inbound_${svc.key}_${port.targetPort}_${port.protocol}`;
}
/** The outbound route config of a port's headless services (their filter chain matches the port alone). */
export function outboundRouteConfigName(port: number): string {
  return `rds-outbound.${port}`;
}
/**
 * The outbound route config of one service port, referenced by the filter
 * chain matching the service's clusterIP and port (lds/sidecar.ts): a change
 * to one service's routes (a TrafficSplit's weights) is one small resource,
 * not the port's whole route config, which in permissive mode names every
 * service (~240 KB at 1,000 services).
 */
export function outboundServiceRouteConfigName(port: number, svc: MeshService): string {
  return `rds-outbound.${port}.${svc.key}`;
}
export function inboundRouteConfigName(port: number): string {
  return `rds-inbound.${port}`;
}
/**
 * The route config of one service on a target port it shares with other
 * services of the pod: each gets its own, because a service's rate-limit
 * buckets live in it.
 */
export function inboundServiceRouteConfigName(port: number, svc: MeshService): string {
  return `rds-inbound.${port}.${svc.key}`;
}
/** Upstream cluster `<ns>/<svc>|<port>`; also its EDS service name. */
export function upstreamClusterName(svc: MeshService, port: number): string {
  return `${svc.key}|${port}`;
}
/** Local (inbound) cluster `<ns>/<svc>|<port>|local`. */
export function localClusterName(svc: MeshService, targetPort: number): string {
  return `${svc.key}|${targetPort}|local`;
}
/**
 * The proxy's own service certificate, under one name in every proxy: each
 * holds exactly one identity (its client certificate's), and the server
 * answers the name with that identity's key. Clusters and listeners naming it
 * are therefore the same for every caller, so one encoded Cluster serves every
 * identity (OSM named it `service-cert:<ns>/<sa>`, which made each identity's
 * ~1,000 clusters its own in permissive mode).
 */
export const OWN_SERVICE_CERT = 'service-cert:self';
/** OSM's name for an identity's certificate: still answered for the proxy's own identity, referenced by nothing. */
export function serviceCertSecretName(identityKey: string): string {
  return `service-cert:${identityKey}`;
}
export function inboundRootSecretName(identityKey: string): string {
  return `root-cert-for-mtls-inbound:${identityKey}`;
}
export const INBOUND_TCP_ROOT_PREFIX = 'root-cert-for-mtls-inbound-tcp:';
/** The pinned validation context of one inbound TCP chain (lds/sidecar.ts, sds/sds.ts). */
export function inboundTcpRootSecretName(serviceKey: string, targetPort: number): string {
  return `${INBOUND_TCP_ROOT_PREFIX}${serviceKey}|${targetPort}`;
}
/**
 * The trust bundle every outbound cluster validates servers with: one secret
 * per proxy, the same for all (common/tls.ts). The SANs a cluster accepts sit
 * in the cluster itself. (OSM, and skein before, sent one validation context
 * per service, `root-cert-for-mtls-outbound:<ns>/<svc>`, each carrying the
 * bundle: ~1,100 copies per proxy in permissive mode at 1,000 services.)
 */
export const OUTBOUND_TRUST_BUNDLE = 'root-cert-for-mtls-outbound';

// ---- proxyless gRPC -----------------------------------------------------------

/** Client listener name for `xds:///<svc>.<ns>.svc.cluster.local:<port>`. */
export function proxylessClientListenerName(svc: MeshService, port: number): string {
  return `${svc.fqdn}:${port}`;
}
/** Server listener name requested by grpc-js-xds XdsServer (bootstrap template). */
export function proxylessServerListenerName(ip: string, port: number): string {
  const host = ip.includes(':') ? `[${ip}]` : ip;
  return `grpc/server?xds.resource.listening_address=${host}:${port}`;
}
/** gRFC A29 certificate provider instance name in the proxyless bootstrap. */
export const PROXYLESS_CERT_PROVIDER = 'default';

// ---- ingress (lds/ingress.ts) -------------------------------------------------

/** The inbound chain admitting ingress traffic on one target port (`http` plaintext or `https`). */
export function ingressFilterChainName(targetPort: number, protocol: 'http' | 'https'): string {
  return `ingress_${targetPort}_${protocol}`;
}
/**
 * The route config of an ingress chain: the app behind it, the chain's RBAC
 * policy (the IngressBackends' sources and the Ingress routes) and the
 * service's rate limits, so a change to them reaches the open connections.
 */
export function ingressRouteConfigName(targetPort: number, protocol: 'http' | 'https'): string {
  return `rds-ingress.${targetPort}.${protocol}`;
}
/** Permissive mode: plaintext from anywhere on one target port (ingress without an IngressBackend). */
export function inboundPlaintextChainName(targetPort: number): string {
  return `inbound-plaintext_${targetPort}`;
}
/** The route config of a permissive plaintext chain: the app and the service's rate limits. */
export function inboundPlaintextRouteConfigName(targetPort: number): string {
  return `rds-inbound-plaintext.${targetPort}`;
}
/** The validation context of ingress client certificates: the mesh CA, no SAN pinned (RBAC decides). */
export function ingressRootSecretName(identityKey: string): string {
  return `root-cert-for-mtls-ingress:${identityKey}`;
}

// ---- skein's ingress gateway (lds/gateway.ts, rds/gateway.ts) --------------------

/** The gateway's plaintext listener and its route configuration. */
export const GATEWAY_HTTP = 'gateway-http';
/** The gateway's TLS listener (one filter chain per Secret, chosen by SNI) and its route configuration. */
export const GATEWAY_HTTPS = 'gateway-https';
export const INGRESS_TLS_PREFIX = 'ingress-tls:';
/** The key pair of an Ingress's kubernetes.io/tls Secret `<ns>/<name>`, served to the gateway only. */
export function ingressTlsSecretName(secretKey: string): string {
  return `${INGRESS_TLS_PREFIX}${secretKey}`;
}
