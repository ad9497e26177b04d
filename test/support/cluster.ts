// A real Kubernetes control plane for tests: etcd, kube-apiserver and
// kube-controller-manager built from Go modules by `make cluster-bin` into
// test/cluster/bin/, all on 127.0.0.1, with throwaway certificates, a static
// admin token and a temp dir that stop() removes.
//
// There is no kubelet and no scheduler: tests create Node objects, give pods
// spec.nodeName and mark them Running/Ready themselves (see kube.ts).
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { BuiltinCA } from '../../pkg/certificate/builtin.js';
import { type Component, liveDirs, spawnComponent } from './component.js';
import { freePorts, sleep } from './processes.js';

// dist/test/support/cluster.js → repository root.
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const CLUSTER_BIN_DIR = path.join(repoRoot, 'test', 'cluster', 'bin');

/** Controllers the tests rely on; kube-controller-manager runs only these. */
export const DEFAULT_CONTROLLERS: readonly string[] = [
  'endpointslice-controller',
  'namespace-controller',
  'garbage-collector-controller',
  'serviceaccount-controller',
];

/**
 * Names the state file of a cluster shared by several test processes, written by
 * `test/run.ts` (what `make test` runs) or `cluster-main` once the cluster is up.
 */
export const SHARED_CLUSTER_ENV = 'SKEIN_TEST_CLUSTER';

export interface TestClusterOptions {
  /** Where etcd, kube-apiserver and kube-controller-manager live; default test/cluster/bin. */
  binDir?: string;
  /** kube-controller-manager --controllers; default DEFAULT_CONTROLLERS. */
  controllers?: readonly string[];
  /** Extra kube-apiserver flags (appended, so they win). */
  apiServerArgs?: readonly string[];
  /**
   * The address the API server binds and advertises; default 127.0.0.1. A test node
   * (node.ts) needs one its pods can reach, and the `kubernetes` Service then gets it
   * as its endpoint (the lease reconciler) so in-cluster clients find the API server.
   */
  host?: string;
  /** Extra kube-controller-manager flags (appended, so they win). */
  controllerManagerArgs?: readonly string[];
  /** Per component start timeout; default 60 s (a cold kube-apiserver on 2 cores takes ~5-10 s). */
  startTimeoutMs?: number;
  /** Echo component logs to this process's stderr. */
  verbose?: boolean;
}

/** How to reach a running cluster; what `cluster-main` writes to its state file. */
export interface ClusterEndpoint {
  /** https://127.0.0.1:<port> */
  server: string;
  /** PEM of the CA that signed the API server's serving certificate. */
  caPem: string;
  /** Bearer token of user `admin` in group system:masters. */
  adminToken: string;
  /** A kubeconfig file (context `test`) for that user. */
  kubeconfigPath: string;
}

/** The `kubernetes` Service's ClusterIP: the first address of --service-cluster-ip-range. */
export const KUBERNETES_SERVICE_IP = '10.96.0.1';

/** Users the node's components (node.ts) authenticate as, each with a kubeconfig of its own. */
export const COMPONENT_USERS = [
  'system:node:skein-node',
  'system:kube-proxy',
  'system:kube-scheduler',
] as const;
export type ComponentUser = (typeof COMPONENT_USERS)[number];

/** One component process: stderr/stdout kept as a bounded tail for error messages. */

export interface HttpResult {
  status: number;
  body: string;
}

/** Any request to a cluster's API server with a bearer token (for probes and client-free tests). */
export function clusterRequest(
  endpoint: Pick<ClusterEndpoint, 'server' | 'caPem'>,
  method: string,
  urlPath: string,
  token: string,
  body?: unknown,
): Promise<HttpResult> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'application/json' };
  if (payload !== undefined) headers['content-type'] = 'application/json';
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(urlPath, endpoint.server),
      { method, ca: endpoint.caPem, headers, timeout: 5000 },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          text += d;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(payload);
  });
}

function kubeconfigJson(server: string, caPem: string, user: string, token: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'test',
        cluster: { server, 'certificate-authority-data': Buffer.from(caPem).toString('base64') },
      },
    ],
    users: [{ name: user, user: { token } }],
    contexts: [{ name: 'test', context: { cluster: 'test', user } }],
    'current-context': 'test',
  });
}

/** A client-node KubeConfig for the admin user (group system:masters) of a cluster. */
export function kubeConfigFor(endpoint: ClusterEndpoint): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [
      {
        name: 'test',
        server: endpoint.server,
        caData: Buffer.from(endpoint.caPem).toString('base64'),
        skipTLSVerify: false,
      },
    ],
    users: [{ name: 'admin', token: endpoint.adminToken }],
    contexts: [{ name: 'test', cluster: 'test', user: 'admin' }],
    currentContext: 'test',
  });
  return kc;
}

/**
 * A running etcd + kube-apiserver + kube-controller-manager. `start()` returns
 * once the API server is ready and the controller manager has created the
 * `default` ServiceAccount (proof that its controllers run).
 */
export class TestCluster implements ClusterEndpoint {
  readonly server: string;
  readonly caPem: string;
  readonly adminToken: string;
  readonly kubeconfigPath: string;
  private etcd: Component | undefined;
  private apiServer: Component | undefined;
  private controllerManager: Component | undefined;
  private stopped = false;

  private constructor(
    /** Temp dir with certs, tokens, kubeconfigs and etcd data; removed by stop(). */
    readonly dir: string,
    private readonly bin: string,
    private readonly opts: TestClusterOptions,
    private readonly ports: { etcd: number; apiServer: number },
    endpoint: Omit<ClusterEndpoint, 'server'>,
  ) {
    this.server = `https://${opts.host ?? '127.0.0.1'}:${ports.apiServer}`;
    this.caPem = endpoint.caPem;
    this.adminToken = endpoint.adminToken;
    this.kubeconfigPath = endpoint.kubeconfigPath;
  }

  static async start(opts: TestClusterOptions = {}): Promise<TestCluster> {
    const bin = opts.binDir ?? CLUSTER_BIN_DIR;
    const dir = await mkdtemp(path.join(tmpdir(), 'skein-cluster-'));
    liveDirs.add(dir);
    try {
      const [etcdPort, apiServerPort] = await freePorts(2);
      if (etcdPort === undefined || apiServerPort === undefined) throw new Error('no free ports');
      const host = opts.host ?? '127.0.0.1';
      const files = await writeClusterFiles(dir, `https://${host}:${apiServerPort}`, host);
      const cluster = new TestCluster(dir, bin, opts, { etcd: etcdPort, apiServer: apiServerPort }, files);
      try {
        await cluster.startEtcd();
        await cluster.startApiServer();
        await cluster.startControllerManager();
      } catch (err) {
        await cluster.stop();
        throw err;
      }
      return cluster;
    } catch (err) {
      await rm(dir, { recursive: true, force: true });
      liveDirs.delete(dir);
      throw err;
    }
  }

  private get timeoutMs(): number {
    return this.opts.startTimeoutMs ?? 60_000;
  }

  private get verbose(): boolean {
    return this.opts.verbose ?? false;
  }

  /** A client-node KubeConfig for the admin user (group system:masters). */
  kubeConfig(): KubeConfig {
    return kubeConfigFor(this);
  }

  /** GET on the API server (as admin unless `token` is given); for probes like /readyz or /version. */
  get(urlPath: string, token = this.adminToken): Promise<HttpResult> {
    return clusterRequest(this, 'GET', urlPath, token);
  }

  /** Any request as admin with a JSON body; for tests that must not depend on a client library. */
  request(method: string, urlPath: string, body?: unknown): Promise<HttpResult> {
    return clusterRequest(this, method, urlPath, this.adminToken, body);
  }

  /** The API server's port (the same after a restart). */
  get apiServerPort(): number {
    return this.ports.apiServer;
  }

  /**
   * A kubeconfig file for one of the node's components (see COMPONENT_USERS): its
   * own user name in logs and audit, the powers of system:masters like the controller
   * manager's (the tests do not exercise the Node authorizer).
   */
  componentKubeconfig(user: ComponentUser): string {
    return path.join(this.dir, `${user.replaceAll(':', '-')}.kubeconfig`);
  }

  /** Last log lines of a component (for assertion messages). */
  logs(component: 'etcd' | 'kube-apiserver' | 'kube-controller-manager'): string[] {
    const c = {
      etcd: this.etcd,
      'kube-apiserver': this.apiServer,
      'kube-controller-manager': this.controllerManager,
    }[component];
    return c ? [...c.tail] : [];
  }

  /** Starts etcd on the cluster's fixed client port and data dir (also after stopEtcd()). */
  async startEtcd(): Promise<void> {
    if (this.etcd?.running) return;
    this.etcd = spawnComponent(
      'etcd',
      path.join(this.bin, 'etcd'),
      ['--data-dir', path.join(this.dir, 'etcd'), '--client-port', String(this.ports.etcd)],
      this.verbose,
    );
    await this.etcd.waitForLine(
      (line) => (line.includes('"msg":"ready"') ? true : undefined),
      this.timeoutMs,
    );
  }

  async stopEtcd(): Promise<void> {
    await this.etcd?.stop();
  }

  /** Starts kube-apiserver on the cluster's fixed port; resolves when /readyz says ok. */
  async startApiServer(): Promise<void> {
    if (this.apiServer?.running) return;
    const d = (f: string) => path.join(this.dir, f);
    const host = this.opts.host ?? '127.0.0.1';
    const args = [
      `--etcd-servers=http://127.0.0.1:${this.ports.etcd}`,
      `--bind-address=${host}`,
      `--advertise-address=${host}`,
      `--secure-port=${this.ports.apiServer}`,
      `--cert-dir=${d('apiserver-certs')}`,
      `--tls-cert-file=${d('apiserver.crt')}`,
      `--tls-private-key-file=${d('apiserver.key')}`,
      // ClusterIPs are allocated from here, but nothing routes them: data only.
      '--service-cluster-ip-range=10.96.0.0/16',
      '--authorization-mode=RBAC',
      `--token-auth-file=${d('tokens.csv')}`,
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${d('sa.pub')}`,
      `--service-account-signing-key-file=${d('sa.key')}`,
      // No kubelet runs, so the `kubernetes` Service gets no endpoints from the API server itself.
      '--endpoint-reconciler-type=none',
      // Shutdown then ends open watches after ~2 s instead of waiting up to the
      // 60 s request timeout for clients (the controller manager, tests) to leave.
      '--shutdown-send-retry-after=true',
      '--profiling=false',
      // A node's pods find the API server through the `kubernetes` Service: the lease
      // reconciler gives it this server's address as its endpoint.
      ...(this.opts.host === undefined ? [] : ['--endpoint-reconciler-type=lease']),
      ...(this.opts.apiServerArgs ?? []),
    ];
    this.apiServer = spawnComponent(
      'kube-apiserver',
      path.join(this.bin, 'kube-apiserver'),
      args,
      this.verbose,
    );
    await this.waitUntil('kube-apiserver /readyz', this.apiServer, async () => {
      const res = await this.get('/readyz');
      return res.status === 200;
    });
  }

  async stopApiServer(): Promise<void> {
    await this.apiServer?.stop();
  }

  private async startControllerManager(): Promise<void> {
    const args = [
      `--kubeconfig=${path.join(this.dir, 'controller-manager.kubeconfig')}`,
      `--controllers=${(this.opts.controllers ?? DEFAULT_CONTROLLERS).join(',')}`,
      '--leader-elect=false',
      // No serving endpoint: nothing scrapes it, and it would need delegated auth.
      '--secure-port=0',
      '--profiling=false',
      // What root-ca-cert-publisher puts in every namespace's kube-root-ca.crt ConfigMap,
      // which a pod's ServiceAccount token volume needs.
      `--root-ca-file=${path.join(this.dir, 'ca.crt')}`,
      ...(this.opts.controllerManagerArgs ?? []),
    ];
    this.controllerManager = spawnComponent(
      'kube-controller-manager',
      path.join(this.bin, 'kube-controller-manager'),
      args,
      this.verbose,
    );
    // The serviceaccount controller creates `default` in every namespace: once it
    // exists in `default`, the controller manager is syncing.
    await this.waitUntil(
      'kube-controller-manager (default ServiceAccount)',
      this.controllerManager,
      async () => {
        const res = await this.get('/api/v1/namespaces/default/serviceaccounts/default');
        return res.status === 200;
      },
    );
  }

  private async waitUntil(what: string, component: Component, probe: () => Promise<boolean>): Promise<void> {
    const deadline = Date.now() + this.timeoutMs;
    for (;;) {
      if (!component.running) throw new Error(`${what}: ${component.describe()}`);
      if (await probe().catch(() => false)) return;
      if (Date.now() > deadline)
        throw new Error(`${what} not ready in ${this.timeoutMs} ms: ${component.describe()}`);
      await sleep(200);
    }
  }

  /** Stops every component (controller manager, API server, etcd) and removes the temp dir. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.controllerManager?.stop();
    await this.apiServer?.stop();
    await this.etcd?.stop();
    await rm(this.dir, { recursive: true, force: true });
    liveDirs.delete(this.dir);
  }
}

/** Certificates, keys, tokens and kubeconfigs for one cluster, written into `dir`. */
async function writeClusterFiles(
  dir: string,
  server: string,
  host: string,
): Promise<Omit<ClusterEndpoint, 'server'>> {
  const ca = await BuiltinCA.create({ commonName: 'skein-test-cluster-ca', validityMs: 24 * 60 * 60 * 1000 });
  const serving = await ca.issue({
    commonName: 'kube-apiserver',
    // In-cluster clients dial the `kubernetes` Service: the first address of the service range.
    ipSans: [...new Set(['127.0.0.1', host, KUBERNETES_SERVICE_IP])],
    dnsSans: [
      'localhost',
      'kubernetes',
      'kubernetes.default',
      'kubernetes.default.svc',
      'kubernetes.default.svc.cluster.local',
    ],
    usage: 'server',
    validityMs: 24 * 60 * 60 * 1000,
  });
  // The API server signs ServiceAccount tokens with this key and verifies them with its public half.
  const sa = generateKeyPairSync('ec', {
    namedCurve: 'prime256v1',
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  const adminToken = randomBytes(24).toString('hex');
  const controllerManagerToken = randomBytes(24).toString('hex');
  // token,user,uid,"group1,group2" — system:masters bypasses RBAC. The controller
  // manager gets its own name (visible in audit/logs) but the same powers, which
  // saves giving each controller a ServiceAccount (--use-service-account-credentials).
  const componentTokens = COMPONENT_USERS.map((user) => ({ user, token: randomBytes(24).toString('hex') }));
  const tokens = [
    `${adminToken},admin,admin,"system:masters"`,
    `${controllerManagerToken},system:kube-controller-manager,kube-controller-manager,"system:masters"`,
    ...componentTokens.map(({ user, token }) => `${token},${user},${user},"system:masters"`),
  ].join('\n');
  const kubeconfigPath = path.join(dir, 'admin.kubeconfig');
  await mkdir(path.join(dir, 'apiserver-certs'), { recursive: true });
  await Promise.all([
    writeFile(path.join(dir, 'ca.crt'), ca.trustBundlePem),
    writeFile(path.join(dir, 'apiserver.crt'), serving.certPem),
    writeFile(path.join(dir, 'apiserver.key'), serving.keyPem, { mode: 0o600 }),
    writeFile(path.join(dir, 'sa.key'), sa.privateKey, { mode: 0o600 }),
    writeFile(path.join(dir, 'sa.pub'), sa.publicKey),
    writeFile(path.join(dir, 'tokens.csv'), `${tokens}\n`, { mode: 0o600 }),
    writeFile(kubeconfigPath, kubeconfigJson(server, ca.trustBundlePem, 'admin', adminToken), {
      mode: 0o600,
    }),
    writeFile(
      path.join(dir, 'controller-manager.kubeconfig'),
      kubeconfigJson(server, ca.trustBundlePem, 'kube-controller-manager', controllerManagerToken),
      { mode: 0o600 },
    ),
    ...componentTokens.map(({ user, token }) =>
      writeFile(
        path.join(dir, `${user.replaceAll(':', '-')}.kubeconfig`),
        kubeconfigJson(server, ca.trustBundlePem, user, token),
        { mode: 0o600 },
      ),
    ),
  ]);
  return { caPem: ca.trustBundlePem, adminToken, kubeconfigPath };
}

/**
 * The cluster a test file should use: the shared one named by
 * $SKEIN_TEST_CLUSTER, else a cluster of its own. `release()` stops only a
 * cluster this call started. Tests on a shared cluster must keep to namespaces
 * of their own and must not restart its components (use TestCluster.start()).
 */
export async function acquireCluster(
  opts: TestClusterOptions = {},
): Promise<{ endpoint: ClusterEndpoint; kubeConfig: KubeConfig; release: () => Promise<void> }> {
  const stateFile = process.env[SHARED_CLUSTER_ENV];
  if (stateFile) {
    const endpoint = await readSharedCluster(stateFile, opts.startTimeoutMs ?? 120_000);
    return { endpoint, kubeConfig: kubeConfigFor(endpoint), release: async () => {} };
  }
  const cluster = await TestCluster.start(opts);
  return { endpoint: cluster, kubeConfig: cluster.kubeConfig(), release: () => cluster.stop() };
}

/**
 * Reads a shared cluster's state file, waiting for it: test/run.ts starts the
 * cluster while the first test files already run, and writes the file (by
 * rename, so it is never seen half-written) once the cluster is ready — or
 * `{"error": ...}` when it failed to start.
 */
async function readSharedCluster(stateFile: string, timeoutMs: number): Promise<ClusterEndpoint> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let text: string | undefined;
    try {
      text = await readFile(stateFile, 'utf8');
    } catch (err) {
      if (!(err instanceof Error && 'code' in err && err.code === 'ENOENT')) throw err;
    }
    if (text !== undefined) return parseEndpoint(text, stateFile);
    if (Date.now() > deadline)
      throw new Error(`shared test cluster: ${stateFile} did not appear within ${timeoutMs} ms`);
    await sleep(100);
  }
}

function parseEndpoint(text: string, stateFile: string): ClusterEndpoint {
  const v: unknown = JSON.parse(text);
  if (typeof v !== 'object' || v === null) throw new Error('cluster state file: not an object');
  const error: unknown = Reflect.get(v, 'error');
  if (typeof error === 'string') throw new Error(`shared test cluster (${stateFile}) failed: ${error}`);
  const field = (k: string): string => {
    const x: unknown = Reflect.get(v, k);
    if (typeof x !== 'string') throw new Error(`cluster state file: ${k} is not a string`);
    return x;
  };
  return {
    server: field('server'),
    caPem: field('caPem'),
    adminToken: field('adminToken'),
    kubeconfigPath: field('kubeconfigPath'),
  };
}
