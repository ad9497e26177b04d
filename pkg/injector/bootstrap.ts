// The Envoy bootstrap of an injected sidecar, in protobufjs fromObject form
// with proto field names. The same object is written to the bootstrap Secret as
// JSON for `envoy --config-path`: Envoy parses proto3 JSON, which accepts proto
// field names and enum names, and this object uses no well-known types whose
// JSON form differs from fromObject form (wrappers, Struct) but Durations, which
// it writes in their proto3 JSON form ("0.25s"); the tests check that, and
// convert those for the protobufjs round trip, so the file Envoy reads is the
// message the tests validate.
//
// Credentials are files from the mounted bootstrap Secret, referenced through
// file-based SDS with a watched directory rather than inlined: kubelet swaps a
// Secret volume atomically (a `..data` symlink rename in the mount directory),
// and Envoy re-reads the certificate on that move, so a controller that
// rotates the Secret's certificate keeps the proxy's ADS connection alive
// without restarting Envoy. It also keeps the private key out of the bootstrap
// (and of /config_dump).

import { AnyType, ExtName, socketAddress, typed } from '../envoy/common/xds.js';
import type { ProtoObject } from '../envoy/types.js';
import { PORT_ADS, PORT_ENVOY_ADMIN, PORT_PROMETHEUS_LISTENER } from '../mesh/constants.js';
import { BOOTSTRAP_MOUNT_PATH, ENVOY_READY_PATH, PORT_ENVOY_READINESS, SecretKey } from './constants.js';
import type { HttpProbeForward, ProbeForwards, TcpProbeForward } from './probes.js';

export const BOOTSTRAP_TYPE_URL = 'type.googleapis.com/envoy.config.bootstrap.v3.Bootstrap';
export const DISCOVERY_RESPONSE_TYPE_URL = 'type.googleapis.com/envoy.service.discovery.v3.DiscoveryResponse';
const SECRET_TYPE_URL = 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret';

export const ADS_CLUSTER = 'skein-controller';
export const ADMIN_CLUSTER = 'skein-envoy-admin';
export const PROMETHEUS_LISTENER = 'skein-prometheus';
export const ENVOY_READY_LISTENER = 'skein-envoy-ready';
export const ADS_CERT_SECRET = 'skein-ads-client-cert';
export const ADS_CA_SECRET = 'skein-ads-ca';

export interface ControllerAddress {
  /** DNS name of the controller Service, also the SAN its serving certificate must carry. */
  host: string;
  port: number;
}

/** `skein-controller.<ns>.svc.<cluster-domain>:15128`. */
export function controllerAddress(
  controlPlaneNamespace: string,
  clusterDomain = 'cluster.local',
  serviceName = 'skein-controller',
): ControllerAddress {
  return { host: `${serviceName}.${controlPlaneNamespace}.svc.${clusterDomain}`, port: PORT_ADS };
}

/** Which ADS protocol the sidecar speaks: state of the world or incremental (Delta). */
export type XdsTransport = 'sotw' | 'delta';
export const XDS_TRANSPORTS: readonly XdsTransport[] = ['sotw', 'delta'];
export const DEFAULT_XDS_TRANSPORT: XdsTransport = 'sotw';

/**
 * The sidecar's default ceiling on open downstream connections (inbound from
 * mesh peers plus the app's own outbound connections, which iptables hands to
 * the outbound listener). 50,000 is the global limit of Envoy's edge-proxy
 * best-practice example: far above what one pod's traffic needs, yet it makes
 * Envoy refuse connections at accept once reached, instead of running out of
 * file descriptors or memory (each connection holds buffers) under a flood.
 */
export const DEFAULT_MAX_DOWNSTREAM_CONNECTIONS = 50_000;
/** int32: exact in JSON and JavaScript, and far beyond any process's file descriptors. */
export const MAX_DOWNSTREAM_CONNECTIONS_LIMIT = 2_147_483_647;

export interface BootstrapOptions {
  /** The proxy certificate CN `<uuid>.sidecar.<sa>.<ns>.<trust-domain>`; the controller trusts the CN, not this. */
  nodeId: string;
  /** `<sa>.<ns>`: groups proxies of one workload identity in Envoy stats. */
  nodeCluster: string;
  controller: ControllerAddress;
  probes?: ProbeForwards;
  /** Where the bootstrap Secret is mounted. */
  mountPath?: string;
  /** Default DEFAULT_XDS_TRANSPORT. */
  xdsTransport?: XdsTransport;
  /** Default DEFAULT_MAX_DOWNSTREAM_CONNECTIONS. */
  maxDownstreamConnections?: number;
  /** Serve ENVOY_READY_PATH on PORT_ENVOY_READINESS for kubelet's probes of the Envoy container. */
  envoyReadiness?: boolean;
}

function file(mountPath: string, key: string): string {
  return `${mountPath}/${key}`;
}

/** File-based SDS: Envoy watches `dir` for the atomic swap kubelet does on Secret updates. */
function pathSds(name: string, mountPath: string, key: string): ProtoObject {
  return {
    name,
    sds_config: {
      path_config_source: { path: file(mountPath, key), watched_directory: { path: mountPath } },
      resource_api_version: 'V3',
    },
  };
}

function staticCluster(name: string, port: number): ProtoObject {
  return {
    name,
    type: 'STATIC',
    load_assignment: {
      cluster_name: name,
      endpoints: [{ lb_endpoints: [{ endpoint: { address: socketAddress('127.0.0.1', port) } }] }],
    },
  };
}

function adsCluster(o: BootstrapOptions, mountPath: string): ProtoObject {
  return {
    name: ADS_CLUSTER,
    // The controller is a Service name: resolve it and follow its addresses.
    type: 'STRICT_DNS',
    // gRPC needs HTTP/2 to the controller.
    typed_extension_protocol_options: {
      [ExtName.HttpProtocolOptions]: typed(AnyType.HttpProtocolOptions, {
        explicit_http_config: { http2_protocol_options: {} },
      }),
    },
    load_assignment: {
      cluster_name: ADS_CLUSTER,
      endpoints: [
        { lb_endpoints: [{ endpoint: { address: socketAddress(o.controller.host, o.controller.port) } }] },
      ],
    },
    transport_socket: {
      name: ExtName.Tls,
      typed_config: typed(AnyType.UpstreamTlsContext, {
        sni: o.controller.host,
        common_tls_context: {
          // The controller requires a client certificate (ADS is mTLS) and reads the proxy identity from its CN.
          tls_certificate_sds_secret_configs: [pathSds(ADS_CERT_SECRET, mountPath, SecretKey.adsCertSds)],
          combined_validation_context: {
            // Only skein's CA, and only the controller's Service name: another mesh workload's cert must not pass.
            default_validation_context: {
              match_typed_subject_alt_names: [{ san_type: 'DNS', matcher: { exact: o.controller.host } }],
            },
            validation_context_sds_secret_config: pathSds(ADS_CA_SECRET, mountPath, SecretKey.adsCaSds),
          },
        },
      }),
    },
  };
}

function httpListener(name: string, port: number, routes: ProtoObject[]): ProtoObject {
  return {
    name,
    address: socketAddress('0.0.0.0', port),
    filter_chains: [
      {
        filters: [
          {
            name: ExtName.HttpConnectionManager,
            typed_config: typed(AnyType.HttpConnectionManager, {
              stat_prefix: name,
              route_config: { name, virtual_hosts: [{ name, domains: ['*'], routes }] },
              http_filters: [{ name: ExtName.Router, typed_config: typed(AnyType.Router) }],
            }),
          },
        ],
      },
    ],
  };
}

export function probeClusterName(targetPort: number): string {
  return `skein-probe-local-${targetPort}`;
}

function probeListeners(http: readonly HttpProbeForward[], tcp: readonly TcpProbeForward[]): ProtoObject[] {
  const byPort = new Map<number, HttpProbeForward[]>();
  for (const h of http) byPort.set(h.listenerPort, [...(byPort.get(h.listenerPort) ?? []), h]);
  const listeners: ProtoObject[] = [];
  for (const [port, forwards] of [...byPort].sort(([a], [b]) => a - b)) {
    listeners.push(
      httpListener(
        `skein-probe-${port}`,
        port,
        forwards.map((f) => ({
          match: { path: f.path },
          // The app sees the path it declared, from 127.0.0.1.
          route: { cluster: probeClusterName(f.targetPort), prefix_rewrite: f.targetPath },
        })),
      ),
    );
  }
  for (const t of tcp) {
    const name = `skein-probe-${t.listenerPort}`;
    listeners.push({
      name,
      address: socketAddress('0.0.0.0', t.listenerPort),
      filter_chains: [
        {
          filters: [
            {
              name: ExtName.TcpProxy,
              typed_config: typed(AnyType.TcpProxy, {
                stat_prefix: name,
                cluster: probeClusterName(t.targetPort),
              }),
            },
          ],
        },
      ],
    });
  }
  return listeners;
}

/**
 * Kubelet's view of Envoy's readiness. Admin `/ready` answers 200 only in
 * state LIVE (initial CDS/LDS applied, or their initial_fetch_timeout passed)
 * and 503 while initialising or draining; admin binds 127.0.0.1, so this
 * plaintext listener forwards the one path, and nothing else of admin is
 * exposed. Static listeners start accepting only once Envoy's init completes,
 * so until then the probe's connection is refused, which fails it too.
 */
function envoyReadyListener(): ProtoObject {
  return httpListener(ENVOY_READY_LISTENER, PORT_ENVOY_READINESS, [
    { match: { path: ENVOY_READY_PATH }, route: { cluster: ADMIN_CLUSTER, prefix_rewrite: '/ready' } },
  ]);
}

/** The overload manager with only the global downstream connection limit (no other monitor or action). */
function overloadManager(maxConnections: number): ProtoObject {
  return {
    resource_monitors: [
      {
        name: ExtName.GlobalDownstreamMaxConnections,
        typed_config: typed(AnyType.DownstreamConnections, {
          // PGV: int64 gt 0 (downstream_connections.proto).
          max_active_downstream_connections: maxConnections,
        }),
      },
    ],
  };
}

/**
 * The ADS stream's retry backoff in the bootstrap (EnvoyGrpc.retry_policy.retry_back_off). Envoy's
 * JitteredExponentialBackOffStrategy waits a uniformly random time below an interval that starts
 * at `baseMs` and doubles up to `maxMs` ("full jitter"), so proxies that lost the same controller
 * come back spread over up to `maxMs`, not at once; and once a controller is back, every proxy
 * retries within `maxMs`. (The benchmark's fleet mirrors it: test/bench/fleet-client.ts.)
 */
export const ADS_RETRY_BACKOFF = { baseMs: 250, maxMs: 2000 } as const;

/** The Bootstrap message (envoy.config.bootstrap.v3.Bootstrap). */
export function envoyBootstrap(o: BootstrapOptions): ProtoObject {
  const mountPath = o.mountPath ?? BOOTSTRAP_MOUNT_PATH;
  const probes = o.probes ?? { http: [], tcp: [] };
  const probeTargets = [...new Set([...probes.http, ...probes.tcp].map((p) => p.targetPort))].sort(
    (a, b) => a - b,
  );
  const ads = { ads: {}, resource_api_version: 'V3' };
  return {
    node: { id: o.nodeId, cluster: o.nodeCluster },
    // Admin stays on loopback: it can change the proxy's state.
    admin: { address: socketAddress('127.0.0.1', PORT_ENVOY_ADMIN) },
    dynamic_resources: {
      ads_config: {
        api_type: (o.xdsTransport ?? DEFAULT_XDS_TRANSPORT) === 'delta' ? 'DELTA_GRPC' : 'GRPC',
        transport_api_version: 'V3',
        grpc_services: [
          {
            envoy_grpc: {
              cluster_name: ADS_CLUSTER,
              // How soon Envoy retries a broken xDS stream (a controller restart or failover):
              // jittered exponential from 250 ms, at most 2 s apart, instead of Envoy's default
              // 500 ms to 30 s, which left proxies 4-14 s without a controller after a restart.
              // (GrpcService.EnvoyGrpc.retry_policy: "only supported for xDS gRPC streams".)
              retry_policy: {
                retry_back_off: {
                  base_interval: `${ADS_RETRY_BACKOFF.baseMs / 1000}s`,
                  max_interval: `${ADS_RETRY_BACKOFF.maxMs / 1000}s`,
                },
              },
            },
          },
        ],
        // xDS: only a stream's first request must carry the node. Without this Envoy
        // resends its whole Node (~61 KB with 1.40's extension list) in every ACK.
        // Envoy's Delta client honours it from 1.38 on (envoyproxy/envoy#42650).
        set_node_on_first_message_only: true,
      },
      lds_config: ads,
      cds_config: ads,
    },
    // Per-edge golden signals for the controller (pkg/stats, docs/design.md): streamed on the ADS
    // cluster's mTLS connection, so the controller knows the sender from its certificate.
    // Cumulative counters (diffed per stream by the controller: a lost or repeated message
    // skews nothing), the latency histogram as buckets only (no summary to decode).
    stats_sinks: [
      {
        name: ExtName.MetricsServiceSink,
        typed_config: typed(AnyType.MetricsServiceConfig, {
          grpc_service: { envoy_grpc: { cluster_name: ADS_CLUSTER } },
          transport_api_version: 'V3',
          histogram_emit_mode: 'HISTOGRAM',
        }),
      },
    ],
    overload_manager: overloadManager(o.maxDownstreamConnections ?? DEFAULT_MAX_DOWNSTREAM_CONNECTIONS),
    static_resources: {
      listeners: [
        // Only the Prometheus endpoint of the admin interface is exposed to scrapers.
        httpListener(PROMETHEUS_LISTENER, PORT_PROMETHEUS_LISTENER, [
          { match: { path: '/stats/prometheus' }, route: { cluster: ADMIN_CLUSTER } },
        ]),
        ...(o.envoyReadiness ? [envoyReadyListener()] : []),
        ...probeListeners(probes.http, probes.tcp),
      ],
      clusters: [
        adsCluster(o, mountPath),
        staticCluster(ADMIN_CLUSTER, PORT_ENVOY_ADMIN),
        ...probeTargets.map((p) => staticCluster(probeClusterName(p), p)),
      ],
    },
  };
}

/** The SDS files (DiscoveryResponse form) the ADS cluster's TLS context points at. */
export function adsSdsFiles(mountPath = BOOTSTRAP_MOUNT_PATH): { cert: ProtoObject; ca: ProtoObject } {
  return {
    cert: {
      resources: [
        typed(SECRET_TYPE_URL, {
          name: ADS_CERT_SECRET,
          tls_certificate: {
            certificate_chain: { filename: file(mountPath, SecretKey.cert) },
            private_key: { filename: file(mountPath, SecretKey.key) },
            watched_directory: { path: mountPath },
          },
        }),
      ],
    },
    ca: {
      resources: [
        typed(SECRET_TYPE_URL, {
          name: ADS_CA_SECRET,
          validation_context: {
            trusted_ca: { filename: file(mountPath, SecretKey.ca) },
            watched_directory: { path: mountPath },
          },
        }),
      ],
    },
  };
}
