// Open Service Mesh's osm-controller v1.2.4 (built unmodified by test/osm/build.sh)
// as the benchmark's peer, on the same API server as skein. What running it outside
// a cluster takes, each from OSM v1.2.4's source
// (https://github.com/openservicemesh/osm/tree/v1.2.4):
// - no --kubeconfig flag: cmd/osm-controller builds the in-cluster config
//   (clientcmd.BuildConfigFromFlags("", "")), i.e. env KUBERNETES_SERVICE_HOST/PORT and
//   token + ca.crt under /var/run/secrets/kubernetes.io/serviceaccount/. It runs in a
//   private mount namespace (unshare) where that directory is a bind mount of a temp dir;
//   the host's is untouched.
// - it reads its own Pod (env CONTROLLER_POD_NAME) in --osm-namespace to record events.
// - fixed ports on all interfaces (pkg/constants: ADS 15128, HTTP 9091 with
//   /health/ready, validating webhook 9093): it must run alone on them.
// - its CRDs (cmd/osm-bootstrap/crds, read from the Go module cache) and a MeshConfig
//   `osm-mesh-config` (what osm-bootstrap creates from the chart's preset-mesh-config).
// - --certificate-manager tresor creates Secret osm-ca-bundle (ca.crt, private.key):
//   the fleet's client certificates are issued from that root.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeApiError, type KubeClient } from '../../pkg/registry/kube/client.js';
import type { ClusterEndpoint } from '../support/cluster.js';
import { type Component, spawnComponent } from '../support/component.js';
import { sleep } from '../support/processes.js';
import type { PeerLabels } from './kube-topology.js';
import { cpuSeconds, rssBytes } from './proc.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const OSM_DIR = path.join(repoRoot, 'test', 'osm');
export const OSM_BIN = path.join(OSM_DIR, 'bin', 'osm-controller');

export const OSM_NAMESPACE = 'osm-system';
export const OSM_MESH = 'osm';
export const OSM_CA_SECRET = 'osm-ca-bundle';
const OSM_POD = 'osm-controller';
/** pkg/constants/constants.go (v1.2.4). */
export const OSM_PORTS = { ads: 15128, http: 9091, webhook: 9093 } as const;
/** The ADS serving certificate's only name: CN "ads" + "." + trust domain (cmd/osm-controller). */
export const OSM_ADS_SERVER_NAME = 'ads.cluster.local';

/**
 * Namespaces join OSM's mesh by label openservicemesh.io/monitored-by=<mesh>
 * (pkg/constants OSMKubeResourceMonitorAnnotation); a proxy's pod carries its UUID
 * in label osm-proxy-uuid (EnvoyUniqueIDLabelName), which the ADS server looks up
 * from the UUID in the client certificate's CN
 * `<uuid>.<kind>.<service-account>.<namespace>.<trust-domain>`
 * (pkg/envoy/ads/stream.go getCertificateCommonNameMeta) — skein's CN format too.
 */
export const OSM_LABELS: PeerLabels = {
  namespace: { 'openservicemesh.io/monitored-by': OSM_MESH },
  proxyUuid: 'osm-proxy-uuid',
};

/** The flags the chart's osm-deployment.yaml passes by default, and the two running outside a cluster needs. */
export const OSM_FLAGS: readonly string[] = [
  ...['--verbosity', 'error'],
  ...['--osm-namespace', OSM_NAMESPACE],
  ...['--osm-version', 'v1.2.4'],
  ...['--osm-service-account', 'osm'],
  ...['--mesh-name', OSM_MESH],
  ...['--validator-webhook-config', `osm-validator-mesh-${OSM_MESH}`],
  ...['--ca-bundle-secret-name', OSM_CA_SECRET],
  ...['--certificate-manager', 'tresor'],
  ...['--trust-domain', 'cluster.local'],
  '--enable-mesh-root-certificate=false',
  '--enable-reconciler=false',
  // Its validating webhook (failurePolicy Fail) is not reachable from the API server here.
  '--validate-traffic-target=false',
];

/** The pinned version (test/osm/go.mod). */
export function osmVersion(): string {
  const m = /^require github\.com\/openservicemesh\/osm (v\S+)$/m.exec(
    readFileSync(path.join(OSM_DIR, 'go.mod'), 'utf8'),
  );
  if (!m?.[1]) throw new Error('test/osm/go.mod pins no github.com/openservicemesh/osm version');
  return m[1];
}

/** The module's directory in the Go module cache (downloaded when missing; go.sum checks it). */
export function osmModuleDir(): string {
  const out = execFileSync(
    'go',
    ['mod', 'download', '-json', `github.com/openservicemesh/osm@${osmVersion()}`],
    {
      cwd: OSM_DIR,
      encoding: 'utf8',
      env: { ...process.env, GOFLAGS: '-mod=mod' },
    },
  );
  const dir: unknown = JSON.parse(out).Dir;
  if (typeof dir !== 'string' || !existsSync(dir)) throw new Error(`go mod download: no directory in ${out}`);
  return dir;
}

/**
 * OSM's own CRDs that skein's chart does not define (config. and policy.openservicemesh.io);
 * the SMI ones are skein's, which serve the same versions (TrafficTarget v1alpha3,
 * HTTPRouteGroup/TCPRoute v1alpha4, TrafficSplit v1alpha2).
 */
export async function osmCrdFiles(): Promise<string[]> {
  const dir = path.join(osmModuleDir(), 'cmd', 'osm-bootstrap', 'crds');
  return (await readdir(dir))
    .filter((f) => f.endsWith('.yaml') && !f.startsWith('smi_'))
    .map((f) => path.join(dir, f));
}

/**
 * What osm-bootstrap would create from the chart's preset-mesh-config.json with the
 * chart's default values (charts/osm/values.yaml), except the traffic mode the run
 * asks for and the controller's log level (error: skein logs at warn, and neither
 * logs per proxy at that level).
 */
export function osmMeshConfig(permissive: boolean): Record<string, unknown> {
  return {
    apiVersion: 'config.openservicemesh.io/v1alpha2',
    kind: 'MeshConfig',
    metadata: { name: 'osm-mesh-config', namespace: OSM_NAMESPACE },
    spec: {
      sidecar: {
        enablePrivilegedInitContainer: false,
        logLevel: 'error',
        maxDataPlaneConnections: 0,
        configResyncInterval: '0s',
        localProxyMode: 'Localhost',
      },
      traffic: {
        enableEgress: true,
        enablePermissiveTrafficPolicyMode: permissive,
        outboundPortExclusionList: [],
        inboundPortExclusionList: [],
        outboundIPRangeExclusionList: [],
        outboundIPRangeInclusionList: [],
        networkInterfaceExclusionList: [],
      },
      observability: { enableDebugServer: false, osmLogLevel: 'error', tracing: { enable: false } },
      certificate: { serviceCertValidityDuration: '24h', certKeyBitSize: 2048 },
      featureFlags: {
        enableWASMStats: true,
        enableEgressPolicy: true,
        enableSnapshotCacheMode: false,
        enableAsyncProxyServiceMapping: false,
        enableIngressBackendPolicy: true,
        enableEnvoyActiveHealthChecks: false,
        enableRetryPolicy: false,
      },
    },
  };
}

/** OSM's namespace, account, Pod (it reads its own) and MeshConfig, created before it starts. */
export function osmObjects(permissive: boolean): Record<string, unknown>[] {
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: OSM_NAMESPACE } },
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'osm', namespace: OSM_NAMESPACE } },
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: OSM_POD, namespace: OSM_NAMESPACE, labels: { app: 'osm-controller' } },
      spec: {
        serviceAccountName: 'osm',
        automountServiceAccountToken: false,
        containers: [{ name: 'osm-controller', image: 'openservicemesh/osm-controller:v1.2.4' }],
      },
    },
    osmMeshConfig(permissive),
  ];
}

function portInUse(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

function httpStatus(port: number, urlPath: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: urlPath, timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

/** The first of OSM's fixed ports something on this machine already listens on, if any. */
export async function busyOsmPort(): Promise<number | undefined> {
  for (const port of Object.values(OSM_PORTS)) if (await portInUse(port)) return port;
  return undefined;
}

/** A running osm-controller; cpu() and rss() read its own /proc entries. */
export class OsmProcess {
  private constructor(
    private readonly component: Component,
    private readonly dir: string,
  ) {}

  /**
   * Starts osm-controller against `cluster` (as its admin: system:masters stands in for
   * the chart's ClusterRole) and resolves once /health/ready answers 200. The caller
   * has created osmObjects() and the CRDs.
   */
  static async start(cluster: ClusterEndpoint, timeoutMs = 60_000): Promise<OsmProcess> {
    if (!existsSync(OSM_BIN)) throw new Error(`${OSM_BIN} is missing: run \`make osm-bin\` first`);
    for (const port of Object.values(OSM_PORTS))
      if (await portInUse(port))
        throw new Error(
          `port ${port} is in use: osm-controller binds it on every interface and must run alone`,
        );
    if (!existsSync('/var/run/secrets'))
      throw new Error('/var/run/secrets is missing: osm-controller needs it as a mount point');
    const dir = await mkdtemp(path.join(tmpdir(), 'skein-osm-'));
    const sa = path.join(dir, 'secrets', 'kubernetes.io', 'serviceaccount');
    await mkdir(sa, { recursive: true });
    await writeFile(path.join(sa, 'token'), cluster.adminToken);
    await writeFile(path.join(sa, 'ca.crt'), cluster.caPem);
    await writeFile(path.join(sa, 'namespace'), OSM_NAMESPACE);
    const server = new URL(cluster.server);
    // unshare execs sh, which bind-mounts the directory in its private mount namespace and
    // execs osm-controller: the child's pid is osm-controller's own.
    const component = spawnComponent(
      'osm-controller',
      '/usr/bin/unshare',
      [
        '--mount',
        '--propagation',
        'private',
        '/bin/sh',
        '-c',
        'mount --bind "$0" /var/run/secrets && exec "$@"',
        path.join(dir, 'secrets'),
        OSM_BIN,
        ...OSM_FLAGS,
      ],
      false,
      {
        lifeline: false,
        buildHint: 'make osm-bin',
        env: {
          KUBERNETES_SERVICE_HOST: server.hostname,
          KUBERNETES_SERVICE_PORT: server.port,
          CONTROLLER_POD_NAME: OSM_POD,
        },
      },
    );
    const p = new OsmProcess(component, dir);
    const deadline = Date.now() + timeoutMs;
    try {
      for (;;) {
        if (!component.running) throw new Error(`osm-controller exited: ${component.describe()}`);
        if ((await httpStatus(OSM_PORTS.http, '/health/ready')) === 200) return p;
        if (Date.now() > deadline)
          throw new Error(`osm-controller not ready in ${timeoutMs} ms: ${component.describe()}`);
        await sleep(100);
      }
    } catch (err) {
      await p.stop();
      throw err;
    }
  }

  get pid(): number {
    const pid = this.component.child.pid;
    if (pid === undefined) throw new Error('osm-controller has no pid');
    return pid;
  }

  cpu(): number {
    return cpuSeconds(this.pid) ?? Number.NaN;
  }

  rss(): number {
    return rssBytes(this.pid) ?? Number.NaN;
  }

  /** Log lines at warn level and above (zerolog JSON). */
  problems(): string[] {
    return this.component.tail.filter((l) => /"level":"(warn|error|fatal|panic)"/.test(l));
  }

  /** SIGKILL (the reconnect storm's crash); resolves once the process is gone. */
  async crash(): Promise<void> {
    this.component.child.kill('SIGKILL');
    await this.component.exited;
  }

  async stop(): Promise<void> {
    await this.component.stop();
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** Waits until tresor has written osm-ca-bundle (on first start). */
export async function waitForOsmCa(api: KubeClient, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await api.request('GET', `/api/v1/namespaces/${OSM_NAMESPACE}/secrets/${OSM_CA_SECRET}`);
      return;
    } catch (err) {
      if (!(err instanceof KubeApiError && err.status === 404)) throw err;
      if (Date.now() > deadline) throw new Error(`Secret ${OSM_CA_SECRET} did not appear in ${timeoutMs} ms`);
      await sleep(200);
    }
  }
}
