// Small building blocks shared by the sidecar and proxyless generators: Any
// type URLs, well-known extension names and config sources.
import type {
  Address,
  AnyMessages,
  ConfigSource,
  Core$HttpProtocolOptions,
  Duration,
  TypedAny,
} from '../api/envoy.js';
import { ApiVersion } from './enums.js';

const T = 'type.googleapis.com/';

/** `@type` URLs of the Any payloads skein emits. */
export const AnyType = {
  HttpConnectionManager: `${T}envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager`,
  TcpProxy: `${T}envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy`,
  NetworkRbac: `${T}envoy.extensions.filters.network.rbac.v3.RBAC`,
  HttpRbac: `${T}envoy.extensions.filters.http.rbac.v3.RBAC`,
  HttpRbacPerRoute: `${T}envoy.extensions.filters.http.rbac.v3.RBACPerRoute`,
  NetworkLocalRateLimit: `${T}envoy.extensions.filters.network.local_ratelimit.v3.LocalRateLimit`,
  HttpLocalRateLimit: `${T}envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit`,
  Router: `${T}envoy.extensions.filters.http.router.v3.Router`,
  OriginalDst: `${T}envoy.extensions.filters.listener.original_dst.v3.OriginalDst`,
  TlsInspector: `${T}envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector`,
  HttpInspector: `${T}envoy.extensions.filters.listener.http_inspector.v3.HttpInspector`,
  UpstreamTlsContext: `${T}envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext`,
  DownstreamTlsContext: `${T}envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext`,
  HttpProtocolOptions: `${T}envoy.extensions.upstreams.http.v3.HttpProtocolOptions`,
  DownstreamConnections: `${T}envoy.extensions.resource_monitors.downstream_connections.v3.DownstreamConnectionsConfig`,
  StdoutAccessLog: `${T}envoy.extensions.access_loggers.stream.v3.StdoutAccessLog`,
  MetricsServiceConfig: `${T}envoy.config.metrics.v3.MetricsServiceConfig`,
  ZipkinConfig: `${T}envoy.config.trace.v3.ZipkinConfig`,
  OpenTelemetryConfig: `${T}envoy.config.trace.v3.OpenTelemetryConfig`,
  PreviousHostsPredicate: `${T}envoy.extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate`,
} as const;

/** Extension (filter / transport socket) names Envoy knows them by. */
export const ExtName = {
  HttpConnectionManager: 'envoy.filters.network.http_connection_manager',
  TcpProxy: 'envoy.filters.network.tcp_proxy',
  NetworkRbac: 'envoy.filters.network.rbac',
  HttpRbac: 'envoy.filters.http.rbac',
  NetworkLocalRateLimit: 'envoy.filters.network.local_ratelimit',
  HttpLocalRateLimit: 'envoy.filters.http.local_ratelimit',
  Router: 'envoy.filters.http.router',
  OriginalDst: 'envoy.filters.listener.original_dst',
  TlsInspector: 'envoy.filters.listener.tls_inspector',
  HttpInspector: 'envoy.filters.listener.http_inspector',
  Tls: 'envoy.transport_sockets.tls',
  /** Key of `typed_extension_protocol_options` for HttpProtocolOptions. */
  HttpProtocolOptions: 'envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
  /** The overload manager's connection-limit monitor: Envoy looks for exactly this name (server.cc). */
  GlobalDownstreamMaxConnections: 'envoy.resource_monitors.global_downstream_max_connections',
  StdoutAccessLog: 'envoy.access_loggers.stdout',
  /** The stats sink streaming to a gRPC MetricsService (the controller, pkg/stats). */
  MetricsServiceSink: 'envoy.stat_sinks.metrics_service',
  ZipkinTracer: 'envoy.tracers.zipkin',
  OpenTelemetryTracer: 'envoy.tracers.opentelemetry',
  PreviousHostsPredicate: 'envoy.retry_host_predicates.previous_hosts',
} as const;

/**
 * An Any in fromObject form. The URL picks the payload's type (AnyMessages,
 * pkg/envoy/api/envoy.ts), so a payload of another message fails to compile.
 */
export function typed<U extends keyof AnyMessages>(typeUrl: U, body?: AnyMessages[U]): TypedAny<U> {
  return { '@type': typeUrl, ...body };
}

/** Config source "over this same ADS stream", v3 resources. */
export function adsConfigSource(): ConfigSource {
  return { ads: {}, resource_api_version: ApiVersion.V3 };
}

export function socketAddress(address: string, port: number): Address {
  return { socket_address: { address, port_value: port } };
}

/**
 * A cluster's typed HttpProtocolOptions: HTTP/2 to the upstream when `http2`
 * (gRPC needs it end to end), else HTTP/1.1, with the `common` options (idle
 * timeout, requests per connection) when given.
 */
export function httpProtocolOptions(
  http2: boolean,
  common?: Core$HttpProtocolOptions,
): { [name: string]: TypedAny<typeof AnyType.HttpProtocolOptions> } {
  return {
    [ExtName.HttpProtocolOptions]: typed(AnyType.HttpProtocolOptions, {
      ...(common && { common_http_protocol_options: common }),
      explicit_http_config: http2 ? { http2_protocol_options: {} } : { http_protocol_options: {} },
    }),
  };
}

export function durationSeconds(seconds: number): Duration {
  return { seconds };
}
