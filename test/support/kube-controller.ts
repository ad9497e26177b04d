// The real skein-controller in Kubernetes mode as a child process, with the
// flags every test against the shared cluster needs: loopback only and
// ephemeral ports for everything Kubernetes mode would otherwise bind on fixed
// ports (REST xDS 15127, webhook 9090), since test files run in parallel.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type JsonLineProcess, spawnNode } from './processes.js';

const controllerScript = fileURLToPath(new URL('../../cmd/skein-controller/main.js', import.meta.url));

export interface KubeControllerOptions {
  kubeconfigPath: string;
  meshName: string;
  /** Control-plane namespace. */
  namespace: string;
  /** More flags; one named here overrides the default of the same name (the last value wins). */
  args?: string[];
  /** Prefix of the temporary state directory. */
  stateDirPrefix?: string;
}

export interface KubeController {
  readonly process: JsonLineProcess;
  /** The controller's 'skein controller ready' log line (its ports). */
  readonly ready: Record<string, unknown>;
  readonly stateDir: string;
  /** Stops the process and removes the state directory. */
  stop(): Promise<void>;
}

export async function startKubeController(o: KubeControllerOptions): Promise<KubeController> {
  const stateDir = await mkdtemp(path.join(tmpdir(), o.stateDirPrefix ?? 'skein-kube-controller-'));
  const process = spawnNode(
    'skein-controller',
    controllerScript,
    [
      ...['--kubeconfig', o.kubeconfigPath, '--mesh-name', o.meshName, '--namespace', o.namespace],
      ...['--state-dir', stateDir, '--host', '127.0.0.1'],
      ...['--ads-port', '0', '--http-port', '0', '--rest-xds-port', '0', '--webhook-port', '0'],
      ...(o.args ?? []),
    ],
    { SKEIN_LOG_LEVEL: 'info' },
  );
  const stop = async () => {
    await process.stop();
    await rm(stateDir, { recursive: true, force: true });
  };
  try {
    const ready = await process.waitFor((l) => l['msg'] === 'skein controller ready', 30_000);
    return { process, ready, stateDir, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
