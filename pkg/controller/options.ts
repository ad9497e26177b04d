import { isIP } from 'node:net';
import { parseArgs } from 'node:util';
import {
  DEFAULT_NATIVE_SIDECARS_MODE,
  isNativeSidecarsMode,
  type NativeSidecarsMode,
} from '../injector/layout.js';
import {
  DEFAULT_MESH_NAME,
  PORT_ADS,
  PORT_CONTROLLER_HTTP,
  PORT_REST_XDS,
  PORT_WEBHOOK,
} from '../mesh/constants.js';
import { parseDuration } from '../mesh/duration.js';
import { VERSION } from '../version/version.js';
import { DEFAULT_STREAM_LIMITS, type StreamLimits } from '../xds/server/limits.js';

export interface ControllerOptions {
  /** Local mode: directory of manifests. */
  localDir?: string;
  /** Kubernetes mode with a kubeconfig file (its current context). */
  kubeconfig?: string;
  /** Kubernetes mode with the pod's service account (neither --local nor --kubeconfig, in a pod). */
  inCluster?: boolean;
  stateDir: string;
  meshName: string;
  /** Control-plane namespace (where the MeshConfig lives). */
  namespace: string;
  host: string;
  adsPort: number;
  /** Plaintext ADS for proxyless gRPC; only when asked for. */
  insecureAdsPort?: number;
  httpPort: number;
  minPushIntervalMs?: number;
  /**
   * Write workload certificates and proxyless bootstraps under the state dir
   * in Kubernetes mode too (always on in local mode): for running workloads
   * outside the cluster against a real API server, as tests do.
   */
  workloadFiles?: boolean;
  /** --log-level, pinning the level; undefined: MeshConfig observability.logLevel, else SKEIN_LOG_LEVEL, else info. */
  logLevel?: string;
  /** Serve /debug/* and the web UI whatever the MeshConfig says. */
  debug?: boolean;
  /** REST xDS over HTTPS with client-certificate auth; undefined = off (local mode unless given). */
  restXdsPort?: number;
  /** The sidecar-injection webhook's port; undefined = no webhook (local mode unless given). */
  webhookPort?: number;
  /** The MutatingWebhookConfiguration whose caBundle the controller keeps current. */
  webhookConfigName: string;
  /** The controller's Service: its DNS names go into the ADS and webhook serving certificates. */
  serviceName: string;
  /** Images the webhook injects. */
  envoyImage: string;
  initImage: string;
  /** Image with skein-agent, injected into proxyless pods (the controller's own image). */
  agentImage: string;
  /**
   * Where the webhook puts Envoy: `auto` (native sidecar on Kubernetes >= 1.29,
   * read from the API server at start; classic in local mode), `always`, `never`.
   * A pod's `skein.dev/native-sidecar` annotation wins (pkg/injector/layout.ts).
   */
  nativeSidecars: NativeSidecarsMode;
  /**
   * Kubernetes mode: serve skein's ingress gateway (Ingresses of class skein): the webhook
   * gives pods labelled skein.dev/gateway=ingress in the control-plane namespace the
   * gateway identity, and the controller watches kubernetes.io/tls Secrets for its TLS.
   */
  ingressGateway?: boolean;
  /** How long after admission a bootstrap Secret with no pod is deleted (default 5 min; pkg/injector/secret-gc.ts). */
  bootstrapOrphanGraceMs?: number;
  /** Kubernetes mode: the Secret in the control-plane namespace holding the CA (ca.crt, ca.key). */
  caSecret: string;
  /** Root rotation: how long a stage waits after its last Secret/file write for kubelet and file watchers (default 90 s). */
  caRotationDeliveryMs?: number;
  /** Extra SANs (IP or DNS) for the serving certificates. */
  extraSans: string[];
  /** Per-ADS-stream limits given as flags; the rest take DEFAULT_STREAM_LIMITS. */
  adsLimits?: Partial<StreamLimits>;
  /**
   * Kubernetes mode: singleton work (caBundle, Events, status, Secret collection) only on
   * the replica holding the Lease (pkg/leader); undefined = off (local mode, --leader-elect=false).
   */
  leaderElection?: LeaderElectionTimings;
}

export interface LeaderElectionTimings {
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
}

/** client-go's defaults (tools/leaderelection): 15 s lease, 10 s renew deadline, 2 s retry. */
export const DEFAULT_LEADER_ELECTION: LeaderElectionTimings = {
  leaseDurationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
};

/** The --ads-* limit flags and the StreamLimits field each sets. */
const LIMIT_FLAGS = {
  'ads-max-names': 'maxNamesPerType',
  'ads-max-name-length': 'maxNameLength',
  'ads-request-rate': 'requestsPerSecond',
  'ads-name-rate': 'namesPerSecond',
  'ads-max-message-bytes': 'maxMessageBytes',
} as const satisfies Record<string, keyof StreamLimits>;

/** The newest Envoy the test suite runs (test/envoybin/fetch.sh; the oldest supported is 1.36.2). */
export const DEFAULT_ENVOY_IMAGE = 'envoyproxy/envoy:v1.40.0';
export const DEFAULT_INIT_IMAGE = `skein/init:${VERSION}`;
export const DEFAULT_AGENT_IMAGE = `skein/controller:${VERSION}`;
export const DEFAULT_SERVICE_NAME = 'skein-controller';
export const DEFAULT_CA_SECRET = 'skein-ca';

/** `skein-sidecar-injector-<mesh>`: cluster-scoped, so the mesh name keeps two meshes apart. */
export function defaultWebhookConfigName(meshName: string): string {
  return `skein-sidecar-injector-${meshName}`;
}

export const CONTROLLER_USAGE = `skein-controller — the skein service-mesh control plane

Usage:
  skein-controller --local <dir> [flags]          manifests in a directory, no cluster
  skein-controller --kubeconfig <path> [flags]    a Kubernetes cluster
  skein-controller [flags]                        in a pod: the pod's service account

Flags:
  --local <dir>               Local mode: read Kubernetes-style manifests from <dir> and watch it
  --kubeconfig <path>         Kubernetes mode: connect with this kubeconfig (its current context)
  --state-dir <dir>           Where the CA is kept, and in local mode workload certs and bootstraps (default .state)
  --mesh-name <name>          Mesh name; namespaces join with skein.dev/monitored-by=<name> (default ${DEFAULT_MESH_NAME})
  --namespace <ns>            Control-plane namespace holding the MeshConfig (default skein-system)
  --host <ip>                 Address to listen on (default 0.0.0.0)
  --ads-port <port>           ADS over mTLS (default ${PORT_ADS})
  --insecure-ads-port <port>  Also serve plaintext ADS for proxyless gRPC (off unless given)
  --http-port <port>          Health endpoints /healthz, /readyz (default ${PORT_CONTROLLER_HTTP})
  --min-push-interval <dur>   Minimum interval between pushes to one proxy (default from MeshConfig, else 100ms)
  --workload-files            Kubernetes mode: also write workload certs and proxyless bootstraps to the
                              state dir, as local mode does (development and tests; off by default)
  --webhook-port <port>       Sidecar-injection webhook over TLS (default ${PORT_WEBHOOK} in Kubernetes mode;
                              local mode: off unless given)
  --webhook-config-name <n>   MutatingWebhookConfiguration whose caBundle is kept current
                              (default skein-sidecar-injector-<mesh-name>)
  --service-name <name>       The controller's Service; its DNS names go into the serving certificates
                              and the injected bootstrap (default ${DEFAULT_SERVICE_NAME})
  --envoy-image <image>       Envoy image the webhook injects (default ${DEFAULT_ENVOY_IMAGE})
  --init-image <image>        Traffic-redirection init image the webhook injects (default ${DEFAULT_INIT_IMAGE})
  --agent-image <image>       skein-agent image for pods annotated skein.dev/proxyless (default ${DEFAULT_AGENT_IMAGE})
  --native-sidecars <mode>    auto|always|never: inject Envoy as a native sidecar (an init container with
                              restartPolicy Always, Kubernetes >= 1.29) or as a regular container; auto
                              asks the API server's version at start, classic if it cannot (default
                              ${DEFAULT_NATIVE_SIDECARS_MODE}; local mode: classic unless always). The pod annotation
                              skein.dev/native-sidecar: "true"|"false" wins
  --ingress-gateway           Kubernetes mode: serve skein's ingress gateway (Ingresses with
                              ingressClassName skein); needs list/watch on Secrets for their TLS
                              (chart: ingressGateway.enabled)
  --ca-rotation-delivery <dur>
                              Root CA rotation: a stage ends this long after its last bootstrap Secret or
                              workload file write, for kubelet and file watchers to deliver it (default 90s)
  --bootstrap-orphan-grace <dur>
                              Kubernetes mode: delete a bootstrap Secret whose pod never got stored (a later
                              admission step refused it) this long after admission (default 5m)
  --leader-elect <bool>       Kubernetes mode: run the singleton work (caBundle upkeep, Events, status,
                              bootstrap Secret collection) only on the replica holding the Lease
                              skein-controller-leader; every replica serves xDS (default true)
  --leader-elect-lease-duration <dur>, --leader-elect-renew-deadline <dur>, --leader-elect-retry-period <dur>
                              The election's timings (default 15s, 10s, 2s, as client-go's)
  --ca-secret <name>          Kubernetes mode: Secret in the control-plane namespace holding the CA; created
                              when missing, shared by every replica (default ${DEFAULT_CA_SECRET})
  --extra-san <name>          Extra IP or DNS name for the serving certificates (repeatable)
  --debug                     Serve /debug/* and the web UI /ui/ on the HTTP port whatever the MeshConfig
                              says (always on in local mode)
  --rest-xds-port <port>      REST xDS (POST /v3/discovery:<type>) over HTTPS; the client certificate's CN
                              must be the node.id (default ${PORT_REST_XDS} in Kubernetes mode; local mode: off
                              unless given, and served on the HTTP port with node.id as the identity)
  --ads-max-names <n>         Resource names one ADS stream may subscribe to per type (default ${DEFAULT_STREAM_LIMITS.maxNamesPerType})
  --ads-max-name-length <n>   Bytes in one resource name (default ${DEFAULT_STREAM_LIMITS.maxNameLength})
  --ads-request-rate <n>      Requests per second one ADS stream may send, twice as many at once (default ${DEFAULT_STREAM_LIMITS.requestsPerSecond})
  --ads-name-rate <n>         Resource names per second one ADS stream may send (default ${DEFAULT_STREAM_LIMITS.namesPerSecond})
  --ads-max-message-bytes <n> Largest ADS request message (default ${DEFAULT_STREAM_LIMITS.maxMessageBytes})
  --log-level <level>         trace|debug|info|warn|error, fixed for the process; without it MeshConfig
                              observability.logLevel applies while set, else SKEIN_LOG_LEVEL, else info
  -h, --help                  Show this help
`;

export class UsageError extends Error {
  override name = 'UsageError';
}

function port(name: string, value: string | undefined, fallback?: number): number | undefined {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new UsageError(`--${name}: ${JSON.stringify(value)} is not a port`);
  return n;
}

function nonEmpty(name: string, value: string | undefined): string | undefined {
  if (value === '') throw new UsageError(`--${name}: must not be empty`);
  return value;
}

// RFC 1123 host names (what a certificate DNS SAN holds), with an optional leading `*.` wildcard.
const DNS_NAME = /^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/i;

function san(value: string): string {
  if (isIP(value) !== 0 || (value.length <= 253 && DNS_NAME.test(value))) return value;
  throw new UsageError(`--extra-san: ${JSON.stringify(value)} is neither an IP address nor a DNS name`);
}

/**
 * Parses controller flags; returns 'help' for -h/--help. Throws UsageError with
 * the flag at fault. `env` decides in-cluster mode (KUBERNETES_SERVICE_HOST).
 */
export function parseControllerArgs(
  argv: string[],
  env: Record<string, string | undefined> = process.env,
): ControllerOptions | 'help' {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
  const v = parsed.values;
  if (v.help) return 'help';
  if (v.local !== undefined && v.kubeconfig !== undefined)
    throw new UsageError('--local and --kubeconfig exclude each other: pick one source of truth');
  if (v.local === '') throw new UsageError('--local: needs a directory');
  if (v.kubeconfig === '') throw new UsageError('--kubeconfig: needs a file');
  const inCluster = v.local === undefined && v.kubeconfig === undefined && !!env['KUBERNETES_SERVICE_HOST'];
  if (v.local === undefined && v.kubeconfig === undefined && !inCluster)
    throw new UsageError('pass --local <dir> or --kubeconfig <path> (in a pod, the service account is used)');
  let minPushIntervalMs: number | undefined;
  if (v['min-push-interval'] !== undefined) {
    try {
      minPushIntervalMs = parseDuration(v['min-push-interval']);
    } catch (err) {
      throw new UsageError(`--min-push-interval: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  let bootstrapOrphanGraceMs: number | undefined;
  if (v['bootstrap-orphan-grace'] !== undefined) {
    try {
      bootstrapOrphanGraceMs = parseDuration(v['bootstrap-orphan-grace']);
    } catch (err) {
      throw new UsageError(`--bootstrap-orphan-grace: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  let caRotationDeliveryMs: number | undefined;
  if (v['ca-rotation-delivery'] !== undefined) {
    try {
      caRotationDeliveryMs = parseDuration(v['ca-rotation-delivery']);
    } catch (err) {
      throw new UsageError(`--ca-rotation-delivery: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  const nativeSidecars = v['native-sidecars'] ?? DEFAULT_NATIVE_SIDECARS_MODE;
  if (!isNativeSidecarsMode(nativeSidecars))
    throw new UsageError(
      `--native-sidecars: ${JSON.stringify(nativeSidecars)} is not one of auto, always, never`,
    );
  const options: ControllerOptions = {
    ...(v.local !== undefined ? { localDir: v.local } : {}),
    ...(v.kubeconfig !== undefined ? { kubeconfig: v.kubeconfig } : {}),
    ...(inCluster ? { inCluster } : {}),
    stateDir: v['state-dir'] ?? '.state',
    meshName: v['mesh-name'] ?? DEFAULT_MESH_NAME,
    namespace: v.namespace ?? 'skein-system',
    host: v.host ?? '0.0.0.0',
    adsPort: port('ads-port', v['ads-port'], PORT_ADS) ?? PORT_ADS,
    httpPort: port('http-port', v['http-port'], PORT_CONTROLLER_HTTP) ?? PORT_CONTROLLER_HTTP,
    ...(v['log-level'] !== undefined ? { logLevel: v['log-level'] } : {}),
    webhookConfigName:
      nonEmpty('webhook-config-name', v['webhook-config-name']) ??
      defaultWebhookConfigName(v['mesh-name'] ?? DEFAULT_MESH_NAME),
    serviceName: nonEmpty('service-name', v['service-name']) ?? DEFAULT_SERVICE_NAME,
    envoyImage: nonEmpty('envoy-image', v['envoy-image']) ?? DEFAULT_ENVOY_IMAGE,
    initImage: nonEmpty('init-image', v['init-image']) ?? DEFAULT_INIT_IMAGE,
    agentImage: nonEmpty('agent-image', v['agent-image']) ?? DEFAULT_AGENT_IMAGE,
    nativeSidecars,
    caSecret: nonEmpty('ca-secret', v['ca-secret']) ?? DEFAULT_CA_SECRET,
    extraSans: (v['extra-san'] ?? []).map(san),
  };
  const insecure = port('insecure-ads-port', v['insecure-ads-port']);
  if (insecure !== undefined) options.insecureAdsPort = insecure;
  if (minPushIntervalMs !== undefined) options.minPushIntervalMs = minPushIntervalMs;
  if (bootstrapOrphanGraceMs !== undefined) options.bootstrapOrphanGraceMs = bootstrapOrphanGraceMs;
  if (caRotationDeliveryMs !== undefined) options.caRotationDeliveryMs = caRotationDeliveryMs;
  if (v['workload-files']) options.workloadFiles = true;
  if (v['ingress-gateway']) options.ingressGateway = true;
  const webhookPort = port(
    'webhook-port',
    v['webhook-port'],
    inCluster || v.kubeconfig !== undefined ? PORT_WEBHOOK : undefined,
  );
  if (webhookPort !== undefined) options.webhookPort = webhookPort;
  if (v.debug) options.debug = true;
  const restXdsPort = port(
    'rest-xds-port',
    v['rest-xds-port'],
    inCluster || v.kubeconfig !== undefined ? PORT_REST_XDS : undefined,
  );
  if (restXdsPort !== undefined) options.restXdsPort = restXdsPort;
  const limits: Partial<StreamLimits> = {};
  for (const [flag, field] of Object.entries(LIMIT_FLAGS)) {
    const text = v[flag as keyof typeof LIMIT_FLAGS];
    if (text === undefined) continue;
    const n = Number(text);
    if (!Number.isInteger(n) || n < 1)
      throw new UsageError(`--${flag}: ${JSON.stringify(text)} is not a positive integer`);
    limits[field] = n;
  }
  if (Object.keys(limits).length > 0) options.adsLimits = limits;
  const elect = v['leader-elect'] ?? 'true';
  if (elect !== 'true' && elect !== 'false')
    throw new UsageError(`--leader-elect: ${JSON.stringify(elect)} is not true or false`);
  if (elect === 'true' && v.local === undefined) {
    const timing = (flag: string, fallback: number): number => {
      const text = v[flag as 'leader-elect-lease-duration'];
      if (text === undefined) return fallback;
      try {
        return parseDuration(text);
      } catch (err) {
        throw new UsageError(`--${flag}: ${err instanceof Error ? err.message : String(err)}`);
      }
    };
    const t: LeaderElectionTimings = {
      leaseDurationMs: timing('leader-elect-lease-duration', DEFAULT_LEADER_ELECTION.leaseDurationMs),
      renewDeadlineMs: timing('leader-elect-renew-deadline', DEFAULT_LEADER_ELECTION.renewDeadlineMs),
      retryPeriodMs: timing('leader-elect-retry-period', DEFAULT_LEADER_ELECTION.retryPeriodMs),
    };
    // client-go's rules: the leader must give up before the Lease can be taken over.
    if (!(t.renewDeadlineMs < t.leaseDurationMs))
      throw new UsageError(
        '--leader-elect-renew-deadline must be shorter than --leader-elect-lease-duration',
      );
    if (!(t.retryPeriodMs * 1.2 < t.renewDeadlineMs))
      throw new UsageError(
        '--leader-elect-retry-period (x1.2 jitter) must be shorter than --leader-elect-renew-deadline',
      );
    options.leaderElection = t;
  }
  return options;
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    strict: true,
    options: {
      local: { type: 'string' },
      kubeconfig: { type: 'string' },
      'state-dir': { type: 'string' },
      'mesh-name': { type: 'string' },
      namespace: { type: 'string' },
      host: { type: 'string' },
      'ads-port': { type: 'string' },
      'insecure-ads-port': { type: 'string' },
      'http-port': { type: 'string' },
      'min-push-interval': { type: 'string' },
      'log-level': { type: 'string' },
      'workload-files': { type: 'boolean' },
      'ingress-gateway': { type: 'boolean' },
      'webhook-port': { type: 'string' },
      'webhook-config-name': { type: 'string' },
      'service-name': { type: 'string' },
      'envoy-image': { type: 'string' },
      'init-image': { type: 'string' },
      'agent-image': { type: 'string' },
      'native-sidecars': { type: 'string' },
      'ca-secret': { type: 'string' },
      'bootstrap-orphan-grace': { type: 'string' },
      'ca-rotation-delivery': { type: 'string' },
      'leader-elect': { type: 'string' },
      'leader-elect-lease-duration': { type: 'string' },
      'leader-elect-renew-deadline': { type: 'string' },
      'leader-elect-retry-period': { type: 'string' },
      'extra-san': { type: 'string', multiple: true },
      debug: { type: 'boolean' },
      'rest-xds-port': { type: 'string' },
      'ads-max-names': { type: 'string' },
      'ads-max-name-length': { type: 'string' },
      'ads-request-rate': { type: 'string' },
      'ads-name-rate': { type: 'string' },
      'ads-max-message-bytes': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}
