// Names and ports of the injected sidecar. Mesh-wide ports (15000/15001/15003/15010,
// ADS 15128) live in pkg/mesh/constants.ts; these only matter to the injector and
// the bootstrap it writes.

/** The proxy runs as this UID; iptables lets its own traffic through by owner match. */
export const PROXY_UID = 1500;

export const ENVOY_CONTAINER_NAME = 'envoy';
export const INIT_CONTAINER_NAME = 'skein-init';
export const BOOTSTRAP_VOLUME_NAME = 'skein-bootstrap';
/** Where the bootstrap Secret is mounted in the Envoy container. */
export const BOOTSTRAP_MOUNT_PATH = '/etc/skein';

/** Keys of the bootstrap Secret (file names under BOOTSTRAP_MOUNT_PATH). */
export const SecretKey = {
  bootstrap: 'bootstrap.json',
  /** SDS file (a DiscoveryResponse) naming the client certificate files. */
  adsCertSds: 'ads-cert-sds.json',
  /** SDS file naming the CA file that validates the controller. */
  adsCaSds: 'ads-ca-sds.json',
  cert: 'tls.crt',
  key: 'tls.key',
  ca: 'ca.crt',
  /** Proxyless pods: the grpc-js-xds bootstrap (GRPC_XDS_BOOTSTRAP), pointing at the agent. */
  grpcBootstrap: 'grpc-bootstrap.json',
} as const;

/**
 * `"true"` on a pod: it is a proxyless gRPC workload (grpc-js-xds). It gets the
 * skein agent instead of Envoy and iptables: the agent holds the pod's
 * certificate and relays the workload's plaintext ADS to the controller over mTLS.
 */
export const ANNOTATION_PROXYLESS = 'skein.dev/proxyless';
export const AGENT_CONTAINER_NAME = 'skein-agent';
/** An emptyDir shared by the agent and the app containers, holding the agent's socket. */
export const AGENT_VOLUME_NAME = 'skein-agent';
export const AGENT_RUN_PATH = '/var/run/skein';
export const AGENT_SOCKET_PATH = `${AGENT_RUN_PATH}/ads.sock`;

export function bootstrapSecretName(proxyUuid: string): string {
  return `skein-bootstrap-${proxyUuid}`;
}

/**
 * Ports the proxy serves kubelet's rewritten probes on. HTTP probes share one
 * listener per kind (routed by path); each distinct HTTPS probe target gets its
 * own TCP-proxy port from PORT_HTTPS_PROBE_FIRST up, because TLS cannot be
 * routed by path without terminating it.
 */
export const PORT_LIVENESS_PROBE = 15901;
export const PORT_READINESS_PROBE = 15902;
export const PORT_STARTUP_PROBE = 15903;
export const PORT_HTTPS_PROBE_FIRST = 15904;
export const PORT_HTTPS_PROBE_LAST = 15999;

/**
 * Envoy's own readiness, for kubelet's probes of the Envoy container: a static
 * listener that forwards ENVOY_READY_PATH to the admin interface's `/ready`.
 * A port of its own, present whenever the Envoy container is probed, because
 * 15901-15903 exist only when the app has HTTP probes and 15904-15999 belong to
 * HTTPS/gRPC pass-through; below them so the probe family stays contiguous.
 */
export const PORT_ENVOY_READINESS = 15900;
export const ENVOY_READY_PATH = '/skein-probe/envoy/ready';

/** Pod annotations with per-pod traffic-interception exclusions and inclusions (comma-separated). */
export const ANNOTATION_OUTBOUND_PORT_EXCLUSIONS = 'skein.dev/outbound-port-exclusion-list';
export const ANNOTATION_INBOUND_PORT_EXCLUSIONS = 'skein.dev/inbound-port-exclusion-list';
export const ANNOTATION_OUTBOUND_IP_RANGE_EXCLUSIONS = 'skein.dev/outbound-ip-range-exclusion-list';
/** Only outbound TCP to these ranges is intercepted; replaces MeshConfig's outboundIPRangeInclusionList. */
export const ANNOTATION_OUTBOUND_IP_RANGE_INCLUSIONS = 'skein.dev/outbound-ip-range-inclusion-list';
/**
 * Written by the injector: the merged lists (JSON) the pod's iptables rules were
 * rendered from, so the controller can list pods whose rules predate a change.
 */
export const ANNOTATION_INTERCEPTION = 'skein.dev/interception';

/**
 * Per-pod Envoy image, overriding the webhook's --envoy-image (Istio's
 * `sidecar.istio.io/proxyImage`): canary an Envoy upgrade on a few pods.
 */
export const ANNOTATION_ENVOY_IMAGE = 'skein.dev/envoy-image';

/**
 * Per-pod sidecar layout, overriding --native-sidecars: `"true"` injects Envoy
 * as a native sidecar (an init container with restartPolicy Always, KEP-753),
 * `"false"` as a regular container.
 */
export const ANNOTATION_NATIVE_SIDECAR = 'skein.dev/native-sidecar';

/** Pod annotations overriding MeshConfig `spec.sidecar` for one pod's bootstrap. */
export const ANNOTATION_XDS_TRANSPORT = 'skein.dev/xds-transport';
export const ANNOTATION_MAX_DOWNSTREAM_CONNECTIONS = 'skein.dev/max-downstream-connections';

/** Namespaces never injected, whatever their labels say. */
export const SYSTEM_NAMESPACES: readonly string[] = ['kube-system', 'kube-public', 'kube-node-lease'];
