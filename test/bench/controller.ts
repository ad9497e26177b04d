// Runs the real controller binary (dist/cmd/skein-controller) in its own
// process, so every figure taken from /proc is the controller's alone.
import { request } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CONTROLLER_NODE_FLAGS } from '../../pkg/controller/node-flags.js';
import { type JsonLineProcess, sleep, spawnNode } from '../support/processes.js';
import { cpuSeconds, rssBytes } from './proc.js';

const distRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
// SKEIN_BENCH_CONTROLLER_DIST runs another build's controller under this bench
// (bisecting a regression with the same fleet and report).
export const CONTROLLER_SCRIPT = path.join(
  process.env['SKEIN_BENCH_CONTROLLER_DIST'] ?? distRoot,
  'cmd',
  'skein-controller',
  'main.js',
);

export interface ControllerLaunch {
  /** Local mode: the manifests directory; or Kubernetes mode with `kube`. */
  manifestsDir?: string;
  /** Kubernetes mode: the kubeconfig, mesh name and control-plane namespace. */
  kube?: { kubeconfigPath: string; meshName: string; namespace: string };
  stateDir: string;
  adsPort: number;
  httpPort: number;
  minPushInterval?: string;
  /** When set, the controller runs under `node --cpu-prof` writing here (on a clean exit only). */
  cpuProfDir?: string;
  /** Node flags before the script, instead of the shipped CONTROLLER_NODE_FLAGS (test/memory's probe, heap sizes). */
  nodeArgs?: readonly string[];
  /** Another build's dist directory (default: this one's, or SKEIN_BENCH_CONTROLLER_DIST). */
  dist?: string;
  /** More environment for the controller process. */
  env?: NodeJS.ProcessEnv;
}

function readyz(port: number): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/readyz', timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

export class ControllerProcess {
  /** Epoch ms when /readyz first answered 200 (the announcement ticker started just before). */
  readyAt = 0;

  private constructor(
    readonly proc: JsonLineProcess,
    readonly launch: ControllerLaunch,
  ) {}

  /** Spawns the controller and resolves once /readyz answers 200. */
  static async start(launch: ControllerLaunch, timeoutMs = 30_000): Promise<ControllerProcess> {
    const source = launch.kube
      ? [
          ...['--kubeconfig', launch.kube.kubeconfigPath, '--mesh-name', launch.kube.meshName],
          ...['--namespace', launch.kube.namespace],
          // Ephemeral: Kubernetes mode binds these on fixed ports otherwise.
          ...['--rest-xds-port', '0', '--webhook-port', '0'],
        ]
      : ['--local', launch.manifestsDir ?? '.'];
    const args = [
      ...source,
      '--state-dir',
      launch.stateDir,
      '--host',
      '127.0.0.1',
      '--ads-port',
      String(launch.adsPort),
      '--http-port',
      String(launch.httpPort),
      // warn: a per-proxy info line would add logging cost to what is measured.
      '--log-level',
      'warn',
      ...(launch.minPushInterval ? ['--min-push-interval', launch.minPushInterval] : []),
    ];
    const script = launch.dist
      ? path.join(launch.dist, 'cmd', 'skein-controller', 'main.js')
      : CONTROLLER_SCRIPT;
    const nodeArgs = [
      ...(launch.cpuProfDir ? ['--cpu-prof', '--cpu-prof-dir', launch.cpuProfDir] : []),
      ...(launch.nodeArgs ?? CONTROLLER_NODE_FLAGS),
    ];
    const [first, ...rest] = [...nodeArgs, script, ...args];
    const proc = spawnNode('controller', first ?? script, rest, launch.env);
    const c = new ControllerProcess(proc, launch);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (proc.child.exitCode !== null || proc.child.signalCode !== null)
        throw new Error(`controller exited during startup:\n${proc.stderr.slice(-20).join('\n')}`);
      if ((await readyz(launch.httpPort)) === 200) {
        c.readyAt = Date.now();
        return c;
      }
      if (Date.now() > deadline) {
        await proc.stop();
        throw new Error(`controller not ready within ${timeoutMs} ms:\n${proc.stderr.slice(-20).join('\n')}`);
      }
      await sleep(50);
    }
  }

  get pid(): number {
    const pid = this.proc.child.pid;
    if (pid === undefined) throw new Error('controller has no pid');
    return pid;
  }

  rss(): number {
    return rssBytes(this.pid) ?? Number.NaN;
  }

  cpu(): number {
    return cpuSeconds(this.pid) ?? Number.NaN;
  }

  /** Warning and error log lines so far (pino levels 40+). */
  problems(): Record<string, unknown>[] {
    return this.proc.lines.filter((l) => typeof l['level'] === 'number' && l['level'] >= 40);
  }

  /** SIGKILL, the crash the reconnect storm simulates; resolves once the process is gone. */
  async crash(): Promise<void> {
    this.proc.child.kill('SIGKILL');
    await this.proc.exited;
  }

  /** SIGTERM (clean shutdown; writes the CPU profile when profiling). */
  async stop(): Promise<void> {
    await this.proc.stop();
  }
}

/** Several replicas measured as one: CPU and RSS summed, warnings of all. */
export class ControllerGroup {
  constructor(readonly members: readonly ControllerProcess[]) {}

  cpu(): number {
    return this.members.reduce((sum, c) => sum + c.cpu(), 0);
  }

  rss(): number {
    return this.members.reduce((sum, c) => sum + c.rss(), 0);
  }

  problems(): Record<string, unknown>[] {
    return this.members.flatMap((c) => c.problems());
  }
}
