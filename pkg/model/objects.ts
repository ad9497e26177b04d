// Kubernetes-shaped objects the controller understands. Both registries (local
// manifests and the Kubernetes API) produce exactly these shapes, so nothing
// downstream knows where an object came from.

export interface ObjectMeta {
  name: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  /** Set once the object is being deleted (graceful deletion, finalizers). */
  deletionTimestamp?: string;
}

export interface KubeObject<K extends string = string, S = unknown> {
  apiVersion: string;
  kind: K;
  metadata: ObjectMeta;
  spec: S;
}

// ---- core/v1 ---------------------------------------------------------------

export type Namespace = KubeObject<'Namespace', Record<string, never> | undefined>;

export interface ServicePort {
  name?: string;
  port: number;
  targetPort?: number | string;
  protocol?: 'TCP' | 'UDP' | 'SCTP';
  appProtocol?: string;
}
export interface ServiceSpec {
  selector?: Record<string, string>;
  ports?: ServicePort[];
  clusterIP?: string;
  type?: string;
}
export type Service = KubeObject<'Service', ServiceSpec>;

export interface ContainerPort {
  name?: string;
  containerPort: number;
  protocol?: string;
}
export interface Container {
  name: string;
  image?: string;
  ports?: ContainerPort[];
}
export interface PodSpec {
  serviceAccountName?: string;
  nodeName?: string;
  hostNetwork?: boolean;
  containers?: Container[];
}
export interface PodStatus {
  phase?: string;
  podIP?: string;
  podIPs?: { ip: string }[];
  conditions?: { type: string; status: string }[];
}
export interface Pod extends KubeObject<'Pod', PodSpec> {
  status?: PodStatus;
}

export type ServiceAccount = KubeObject<'ServiceAccount', undefined>;

// ---- discovery.k8s.io/v1 ----------------------------------------------------

export interface EndpointSliceEndpoint {
  addresses: string[];
  conditions?: { ready?: boolean; serving?: boolean; terminating?: boolean };
  targetRef?: { kind: string; name: string; namespace?: string };
  nodeName?: string;
}
export interface EndpointSlicePort {
  name?: string;
  port?: number;
  protocol?: string;
  appProtocol?: string;
}
// EndpointSlice has no spec; its fields live at the top level.
export interface EndpointSlice {
  apiVersion: string;
  kind: 'EndpointSlice';
  metadata: ObjectMeta;
  addressType: 'IPv4' | 'IPv6' | 'FQDN';
  endpoints: EndpointSliceEndpoint[];
  ports?: EndpointSlicePort[];
}

// ---- SMI ---------------------------------------------------------------------

export interface IdentityRef {
  kind: 'ServiceAccount';
  name: string;
  namespace?: string;
}
export interface TrafficTargetRule {
  kind: 'HTTPRouteGroup' | 'TCPRoute';
  name: string;
  matches?: string[];
}
export interface TrafficTargetSpec {
  destination: IdentityRef;
  sources?: IdentityRef[];
  rules?: TrafficTargetRule[];
}
export type TrafficTarget = KubeObject<'TrafficTarget', TrafficTargetSpec>;

export interface HTTPMatch {
  name: string;
  pathRegex?: string;
  methods?: string[];
  headers?: Record<string, string>;
}
export type HTTPRouteGroup = KubeObject<'HTTPRouteGroup', { matches?: HTTPMatch[] }>;

export interface TCPMatch {
  name?: string;
  ports?: number[];
}
export type TCPRoute = KubeObject<'TCPRoute', { matches?: TCPMatch }>;

export interface TrafficSplitBackend {
  service: string;
  weight: number;
}
export interface TrafficSplitSpec {
  service: string;
  backends: TrafficSplitBackend[];
  matches?: { kind: string; name: string; apiGroup?: string }[];
}
export type TrafficSplit = KubeObject<'TrafficSplit', TrafficSplitSpec>;

// ---- networking.k8s.io/v1 ---------------------------------------------------

/** An Ingress backend: a Service in the Ingress's namespace, by port number or name. */
export interface IngressServiceBackend {
  name: string;
  port?: { number?: number; name?: string };
}
export interface IngressBackendRef {
  service?: IngressServiceBackend;
}
export interface HTTPIngressPath {
  path?: string;
  pathType: 'Exact' | 'Prefix' | 'ImplementationSpecific';
  backend: IngressBackendRef;
}
export interface IngressRule {
  host?: string;
  http?: { paths: HTTPIngressPath[] };
}
/** TLS for some hosts: the kubernetes.io/tls Secret (in the Ingress's namespace) the gateway presents. */
export interface IngressTLS {
  hosts?: string[];
  secretName?: string;
}
export interface IngressSpec {
  ingressClassName?: string;
  defaultBackend?: IngressBackendRef;
  rules?: IngressRule[];
  tls?: IngressTLS[];
}
export type Ingress = KubeObject<'Ingress', IngressSpec>;

// ---- skein IngressBackend (policy.skein.dev/v1alpha1, OSM's field names) ------

export interface IngressBackendTarget {
  /** A Service in the IngressBackend's namespace. */
  name: string;
  /** `number` is the pod's (target) port, as in OSM. */
  port: { number: number; protocol: 'http' | 'https' };
  tls?: { skipClientCertValidation?: boolean; sniHosts?: string[] };
}
export interface IngressSource {
  kind: 'Service' | 'AuthenticatedPrincipal' | 'IPRange';
  name: string;
  namespace?: string;
}
export interface IngressBackendSpec {
  backends: IngressBackendTarget[];
  sources: IngressSource[];
  /** HTTPRouteGroup refs (kind, name) in the same namespace: the requests admitted. */
  matches?: { kind: 'HTTPRouteGroup'; name: string; apiGroup?: string; matches?: string[] }[];
}
export type IngressBackend = KubeObject<'IngressBackend', IngressBackendSpec>;

// ---- skein Egress (policy.skein.dev/v1alpha1; OSM's Egress field for field) ----

export type EgressProtocol = 'http' | 'https' | 'tcp' | 'tcp-server-first';
export interface EgressPort {
  number: number;
  protocol: EgressProtocol;
}
export interface EgressSpec {
  sources: { kind: 'ServiceAccount'; name: string; namespace: string }[];
  hosts?: string[];
  /** CIDRs. */
  ipAddresses?: string[];
  ports: EgressPort[];
  matches?: { apiGroup?: string; kind: 'HTTPRouteGroup'; name: string }[];
}
export type Egress = KubeObject<'Egress', EgressSpec>;

// ---- skein Retry (policy.skein.dev/v1alpha1; OSM v1.2's Retry plus a budget) ----

export interface RetryPolicySpec {
  /** Envoy's retry_on: comma-separated conditions (`5xx,gateway-error,reset,connect-failure,…`). */
  retryOn: string;
  /** Go-style duration per attempt (Envoy's per_try_timeout). */
  perTryTimeout?: string;
  numRetries?: number;
  /** Go-style duration: the base of Envoy's exponential backoff (max is 10x, Envoy's default). */
  retryBackoffBaseInterval?: string;
  /** Status codes retried with `retriable-status-codes` in retryOn (skein's addition). */
  retriableStatusCodes?: number[];
  /** Envoy's circuit_breakers retry_budget on the source's cluster for the destination (skein's addition). */
  retryBudget?: { budgetPercent: number; minRetryConcurrency?: number };
}
export interface RetrySpec {
  source: { kind: 'ServiceAccount'; name: string; namespace: string };
  destinations: { kind: 'Service'; name: string; namespace: string }[];
  retryPolicy: RetryPolicySpec;
}
export type Retry = KubeObject<'Retry', RetrySpec>;

// ---- skein UpstreamTrafficSetting (policy.skein.dev/v1alpha1; OSM v1.2's fields + skein's) ----

export interface UpstreamTrafficSettingSpec {
  /** The destination Service's FQDN, `<svc>.<ns>.svc.cluster.local` (in this object's namespace). */
  host: string;
  connectionSettings?: {
    /** connectTimeout: a Go-style duration. */
    tcp?: { maxConnections?: number; connectTimeout?: string };
    http?: {
      maxRequestsPerConnection?: number;
      maxPendingRequests?: number;
      maxRequests?: number;
      maxRetries?: number;
    };
  };
  /** skein: passive health checking (Envoy's outlier detection); durations Go-style. */
  outlierDetection?: {
    consecutive5xx?: number;
    consecutiveGatewayErrors?: number;
    interval?: string;
    baseEjectionTime?: string;
    maxEjectionPercent?: number;
    /**
     * skein: eject an endpoint whose share of failed requests in an interval
     * exceeds `threshold` percent (Envoy's failure_percentage_*, gRFC A50: the
     * one kind proxyless gRPC applies too).
     */
    failurePercentage?: { threshold: number; minimumHosts?: number; requestVolume?: number };
  };
  /** skein: how the caller picks an endpoint. */
  loadBalancer?: {
    policy: 'RoundRobin' | 'LeastRequest' | 'RingHash' | 'Maglev';
    /** LeastRequest: endpoints sampled per pick (power of two choices at 2). */
    choiceCount?: number;
    /** RingHash/Maglev: what a request is hashed on (session affinity), tried in order. */
    hashOn?: HashOnSpec[];
  };
  /** skein: whole-request timeout on the callers' routes (Go-style duration; "0" disables). */
  requestTimeout?: string;
  /** OSM v1.2: token buckets on the service's own sidecars (inbound), per sidecar. */
  rateLimit?: { local?: { tcp?: TCPLocalRateLimitSpec; http?: HTTPLocalRateLimitSpec } };
  /** OSM v1.2: per-route HTTP limits; `path` is read like an HTTPRouteGroup pathRegex. */
  httpRoutes?: { path: string; rateLimit?: { local?: HTTPLocalRateLimitSpec } }[];
}
/**
 * One hash key; exactly one of `header`, `cookie`, `sourceIP`. Keys present on a
 * request are combined in order; `terminal` stops at this key when it is present.
 */
export interface HashOnSpec {
  /** A request header's name (case-insensitive). */
  header?: string;
  /** A cookie; with `ttl` the caller's proxy sets it when the request has none ("0": a session cookie). */
  cookie?: { name: string; ttl?: string; path?: string };
  /** The caller's address (true only). */
  sourceIP?: boolean;
  terminal?: boolean;
}
export type RateLimitUnit = 'second' | 'minute' | 'hour';
export interface TCPLocalRateLimitSpec {
  /** Connections allowed per unit. */
  connections: number;
  unit: RateLimitUnit;
  /** Connections allowed above the rate at once (bucket size = connections + burst). */
  burst?: number;
}
export interface HTTPLocalRateLimitSpec {
  requests: number;
  unit: RateLimitUnit;
  burst?: number;
  /** Status of a limited request; default 429. */
  responseStatusCode?: number;
  responseHeadersToAdd?: { name: string; value: string }[];
}
export type UpstreamTrafficSetting = KubeObject<'UpstreamTrafficSetting', UpstreamTrafficSettingSpec>;

// ---- skein MeshConfig (config.skein.dev/v1alpha1) -----------------------------

export interface MeshConfigSpec {
  traffic?: {
    /** Permissive: every meshed service may reach every other. Default false (SMI mode). */
    permissive?: boolean;
    /** Lets traffic to destinations outside the mesh out unchanged (passthrough). Default false. */
    enableEgress?: boolean;
    /**
     * Mesh-wide traffic-interception lists (OSM v1.2's names), merged with the pod
     * annotations at admission (pkg/injector/exclusions.ts): IPv4 CIDRs or addresses,
     * ports 1-65535. Pods admitted afterwards get them; running pods keep their rules.
     */
    outboundIPRangeExclusionList?: string[];
    /** When non-empty, only outbound TCP to these ranges is intercepted (exclusions still win). */
    outboundIPRangeInclusionList?: string[];
    outboundPortExclusionList?: number[];
    inboundPortExclusionList?: number[];
  };
  certificate?: {
    /** Validity of the service certificates proxies get over SDS, a Go-style duration ("24h", "90m"). */
    validity?: string;
    /**
     * Validity of the ADS client certificate in each pod's bootstrap Secret
     * (default 24h), renewed at two thirds of it. Apart from `validity`
     * because a Secret volume changes only when kubelet syncs it (minutes),
     * while SDS delivers at once.
     */
    bootstrapValidity?: string;
    trustDomain?: string;
    /**
     * A client certificate for a third-party ingress controller (OSM's
     * certificate.ingressGateway): issued by the mesh CA, written to the
     * Secret (Kubernetes mode) or the state dir (local mode), rotated.
     */
    ingressGateway?: {
      subjectAltNames: string[];
      /** Go-style duration (default 24h). */
      validityDuration?: string;
      secret: { name: string; namespace: string };
    };
  };
  xds?: {
    /** Minimum interval between pushes to one proxy, a Go-style duration. */
    minPushInterval?: string;
  };
  sidecar?: {
    /** `sotw` (default) or `delta`: the ADS protocol injected sidecars speak. */
    xdsTransport?: string;
    /** Open downstream connections one sidecar accepts (Envoy's overload manager). */
    maxDownstreamConnections?: number;
    /** Envoy's `--log-level` in pods admitted from now on (OSM v1.2's field); default `warn`. */
    logLevel?: string;
  };
  observability?: {
    /** The controller's own log level (pino), applied at runtime; wins over --log-level. */
    logLevel?: string;
    enableDebugServer?: boolean;
    /** Envoy access logs on the sidecars and the ingress gateway (stdout), changed at runtime. */
    accessLog?: { enabled?: boolean; format?: 'json' | 'text' };
    /** Envoy tracing on the sidecars' and the ingress gateway's HTTP connection managers, at runtime. */
    tracing?: MeshTracing;
  };
}
export type MeshConfig = KubeObject<'MeshConfig', MeshConfigSpec>;

/** OSM v1.2's `observability.tracing` (enable, address, port, endpoint) plus provider and sampling. */
export interface MeshTracing {
  enable?: boolean;
  /** `zipkin` (default: HTTP JSON v2 to `endpoint`) or `opentelemetry` (OTLP over gRPC). */
  provider?: 'zipkin' | 'opentelemetry';
  /** The collector's host name or IPv4 address; required when enabled. */
  address?: string;
  /** Default 9411 (Zipkin) or 4317 (OTLP gRPC). */
  port?: number;
  /** Zipkin's collector path; default `/api/v2/spans`. */
  endpoint?: string;
  /** Percent of requests traced (0-100, decimals allowed); default 100. */
  sampling?: number;
}

export type AnyObject =
  | Namespace
  | Service
  | Pod
  | ServiceAccount
  | EndpointSlice
  | TrafficTarget
  | HTTPRouteGroup
  | TCPRoute
  | TrafficSplit
  | Ingress
  | IngressBackend
  | Egress
  | MeshConfig
  | Retry
  | UpstreamTrafficSetting;

export type ObjectKind = AnyObject['kind'];

export const OBJECT_KINDS: readonly ObjectKind[] = [
  'Namespace',
  'Service',
  'Pod',
  'ServiceAccount',
  'EndpointSlice',
  'TrafficTarget',
  'HTTPRouteGroup',
  'TCPRoute',
  'TrafficSplit',
  'Ingress',
  'IngressBackend',
  'Egress',
  'MeshConfig',
  'Retry',
  'UpstreamTrafficSetting',
];

/** The store key of an object: `<namespace>/<name>`, or `<name>` for cluster-scoped kinds. */
export function objectKey(obj: { metadata: ObjectMeta }): string {
  return obj.metadata.namespace ? `${obj.metadata.namespace}/${obj.metadata.name}` : obj.metadata.name;
}
