// Tracing (MeshConfig spec.observability.tracing): every HTTP connection
// manager of a sidecar's or the ingress gateway's listeners reports spans to
// one collector, reached through the cluster TRACING_CLUSTER in the proxy's
// CDS. Like the access logs (access-log.ts) it is applied to finished listener
// messages and memoised on (listener, setting, service name), so an unchanged
// setting leaves every listener the same object and nothing is re-sent.
//
// Request ids: the HCMs keep Envoy's default generate_request_id, so the first
// sidecar gives a request its x-request-id and the next ones pass it on; the
// tracer carries the trace context (B3 for Zipkin, W3C traceparent for
// OpenTelemetry) to the callee's sidecar, which continues the same trace.
import { isIPv4 } from 'node:net';
import { derive } from '../../catalog/derive.js';
import type { MeshView } from '../../catalog/types.js';
import { meshConfigOf } from '../../catalog/view.js';
import type { Identity } from '../../mesh/identity.js';
import type { MeshTracing } from '../../model/objects.js';
import type { Cluster, HttpConnectionManager_Tracing, Listener, Listener$Filter } from '../api/envoy.js';
import { TRACING_CLUSTER } from '../names.js';
import { DiscoveryType, ZipkinEndpointVersion } from './enums.js';
import { AnyType, durationSeconds, ExtName, httpProtocolOptions, socketAddress, typed } from './xds.js';

export type TracingProvider = 'zipkin' | 'opentelemetry';

/** The mesh's tracing, with defaults filled in; undefined while off. */
export interface TracingSetting {
  readonly provider: TracingProvider;
  readonly address: string;
  readonly port: number;
  /** Zipkin's collector path (unused by OpenTelemetry). */
  readonly endpoint: string;
  /** Percent of requests traced. */
  readonly sampling: number;
  /** Identifies the setting: equal keys, equal settings. */
  readonly key: string;
}

export const DEFAULT_ZIPKIN_PORT = 9411;
/** OTLP over gRPC (OpenTelemetry's specification, "OTLP/gRPC Default Port"). */
export const DEFAULT_OTLP_GRPC_PORT = 4317;
export const DEFAULT_ZIPKIN_ENDPOINT = '/api/v2/spans';
export const DEFAULT_SAMPLING_PERCENT = 100;

// Interned by key, so the same setting is the same object across views (derive's contract).
const interned = new Map<string, TracingSetting>();

/** `tracing` with its defaults, or undefined when off (or unusable: the registry refuses that). */
export function parseTracing(t: MeshTracing | undefined): TracingSetting | undefined {
  if (t?.enable !== true || !t.address) return undefined;
  const provider = t.provider ?? 'zipkin';
  const port = t.port ?? (provider === 'zipkin' ? DEFAULT_ZIPKIN_PORT : DEFAULT_OTLP_GRPC_PORT);
  const endpoint = t.endpoint ?? DEFAULT_ZIPKIN_ENDPOINT;
  const sampling = t.sampling ?? DEFAULT_SAMPLING_PERCENT;
  const key = JSON.stringify([provider, t.address, port, endpoint, sampling]);
  let s = interned.get(key);
  if (!s) {
    s = Object.freeze({ provider, address: t.address, port, endpoint, sampling, key });
    // A MeshConfig has few versions; the bound only guards against churn.
    if (interned.size >= 64) interned.clear();
    interned.set(key, s);
  }
  return s;
}

/** The mesh's tracing setting: the same object while unchanged. */
export function tracingSetting(view: MeshView): TracingSetting | undefined {
  return derive(view, 'tracing', (v) => parseTracing(meshConfigOf(v)?.spec.observability?.tracing));
}

/** What the proxy reports as its service: the bootstrap's node.cluster (`<sa>.<ns>`), Zipkin's too. */
export function tracingServiceName(identity: Identity): string {
  return `${identity.serviceAccount}.${identity.namespace}`;
}

export function hcmTracing(s: TracingSetting, serviceName: string): HttpConnectionManager_Tracing {
  return {
    random_sampling: { value: s.sampling },
    provider:
      s.provider === 'zipkin'
        ? {
            name: ExtName.ZipkinTracer,
            typed_config: typed(AnyType.ZipkinConfig, {
              collector_cluster: TRACING_CLUSTER,
              collector_endpoint: s.endpoint,
              collector_endpoint_version: ZipkinEndpointVersion.HTTP_JSON,
              // The Host header of the POST: the collector's name, not the cluster's.
              collector_hostname: s.address,
            }),
          }
        : {
            name: ExtName.OpenTelemetryTracer,
            typed_config: typed(AnyType.OpenTelemetryConfig, {
              grpc_service: { envoy_grpc: { cluster_name: TRACING_CLUSTER, authority: s.address } },
              service_name: serviceName,
            }),
          },
  };
}

/**
 * The collector: STATIC for an IPv4 address, else LOGICAL_DNS (one collector
 * name, connections follow its current address; OSM's choice too). OTLP is
 * gRPC, which needs HTTP/2 to the upstream.
 */
export function tracingCluster(s: TracingSetting): Cluster {
  const cluster: Cluster = {
    name: TRACING_CLUSTER,
    type: isIPv4(s.address) ? DiscoveryType.STATIC : DiscoveryType.LOGICAL_DNS,
    connect_timeout: durationSeconds(1),
    load_assignment: {
      cluster_name: TRACING_CLUSTER,
      endpoints: [{ lb_endpoints: [{ endpoint: { address: socketAddress(s.address, s.port) } }] }],
    },
  };
  if (s.provider === 'opentelemetry') cluster.typed_extension_protocol_options = httpProtocolOptions(true);
  return cluster;
}

const clusters = new WeakMap<TracingSetting, Cluster>();

/** The collector cluster of a setting (the same object for the same setting). */
export function tracingClusterOf(s: TracingSetting): Cluster {
  let c = clusters.get(s);
  if (!c) {
    c = tracingCluster(s);
    clusters.set(s, c);
  }
  return c;
}

function withTrace(filter: Listener$Filter, tracing: HttpConnectionManager_Tracing): Listener$Filter {
  const cfg = filter.typed_config;
  if (cfg?.['@type'] !== AnyType.HttpConnectionManager) return filter;
  return { ...filter, typed_config: { ...cfg, tracing } };
}

const memo = new WeakMap<Listener, Map<string, Listener>>();

/** The listener with tracing on every HCM (the same object for the same inputs); itself when off. */
export function withTracing(
  listener: Listener,
  setting: TracingSetting | undefined,
  serviceName: string,
): Listener {
  if (!setting) return listener;
  let byKey = memo.get(listener);
  if (!byKey) {
    byKey = new Map();
    memo.set(listener, byKey);
  }
  const key = `${setting.key}|${serviceName}`;
  const known = byKey.get(key);
  if (known) return known;
  const tracing = hcmTracing(setting, serviceName);
  const chain = <C extends { filters?: Listener$Filter[] }>(c: C): C =>
    c.filters ? { ...c, filters: c.filters.map((f) => withTrace(f, tracing)) } : c;
  const out: Listener = { ...listener };
  if (listener.filter_chains) out.filter_chains = listener.filter_chains.map(chain);
  if (listener.default_filter_chain) out.default_filter_chain = chain(listener.default_filter_chain);
  byKey.set(key, out);
  return out;
}
