// skein-controller in Kubernetes mode (--kubeconfig) in its own process, with
// --workload-files so it writes every meshed pod's certificates and proxyless
// bootstrap under its state dir, plus helpers to run proxyless gRPC workloads
// (test/apps/workload.ts) on this machine as those pods.
import { access, rm } from 'node:fs/promises';
import { networkInterfaces } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startKubeController } from './kube-controller.js';
import { tally } from './local-mesh.js';
import { type JsonLineProcess, sleep, spawnNode } from './processes.js';

const distRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const _controllerScript = path.join(distRoot, 'cmd', 'skein-controller', 'main.js');
const workloadScript = path.join(distRoot, 'test', 'apps', 'workload.js');

/**
 * An IPv4 address of this machine that pods can be given: EndpointSlice
 * validation refuses loopback (127.0.0.0/8) and link-local addresses, so the
 * test pods share the machine's own address and differ by port (grpc-js-xds
 * servers bind their port on every interface anyway). Undefined on a machine
 * with no such interface.
 */
export function podAddress(): string | undefined {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) {
      if (a.family === 'IPv4' && !a.internal && !a.address.startsWith('169.254.')) return a.address;
    }
  }
  return undefined;
}

export interface KubeMeshOptions {
  kubeconfigPath: string;
  meshName: string;
  /** Control-plane namespace (where a MeshConfig would live). */
  namespace: string;
}

export class KubeMesh {
  private readonly children: JsonLineProcess[] = [];

  private constructor(
    readonly stateDir: string,
    readonly controller: JsonLineProcess,
    readonly ports: { ads: number; insecureAds: number; http: number },
  ) {}

  static async start(o: KubeMeshOptions): Promise<KubeMesh> {
    const c = await startKubeController({
      kubeconfigPath: o.kubeconfigPath,
      meshName: o.meshName,
      namespace: o.namespace,
      stateDirPrefix: 'skein-kube-mesh-',
      args: ['--workload-files', '--insecure-ads-port', '0', '--min-push-interval', '50ms'],
    });
    return new KubeMesh(c.stateDir, c.process, {
      ads: Number(c.ready['ads']),
      insecureAds: Number(c.ready['insecureAds']),
      http: Number(c.ready['http']),
    });
  }

  /** The bootstrap the controller writes for a pod with a proxy UUID (LocalWorkloads' layout). */
  bootstrap(namespace: string, pod: string): string {
    return path.join(this.stateDir, 'bootstrap', namespace, `${pod}.json`);
  }

  /** Waits until the controller has seen the pod and written its bootstrap. */
  async waitForBootstrap(namespace: string, pod: string, ms = 15_000): Promise<string> {
    const file = this.bootstrap(namespace, pod);
    const deadline = Date.now() + ms;
    for (;;) {
      try {
        await access(file);
        return file;
      } catch (err) {
        if (Date.now() > deadline) throw err;
        await sleep(50);
      }
    }
  }

  /** A proxyless gRPC server for a pod on `listen` (ip:port); resolves once xDS gave it its listener. */
  async startServer(namespace: string, pod: string, listen: string): Promise<JsonLineProcess> {
    const bootstrap = await this.waitForBootstrap(namespace, pod);
    const p = spawnNode(`server ${pod}`, workloadScript, ['server', '--name', pod, '--listen', listen], {
      GRPC_XDS_BOOTSTRAP: bootstrap,
    });
    this.children.push(p);
    await p.waitFor((l) => l['type'] === 'listening', 20_000);
    return p;
  }

  /** A caller running as a pod, dialling `xds:///<target>`; see workload.ts for `args`. */
  async startCaller(
    namespace: string,
    pod: string,
    target: string,
    args: string[] = [],
  ): Promise<JsonLineProcess> {
    const bootstrap = await this.waitForBootstrap(namespace, pod);
    const p = spawnNode(
      `caller ${pod}`,
      workloadScript,
      ['caller', '--target', `xds:///${target}`, ...args],
      {
        GRPC_XDS_BOOTSTRAP: bootstrap,
      },
    );
    this.children.push(p);
    return p;
  }

  async stop(): Promise<void> {
    await Promise.all(this.children.map((c) => c.stop()));
    await this.controller.stop();
    await rm(this.stateDir, { recursive: true, force: true });
  }
}

export type Tally = ReturnType<typeof tally>;

/**
 * Waits until one report window of a running caller (its `stats` lines since
 * the previous check, every 300 ms) satisfies `pred`; returns the line index
 * after that window, for counting from there on.
 */
export async function untilCalls(
  c: JsonLineProcess,
  what: string,
  pred: (t: Tally) => boolean,
  ms = 20_000,
): Promise<number> {
  const deadline = Date.now() + ms;
  let from = c.lines.length;
  let last: Tally | undefined;
  while (Date.now() < deadline) {
    await sleep(300);
    const t = tally(c, from);
    if (Object.keys(t.ok).length + Object.keys(t.errors).length === 0) continue;
    last = t;
    if (pred(t)) return c.lines.length;
    from = c.lines.length;
  }
  throw new Error(
    `${c.name}: never saw ${what} within ${ms} ms; last window: ${JSON.stringify(last)}; exit ${c.child.exitCode}; stderr: ${c.stderr.slice(-5).join(' | ')}`,
  );
}
