// An UpstreamTrafficSetting (catalog/upstream.ts) as Envoy cluster and route
// fields. Sidecars and the ingress gateway (real Envoy) get all of it;
// proxyless gRPC only what grpc-js-xds 1.14 reads (see `proxyless` below).
import type { Protocol } from '../../catalog/types.js';
import type { UpstreamSetting } from '../../catalog/upstream.js';
import type { CircuitBreakers_Thresholds, Cluster, Duration, OutlierDetection } from '../api/envoy.js';
import { LbPolicy } from './enums.js';
import { httpProtocolOptions } from './xds.js';

/** Milliseconds as a protobuf Duration (whole nanoseconds: the registry refuses finer). */
export function durationMs(ms: number): Duration {
  const seconds = Math.floor(ms / 1000);
  const nanos = Math.round((ms - seconds * 1000) * 1e6);
  return nanos === 0 ? { seconds } : { seconds, nanos };
}

const u32 = (value: number | undefined) => (value === undefined ? undefined : { value });

function thresholds(s: UpstreamSetting, proxyless: boolean): CircuitBreakers_Thresholds | undefined {
  // grpc-js-xds 1.14 reads max_requests of the DEFAULT priority only (cluster-resource-type.ts).
  const t: CircuitBreakers_Thresholds = proxyless
    ? { max_requests: u32(s.maxRequests) }
    : {
        max_connections: u32(s.maxConnections),
        max_pending_requests: u32(s.maxPendingRequests),
        max_requests: u32(s.maxRequests),
        max_retries: u32(s.maxRetries),
      };
  for (const k of Object.keys(t) as (keyof CircuitBreakers_Thresholds)[]) if (t[k] === undefined) delete t[k];
  if (Object.keys(t).length === 0) return undefined;
  // remaining_* gauges: how close callers run to the limits (`skein proxy get stats`).
  if (!proxyless) t.track_remaining = true;
  return t;
}

function outlierDetection(s: NonNullable<UpstreamSetting['outlierDetection']>): OutlierDetection {
  const od: OutlierDetection = {};
  if (s.consecutive5xx !== undefined) od.consecutive_5xx = { value: s.consecutive5xx };
  if (s.consecutiveGatewayErrors !== undefined) {
    od.consecutive_gateway_failure = { value: s.consecutiveGatewayErrors };
    // Envoy enforces gateway-failure ejection at 0 % unless told otherwise (outlier_detection.proto).
    od.enforcing_consecutive_gateway_failure = { value: 100 };
  }
  if (s.intervalMs !== undefined) od.interval = durationMs(s.intervalMs);
  if (s.baseEjectionTimeMs !== undefined) od.base_ejection_time = durationMs(s.baseEjectionTimeMs);
  if (s.maxEjectionPercent !== undefined) od.max_ejection_percent = { value: s.maxEjectionPercent };
  const fp = s.failurePercentage;
  if (fp) {
    od.failure_percentage_threshold = { value: fp.threshold };
    // Envoy and grpc-js both leave failure-percentage ejection off unless it is enforced (outlier_detection.proto).
    od.enforcing_failure_percentage = { value: 100 };
    if (fp.minimumHosts !== undefined) od.failure_percentage_minimum_hosts = { value: fp.minimumHosts };
    if (fp.requestVolume !== undefined) od.failure_percentage_request_volume = { value: fp.requestVolume };
  }
  return od;
}

/**
 * The proxyless form: only failure-percentage ejection, the one kind of
 * skein's that grpc-js implements (gRFC A50; it has no consecutive-error
 * ejection). Success-rate ejection is turned off: grpc-js-xds enables it
 * whenever enforcing_success_rate is absent (cluster-resource-type.js).
 */
function proxylessOutlierDetection(
  s: NonNullable<UpstreamSetting['outlierDetection']>,
): OutlierDetection | undefined {
  if (!s.failurePercentage) return undefined;
  const { consecutive5xx: _c, consecutiveGatewayErrors: _g, ...rest } = s;
  const od = outlierDetection(rest);
  od.enforcing_success_rate = { value: 0 };
  return od;
}

/**
 * `cluster` with the setting's connect timeout, circuit breaker thresholds,
 * outlier detection and load-balancing policy (Envoy: sidecars, gateway).
 * Returns the same cluster object, changed.
 */
export function withUpstreamSetting(
  cluster: Cluster,
  s: UpstreamSetting | undefined,
  protocol: Protocol,
): Cluster {
  if (!s) return cluster;
  if (s.connectTimeoutMs !== undefined) cluster.connect_timeout = durationMs(s.connectTimeoutMs);
  const t = thresholds(s, false);
  if (t) cluster.circuit_breakers = { thresholds: [t] };
  if (s.maxRequestsPerConnection !== undefined && protocol !== 'tcp')
    // Cluster.max_requests_per_connection is deprecated for this field (cluster.proto).
    cluster.typed_extension_protocol_options = httpProtocolOptions(protocol === 'grpc', {
      max_requests_per_connection: { value: s.maxRequestsPerConnection },
    });
  if (s.outlierDetection) cluster.outlier_detection = outlierDetection(s.outlierDetection);
  switch (s.loadBalancer?.policy) {
    case 'LeastRequest':
      cluster.lb_policy = LbPolicy.LEAST_REQUEST;
      if (s.loadBalancer.choiceCount !== undefined)
        cluster.least_request_lb_config = { choice_count: { value: s.loadBalancer.choiceCount } };
      break;
    case 'RingHash':
      cluster.lb_policy = LbPolicy.RING_HASH;
      break;
    case 'Maglev':
      cluster.lb_policy = LbPolicy.MAGLEV;
      break;
    default:
      break;
  }
  return cluster;
}

/**
 * The proxyless form: what grpc-js-xds 1.14.1 reads of a cluster
 * (build/src/xds-resource-type/cluster-resource-type.js): circuit_breakers
 * max_requests, and lb_policy ROUND_ROBIN or RING_HASH (anything else NACKs
 * the cluster, so LeastRequest and Maglev stay round robin here). Its outlier
 * detection implements only success-rate and failure-percentage ejection
 * (gRFC A50), not consecutive errors, so it gets outlier detection only when
 * the setting has failurePercentage; connect timeouts and connection limits
 * do not apply to its channels.
 */
export function withProxylessUpstreamSetting(cluster: Cluster, s: UpstreamSetting | undefined): Cluster {
  if (!s) return cluster;
  const t = thresholds(s, true);
  if (t) cluster.circuit_breakers = { thresholds: [t] };
  const od = s.outlierDetection && proxylessOutlierDetection(s.outlierDetection);
  if (od) cluster.outlier_detection = od;
  if (s.loadBalancer?.policy === 'RingHash') cluster.lb_policy = LbPolicy.RING_HASH;
  return cluster;
}
