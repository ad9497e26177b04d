// Names, labels and ports shared by every part of skein. Where OSM used
// `openservicemesh.io/...` we use `skein.dev/...`.

export const LABEL_MONITORED_BY = 'skein.dev/monitored-by';
export const LABEL_PROXY_UUID = 'skein.dev/proxy-uuid';
export const ANNOTATION_SIDECAR_INJECTION = 'skein.dev/sidecar-injection';

export const DEFAULT_MESH_NAME = 'skein';
export const DEFAULT_TRUST_DOMAIN = 'cluster.local';
export const DEFAULT_CERT_VALIDITY_MS = 24 * 60 * 60 * 1000;
export const DEFAULT_MIN_PUSH_INTERVAL_MS = 100;

export const PORT_ADS = 15128;
export const PORT_ENVOY_ADMIN = 15000;
export const PORT_OUTBOUND_LISTENER = 15001;
export const PORT_INBOUND_LISTENER = 15003;
export const PORT_PROMETHEUS_LISTENER = 15010;
export const PORT_CONTROLLER_HTTP = 9091;
export const PORT_DEBUG = 9092;
export const PORT_WEBHOOK = 9090;
/** REST-JSON xDS over HTTPS with client certificates (Kubernetes mode). */
export const PORT_REST_XDS = 15127;

/**
 * Proxy kinds carried in the certificate CN: an Envoy sidecar, a proxyless
 * gRPC workload, or skein's ingress gateway (an Envoy at the mesh's edge).
 */
export type ProxyKind = 'sidecar' | 'grpc' | 'gateway';
export const PROXY_KINDS: readonly ProxyKind[] = ['sidecar', 'grpc', 'gateway'];

/** The IngressClass skein's ingress gateway serves (`spec.ingressClassName`). */
export const INGRESS_CLASS = 'skein';
/** The legacy annotation that names an Ingress's class (before spec.ingressClassName). */
export const ANNOTATION_INGRESS_CLASS = 'kubernetes.io/ingress.class';
/** Pods labelled so (in the control-plane namespace) get the ingress gateway's identity at admission. */
export const LABEL_GATEWAY = 'skein.dev/gateway';
/** The gateway's listeners; unprivileged ports (Envoy runs as 1500), the Service maps 80 and 443. */
export const PORT_GATEWAY_HTTP = 8080;
export const PORT_GATEWAY_HTTPS = 8443;
