// Waits for the controller Deployment to finish its rollout, reporting each
// change of state — what `skein install` shows while the controller starts.
// The readiness rules are kubectl rollout status's for Deployments.
import type { KubeConfig } from '@kubernetes/client-node';
import { KubeApiError, KubeClient } from '../registry/kube/client.js';
import { isRecord } from '../schema/guards.js';

/** One observation of the rollout. */
export interface ControllerProgress {
  /** True once every desired replica is updated and available. */
  ready: boolean;
  /** False while the Deployment does not exist yet. */
  exists: boolean;
  desiredReplicas: number;
  updatedReplicas: number;
  readyReplicas: number;
  availableReplicas: number;
  /** A sentence for a person, e.g. `1 of 2 updated replicas are available`. */
  message: string;
  /** Why pods are not ready, when that is known, e.g. `skein-controller-x: ImagePullBackOff (...)`. */
  podProblems: string[];
}

export interface WaitForControllerOptions {
  /** The control-plane namespace (default skein-system). */
  namespace?: string;
  /** The Deployment (default skein-controller). */
  name?: string;
  /** Give up after this long (default 5 min); the error names what was still missing. */
  timeoutMs?: number;
  /** Poll interval (default 1 s). */
  intervalMs?: number;
  /** Called on the first observation and whenever the message or pod problems change. */
  onProgress?: (p: ControllerProgress) => void;
  signal?: AbortSignal;
}

/**
 * Polls the controller Deployment until its rollout is complete (observed,
 * all replicas updated and available, no old ones left). Resolves with the
 * last observation; rejects after `timeoutMs` with the state and pod problems
 * (image pulls, crash loops) a person can act on, or at once when the
 * rollout's progress deadline was exceeded.
 */
export async function waitForController(
  kubeConfig: KubeConfig,
  options: WaitForControllerOptions = {},
): Promise<ControllerProgress> {
  const client = new KubeClient({ kubeConfig });
  const namespace = options.namespace ?? 'skein-system';
  const name = options.name ?? 'skein-controller';
  const timeoutMs = options.timeoutMs ?? 300_000;
  const deadline = Date.now() + timeoutMs;
  let lastKey = '';
  for (;;) {
    const p = await observe(client, namespace, name, options.signal);
    const key = `${p.message}|${p.podProblems.join('|')}`;
    if (key !== lastKey) {
      lastKey = key;
      options.onProgress?.(p);
    }
    if (p.ready) return p;
    if (p.message.startsWith('rollout failed'))
      throw new Error(`deployment ${namespace}/${name}: ${p.message}${problems(p)}`);
    if (Date.now() > deadline)
      throw new Error(
        `deployment ${namespace}/${name} not ready after ${Math.round(timeoutMs / 1000)} s: ${p.message}${problems(p)}` +
          ` (see \`kubectl -n ${namespace} describe deployment ${name}\` and \`kubectl -n ${namespace} get events\`)`,
      );
    options.signal?.throwIfAborted();
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 1000));
  }
}

function problems(p: ControllerProgress): string {
  return p.podProblems.length > 0 ? `; ${p.podProblems.join('; ')}` : '';
}

function num(obj: Record<string, unknown>, key: string): number {
  const v = obj[key];
  return typeof v === 'number' ? v : 0;
}

async function observe(
  client: KubeClient,
  namespace: string,
  name: string,
  signal: AbortSignal | undefined,
): Promise<ControllerProgress> {
  const base = `/apis/apps/v1/namespaces/${encodeURIComponent(namespace)}/deployments`;
  let deployment: unknown;
  try {
    deployment = await client.request('GET', `${base}/${encodeURIComponent(name)}`, signal ? { signal } : {});
  } catch (err) {
    if (!(err instanceof KubeApiError && err.status === 404)) throw err;
    return {
      ready: false,
      exists: false,
      desiredReplicas: 0,
      updatedReplicas: 0,
      readyReplicas: 0,
      availableReplicas: 0,
      message: `waiting for deployment ${namespace}/${name} to be created`,
      podProblems: [],
    };
  }
  const d = isRecord(deployment) ? deployment : {};
  const metadata = isRecord(d['metadata']) ? d['metadata'] : {};
  const spec = isRecord(d['spec']) ? d['spec'] : {};
  const status = isRecord(d['status']) ? d['status'] : {};
  const desired = typeof spec['replicas'] === 'number' ? spec['replicas'] : 1;
  const p: ControllerProgress = {
    ready: false,
    exists: true,
    desiredReplicas: desired,
    updatedReplicas: num(status, 'updatedReplicas'),
    readyReplicas: num(status, 'readyReplicas'),
    availableReplicas: num(status, 'availableReplicas'),
    message: '',
    podProblems: [],
  };
  const total = num(status, 'replicas');
  const conditions = Array.isArray(status['conditions']) ? status['conditions'].filter(isRecord) : [];
  const progressing = conditions.find((c) => c['type'] === 'Progressing');
  // Same order of checks as kubectl's DeploymentStatusViewer.
  if (num(status, 'observedGeneration') < num(metadata, 'generation'))
    p.message = 'waiting for the deployment spec update to be observed';
  else if (progressing?.['reason'] === 'ProgressDeadlineExceeded')
    p.message = `rollout failed: progress deadline exceeded (${String(progressing['message'] ?? '')})`;
  else if (p.updatedReplicas < desired)
    p.message = `${p.updatedReplicas} of ${desired} updated replicas are available`;
  else if (total > p.updatedReplicas)
    p.message = `${total - p.updatedReplicas} old replicas are pending termination`;
  else if (p.availableReplicas < p.updatedReplicas)
    p.message = `${p.availableReplicas} of ${p.updatedReplicas} updated replicas are available`;
  else {
    p.ready = true;
    p.message = `${p.availableReplicas} of ${desired} replicas available`;
  }
  if (!p.ready) p.podProblems = await podProblems(client, namespace, spec, signal);
  return p;
}

/** Waiting/terminated reasons of the Deployment's pods (ImagePullBackOff, CrashLoopBackOff, Unschedulable...). */
async function podProblems(
  client: KubeClient,
  namespace: string,
  spec: Record<string, unknown>,
  signal: AbortSignal | undefined,
): Promise<string[]> {
  const selector = isRecord(spec['selector']) ? spec['selector']['matchLabels'] : undefined;
  if (!isRecord(selector)) return [];
  const labelSelector = Object.entries(selector)
    .map(([k, v]) => `${k}=${String(v)}`)
    .join(',');
  let list: unknown;
  try {
    list = await client.request('GET', `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`, {
      query: { labelSelector },
      ...(signal ? { signal } : {}),
    });
  } catch {
    return []; // the user may not be allowed to list pods; the deployment status still tells the story
  }
  const items = isRecord(list) && Array.isArray(list['items']) ? list['items'].filter(isRecord) : [];
  const out: string[] = [];
  for (const pod of items) {
    const podName = isRecord(pod['metadata']) ? String(pod['metadata']['name'] ?? '?') : '?';
    const status = isRecord(pod['status']) ? pod['status'] : {};
    for (const c of Array.isArray(status['conditions']) ? status['conditions'].filter(isRecord) : []) {
      if (c['type'] === 'PodScheduled' && c['status'] === 'False')
        out.push(`${podName}: not scheduled (${String(c['message'] ?? c['reason'] ?? '')})`);
    }
    const containers = Array.isArray(status['containerStatuses']) ? status['containerStatuses'] : [];
    for (const cs of containers.filter(isRecord)) {
      const state = isRecord(cs['state']) ? cs['state'] : {};
      const waiting = isRecord(state['waiting']) ? state['waiting'] : undefined;
      if (waiting && typeof waiting['reason'] === 'string' && waiting['reason'] !== 'ContainerCreating')
        out.push(
          `${podName}: ${waiting['reason']}${waiting['message'] ? ` (${String(waiting['message'])})` : ''}`,
        );
    }
  }
  return out;
}
