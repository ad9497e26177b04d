// Proxyless gRPC workloads on the real test node: Deployments of the test image's
// `workload` (real @grpc/grpc-js-xds) annotated skein.dev/proxyless, which the chart's
// webhook injects with skein-agent and the kubelet runs. A caller's counts are its
// own JSON `stats` lines, read from its container log through the API server and
// the kubelet (as `kubectl logs` would), each with the kubelet's timestamp.
import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { APP_IMAGE, type NodeMesh, type PodView, podProcess } from './mesh.js';

type Obj = Record<string, unknown>;

export interface ProxylessContainer {
  name: string;
  /** Arguments of the test image's entrypoint: `workload server|caller ...`. */
  args: string[];
}

export interface ProxylessWorkload {
  name: string;
  serviceAccount: string;
  containers: ProxylessContainer[];
  /** A gRPC port the first container serves; it is Ready once something listens there. */
  port?: number;
}

/**
 * A Deployment whose pod asks to be proxyless. Each container gets POD_NAME and POD_IP
 * from the downward API, for `--name $(POD_NAME)` and `--listen $(POD_IP):<port>`
 * (grpc-js-xds serves only once its Listener, named after that address, arrives).
 */
export async function deployProxyless(mesh: NodeMesh, w: ProxylessWorkload): Promise<void> {
  const labels = { app: w.name };
  const env = [
    { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
  ];
  const containers: Obj[] = w.containers.map((c, i) => ({
    name: c.name,
    image: APP_IMAGE,
    imagePullPolicy: 'Never',
    args: c.args,
    env,
    ...(i === 0 && w.port !== undefined
      ? {
          ports: [{ name: 'grpc', containerPort: w.port }],
          // The kubelet's TCP connect succeeds only once the XdsServer bound the port, i.e.
          // once its Listener came through the agent: Ready means serving.
          readinessProbe: { tcpSocket: { port: w.port }, periodSeconds: 1 },
        }
      : {}),
  }));
  await mesh.api.request('POST', `/apis/apps/v1/namespaces/${mesh.namespace}/deployments`, {
    body: {
      metadata: { name: w.name, labels },
      spec: {
        selector: { matchLabels: labels },
        template: {
          metadata: { labels, annotations: { 'skein.dev/proxyless': 'true' } },
          spec: { serviceAccountName: w.serviceAccount, containers },
        },
      },
    },
  });
}

/** One `stats` line of `workload caller`: outcomes since its previous line. */
export interface CallerStats {
  /** The kubelet's timestamp of the line, ms since the epoch. */
  at: number;
  ok: Record<string, number>;
  errors: Record<string, number>;
}

/** The caller's stats lines so far, oldest first. */
export async function callerStats(mesh: NodeMesh, pod: PodView, container: string): Promise<CallerStats[]> {
  const text = (
    await mesh.node.cluster.get(
      `/api/v1/namespaces/${mesh.namespace}/pods/${pod.name}/log?container=${container}&timestamps=true`,
    )
  ).body;
  const out: CallerStats[] = [];
  for (const line of text.split('\n')) {
    const space = line.indexOf(' ');
    if (space < 0) continue;
    let parsed: { type?: string; ok?: Record<string, number>; errors?: Record<string, number> };
    try {
      parsed = JSON.parse(line.slice(space + 1)) as typeof parsed;
    } catch {
      continue;
    }
    if (parsed.type !== 'stats') continue;
    out.push({ at: Date.parse(line.slice(0, space)), ok: parsed.ok ?? {}, errors: parsed.errors ?? {} });
  }
  return out;
}

export interface Tally {
  ok: Record<string, number>;
  errors: Record<string, number>;
}

/** Outcomes of the stats lines from index `from` on. */
export function tallyStats(stats: readonly CallerStats[], from = 0): Tally {
  const t: Tally = { ok: {}, errors: {} };
  for (const s of stats.slice(from)) {
    for (const [k, v] of Object.entries(s.ok)) t.ok[k] = (t.ok[k] ?? 0) + v;
    for (const [k, v] of Object.entries(s.errors)) t.errors[k] = (t.errors[k] ?? 0) + v;
  }
  return t;
}

export const count = (m: Record<string, number>): number => Object.values(m).reduce((a, b) => a + b, 0);

/** The certificate a container of the pod reads now: the kubelet's mount of the bootstrap Secret. */
export async function mountedCertificate(pod: PodView, cmdline: RegExp): Promise<X509Certificate> {
  const pid = await podProcess(pod, { cmdline });
  return new X509Certificate(await readFile(`/proc/${pid}/root/etc/skein/tls.crt`));
}
