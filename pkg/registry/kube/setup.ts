import type { Leadership } from '../../leader/leadership.js';
import type { Logger } from '../../logger/logger.js';
import { TokenBucket } from '../../ratelimit/token-bucket.js';
import { LoggingProblemReporter, teeReporter } from '../problems.js';
import type { ProblemReporter } from '../registry.js';
import type { MeshStore } from '../store.js';
import { KubeClient } from './client.js';
import { KubeEventReporter, storeLookup } from './events.js';
import { type KubeConfig, loadKubeConfig } from './kubeconfig.js';
import { KubeRegistry, type KubeRegistryOptions } from './registry.js';

export interface KubeModeOptions {
  /** A kubeconfig file; without it the pod's service account (in-cluster config). */
  kubeconfig?: string;
  inCluster?: boolean;
  meshName: string;
  controlPlaneNamespace: string;
  store: MeshStore;
  logger: Logger;
  /** Told when a type's list+watch starts over (see KubeRegistryOptions.onWatchRestart). */
  onWatchRestart?: KubeRegistryOptions['onWatchRestart'];
  /** Also told every problem of the registry (the controller's problem book). */
  alsoReport?: ProblemReporter;
  /** Only the leader writes Events (pkg/leader); default: always. */
  leadership?: Leadership;
}

export interface KubeMode {
  /** The API connection, for the controller's other clients (CA Secret, webhook). */
  kubeConfig: KubeConfig;
  registry: KubeRegistry;
  /** Records problems as Events; the controller also gives it policy problems. */
  events: KubeEventReporter;
}

/**
 * The controller's Kubernetes side: a KubeRegistry whose problems are logged
 * and recorded as Events. Events go through their own rate limiter (like
 * client-go's event broadcaster) so a burst of them never delays a relist.
 */
export function createKubeMode(o: KubeModeOptions): KubeMode {
  const kubeConfig = loadKubeConfig({
    ...(o.kubeconfig !== undefined ? { kubeconfig: o.kubeconfig } : {}),
    ...(o.inCluster ? { inCluster: true } : {}),
  });
  const events = new KubeEventReporter({
    client: new KubeClient({ kubeConfig, limiter: new TokenBucket(1, 25) }),
    logger: o.logger,
    lookup: storeLookup(o.store),
    ...(o.leadership ? { leadership: o.leadership } : {}),
  });
  const registry = new KubeRegistry({
    kubeConfig,
    meshName: o.meshName,
    controlPlaneNamespace: o.controlPlaneNamespace,
    store: o.store,
    reporter: teeReporter(
      new LoggingProblemReporter(o.logger.child({ component: 'kube-registry' })),
      events,
      ...(o.alsoReport ? [o.alsoReport] : []),
    ),
    logger: o.logger,
    ...(o.onWatchRestart ? { onWatchRestart: o.onWatchRestart } : {}),
  });
  return { kubeConfig, registry, events };
}
