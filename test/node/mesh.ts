// A mesh on the real test node (test/support/node.ts): skein installed by the real
// Helm chart from the image `make image` builds, running as a pod; workloads are
// ordinary Deployments in a labelled namespace, injected by the chart's webhook
// through the API server's admission chain and started by the kubelet. The tests
// drive a caller pod's app through its control port (mesh-app --control, excluded
// from interception by annotation) and read Envoy's admin interface from inside
// the pod's network namespace, as `kubectl exec` would.
import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { request } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { waitForController } from '../../pkg/install/controller-ready.js';
import { helmUpgradeInstall } from '../../pkg/install/helm.js';
import { KubeClient } from '../../pkg/registry/kube/client.js';
import { parseEnvoyStats } from '../support/envoy-bin.js';
import { applyCustomObject, waitFor } from '../support/kube.js';
import type { NodeCluster } from '../support/node.js';

const run = promisify(execFile);
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const HELM = path.join(repoRoot, 'test', 'helm', 'bin', 'helm');
const CHART = path.join(repoRoot, 'charts', 'skein');

export const APP_IMAGE = 'docker.io/skein/test-app:0.1.0';
export const HTTP_PORT = 8080;
export const GRPC_PORT = 9090;
export const TCP_PORT = 7070;
/** mesh-app's control port: the test's way into a caller pod, never intercepted. */
export const CONTROL_PORT = 7777;
export const SERVE = ['--http', String(HTTP_PORT), '--grpc', String(GRPC_PORT), '--tcp', String(TCP_PORT)];

export interface Workload {
  name: string;
  serviceAccount: string;
  labels: Record<string, string>;
  annotations?: Record<string, string>;
  replicas?: number;
  /** mesh-app --drain-ms: how long the app serves on after SIGTERM. */
  drainMs?: number;
  terminationGracePeriodSeconds?: number;
  /** An init container of the pod's own that runs this long before the sidecar and the app start. */
  initSleepMs?: number;
  /** The app's liveness probe (default: /live every 2 s, kubelet's 3 failures). */
  liveness?: { periodSeconds: number; failureThreshold: number };
}

export interface PodView {
  name: string;
  uid: string;
  ip: string;
  ready: boolean;
  phase: string;
  deleting: boolean;
  spec: Record<string, unknown>;
  status: Record<string, unknown>;
}

export interface Outcomes {
  counts: Record<string, number>;
  bodies: Record<string, string>;
}

type Obj = Record<string, unknown>;

export class NodeMesh {
  private constructor(
    readonly node: NodeCluster,
    readonly api: KubeClient,
    readonly meshName: string,
    readonly controlPlane: string,
    readonly namespace: string,
  ) {}

  /** helm upgrade --install of charts/skein with the image defaults, then waits for the controller pod. */
  static async install(
    node: NodeCluster,
    opts: { meshName: string; namespace: string; values?: Obj; onLine?: (l: string) => void },
  ): Promise<NodeMesh> {
    const controlPlane = 'skein-system';
    await helmUpgradeInstall({
      helmPath: HELM,
      kubeconfig: node.cluster.kubeconfigPath,
      release: 'skein',
      namespace: controlPlane,
      chart: CHART,
      values: { meshName: opts.meshName, minPushInterval: '50ms', debugServer: true, ...opts.values },
      ...(opts.onLine ? { onLine: opts.onLine } : {}),
    });
    await waitForController(node.cluster.kubeConfig(), { namespace: controlPlane, timeoutMs: 120_000 });
    const api = new KubeClient({ kubeConfig: node.cluster.kubeConfig() });
    const mesh = new NodeMesh(node, api, opts.meshName, controlPlane, opts.namespace);
    await api.request('POST', '/api/v1/namespaces', {
      body: {
        metadata: {
          name: opts.namespace,
          labels: { 'skein.dev/monitored-by': opts.meshName },
          annotations: { 'skein.dev/sidecar-injection': 'enabled' },
        },
      },
    });
    return mesh;
  }

  async createServiceAccount(name: string): Promise<void> {
    await this.api.request('POST', `/api/v1/namespaces/${this.namespace}/serviceaccounts`, {
      body: { metadata: { name } },
    });
  }

  async createService(name: string, selector: Record<string, string>): Promise<void> {
    await this.api.request('POST', `/api/v1/namespaces/${this.namespace}/services`, {
      body: {
        metadata: { name, labels: { app: name } },
        spec: {
          selector,
          ports: [
            { name: 'http', port: HTTP_PORT, targetPort: HTTP_PORT, protocol: 'TCP' },
            { name: 'grpc', port: GRPC_PORT, targetPort: GRPC_PORT, protocol: 'TCP', appProtocol: 'grpc' },
            { name: 'tcp-echo', port: TCP_PORT, targetPort: TCP_PORT, protocol: 'TCP' },
          ],
        },
      },
    });
  }

  /** An ordinary Deployment of mesh-app: the webhook injects it, the kubelet runs it. */
  async deploy(w: Workload): Promise<void> {
    const drain = w.drainMs ? ['--drain-ms', String(w.drainMs)] : [];
    await this.api.request('POST', `/apis/apps/v1/namespaces/${this.namespace}/deployments`, {
      body: {
        metadata: { name: w.name, labels: w.labels },
        spec: {
          replicas: w.replicas ?? 1,
          selector: { matchLabels: w.labels },
          template: {
            metadata: {
              labels: w.labels,
              annotations: {
                'skein.dev/inbound-port-exclusion-list': String(CONTROL_PORT),
                ...w.annotations,
              },
            },
            spec: {
              serviceAccountName: w.serviceAccount,
              ...(w.terminationGracePeriodSeconds === undefined
                ? {}
                : { terminationGracePeriodSeconds: w.terminationGracePeriodSeconds }),
              ...(w.initSleepMs === undefined
                ? {}
                : {
                    initContainers: [
                      {
                        name: 'wait',
                        image: APP_IMAGE,
                        imagePullPolicy: 'Never',
                        command: ['/usr/local/bin/node', '-e', `setTimeout(() => {}, ${w.initSleepMs})`],
                      },
                    ],
                  }),
              containers: [
                {
                  name: 'app',
                  image: APP_IMAGE,
                  imagePullPolicy: 'Never',
                  args: [
                    'mesh-app',
                    'serve',
                    '--name',
                    w.name,
                    ...SERVE,
                    '--control',
                    String(CONTROL_PORT),
                    ...drain,
                  ],
                  ports: [{ name: 'http', containerPort: HTTP_PORT }],
                  readinessProbe: { httpGet: { path: '/ready', port: 'http' }, periodSeconds: 1 },
                  livenessProbe: {
                    httpGet: { path: '/live', port: 'http' },
                    ...(w.liveness ?? { periodSeconds: 2 }),
                  },
                },
              ],
            },
          },
        },
      },
    });
  }

  async pods(app: string): Promise<PodView[]> {
    const list = (await this.api.request('GET', `/api/v1/namespaces/${this.namespace}/pods`, {
      query: { labelSelector: `app=${app}` },
    })) as { items: Obj[] };
    return list.items.map(podView);
  }

  /** Waits until `app` has exactly `n` pods, all Running and Ready, none terminating. */
  async waitReady(app: string, n = 1, ms = 120_000): Promise<PodView[]> {
    let pods: PodView[] = [];
    try {
      await waitFor(
        `${n} Ready pod(s) of ${app}`,
        async () => {
          pods = await this.pods(app);
          return pods.length === n && pods.every((p) => p.ready && !p.deleting);
        },
        ms,
      );
    } catch (err) {
      throw new Error(`${(err as Error).message}; pods: ${JSON.stringify(pods.map((p) => p.status))}`);
    }
    return pods;
  }

  /** Runs one mesh-app client command in the pod (its control port), through its sidecar. */
  async call(pod: PodView, cmd: Obj, ms = 60_000): Promise<Outcomes> {
    const out = (await this.command(pod, cmd, ms)) as { counts?: Obj; bodies?: Obj };
    return {
      counts: (out.counts ?? {}) as Record<string, number>,
      bodies: (out.bodies ?? {}) as Record<string, string>,
    };
  }

  /** Any mesh-app control command; its JSON answer as is. */
  command(pod: PodView, cmd: Obj, ms = 60_000): Promise<unknown> {
    return postJson(pod.ip, CONTROL_PORT, cmd, ms);
  }

  /** GET on the pod's Envoy admin (127.0.0.1:15000 in the pod), from inside its network namespace. */
  async envoyAdmin(pod: PodView, urlPath: string): Promise<string> {
    const pid = await podProcess(pod);
    const { stdout } = await run(
      'nsenter',
      ['-t', String(pid), '-n', 'curl', '-sf', `http://127.0.0.1:15000${urlPath}`],
      {
        maxBuffer: 64 * 1024 * 1024,
      },
    );
    return stdout;
  }

  async envoyStats(pod: PodView, filter?: string): Promise<Map<string, number>> {
    const q = filter ? `?filter=${encodeURIComponent(filter)}` : '';
    return parseEnvoyStats(await this.envoyAdmin(pod, `/stats${q}`));
  }

  /** The container's log, through the API server and the kubelet. */
  async logs(pod: PodView, container: string): Promise<string> {
    return this.node.cluster
      .get(`/api/v1/namespaces/${this.namespace}/pods/${pod.name}/log?container=${container}`)
      .then((r) => r.body);
  }

  /** Creates or replaces a namespaced custom object. */
  async apply(group: string, version: string, plural: string, body: Obj, ns = this.namespace): Promise<void> {
    await applyCustomObject(this.api, group, version, plural, body, ns);
  }

  /** Merges `patch` into the chart's MeshConfig spec. */
  async patchMeshConfig(patch: Obj): Promise<void> {
    await this.api.request(
      'PATCH',
      `/apis/config.skein.dev/v1alpha1/namespaces/${this.controlPlane}/meshconfigs/${this.meshName}`,
      { contentType: 'application/merge-patch+json', body: { spec: patch } },
    );
  }

  async controllerPods(): Promise<PodView[]> {
    const list = (await this.api.request('GET', `/api/v1/namespaces/${this.controlPlane}/pods`, {
      query: { labelSelector: 'app.kubernetes.io/name=skein' },
    })) as { items: Obj[] };
    return list.items.map(podView);
  }

  async deletePod(pod: PodView, graceSeconds?: number): Promise<void> {
    await this.api.request('DELETE', `/api/v1/namespaces/${this.namespace}/pods/${pod.name}`, {
      ...(graceSeconds === undefined ? {} : { query: { gracePeriodSeconds: String(graceSeconds) } }),
    });
  }
}

function podView(o: Obj): PodView {
  const meta = (o['metadata'] ?? {}) as Obj;
  const status = (o['status'] ?? {}) as Obj;
  const conditions = (status['conditions'] ?? []) as { type: string; status: string }[];
  return {
    name: String(meta['name']),
    uid: String(meta['uid']),
    ip: String(status['podIP'] ?? ''),
    phase: String(status['phase'] ?? ''),
    ready: conditions.some((c) => c.type === 'Ready' && c.status === 'True'),
    deleting: meta['deletionTimestamp'] !== undefined,
    spec: (o['spec'] ?? {}) as Obj,
    status,
  };
}

/**
 * A process of the pod — of any container, the one whose command is `comm`, or the one
 * whose command line matches (two Node programs in one pod) — found by the cgroup the
 * kubelet puts each pod in (`…/pod<uid>/…`).
 */
export async function podProcess(pod: PodView, which?: string | { cmdline: RegExp }): Promise<number> {
  for (const entry of await readdir('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    const cgroup = await readFile(`/proc/${pid}/cgroup`, 'utf8').catch(() => '');
    if (!cgroup.includes(`pod${pod.uid}`)) continue;
    if (which === undefined) return pid;
    if (typeof which === 'string') {
      const name = (await readFile(`/proc/${pid}/comm`, 'utf8').catch(() => '')).trim();
      if (name === which) return pid;
    } else {
      // NUL-separated arguments.
      const cmdline = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).replaceAll('\0', ' ');
      if (which.cmdline.test(cmdline)) return pid;
    }
  }
  throw new Error(
    `no ${typeof which === 'string' ? which : (which?.cmdline ?? '')} process of pod ${pod.name} on this node`,
  );
}

function postJson(host: string, port: number, body: unknown, ms: number): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = request({ host, port, method: 'POST', path: '/', timeout: ms }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        text += d;
      });
      res.on('end', () =>
        res.statusCode === 200
          ? resolve(JSON.parse(text))
          : reject(new Error(`control ${res.statusCode}: ${text}`)),
      );
    });
    req.on('timeout', () => req.destroy(new Error(`control call to ${host}:${port} timed out`)));
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}
