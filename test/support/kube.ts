// Small helpers for tests against the real API server (cluster.ts). No kubelet
// runs there, so a test plays its part: create a Node, create pods bound to it
// with spec.nodeName, and report them Running/Ready with an IP through the
// status subresource. The real EndpointSlice controller then publishes them —
// it skips pods whose Node does not exist, and addresses of pods that are not Ready.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import {
  ApiException,
  type CoreV1Api,
  type DiscoveryV1Api,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1EndpointSlice,
  type V1Namespace,
  type V1Node,
  type V1Pod,
} from '@kubernetes/client-node';
import { parse } from 'yaml';
import { KubeApiError, KubeClient } from '../../pkg/registry/kube/client.js';
import { crdDirectory } from '../../pkg/schema/crds.js';
import { sleep } from './processes.js';

/** The Node every helper-made pod is bound to unless told otherwise. */
export const TEST_NODE = 'test-node';

/** Creates a Node object (no kubelet behind it); an existing one is fine. */
export async function createNode(core: CoreV1Api, name = TEST_NODE): Promise<V1Node> {
  try {
    return await core.createNode({
      body: { metadata: { name, labels: { 'kubernetes.io/hostname': name } } },
    });
  } catch (err) {
    if (err instanceof ApiException && err.code === 409) return core.readNode({ name });
    throw err;
  }
}

/**
 * Creates a Namespace and waits until the serviceaccount controller made its
 * `default` ServiceAccount: the ServiceAccount admission plugin refuses pods
 * that name a missing account.
 */
export async function createNamespace(
  core: CoreV1Api,
  name: string,
  labels: Record<string, string> = {},
  annotations: Record<string, string> = {},
): Promise<V1Namespace> {
  const ns = await core.createNamespace({ body: { metadata: { name, labels, annotations } } });
  await waitFor(`ServiceAccount ${name}/default`, async () => {
    try {
      await core.readNamespacedServiceAccount({ namespace: name, name: 'default' });
      return true;
    } catch (err) {
      if (err instanceof ApiException && err.code === 404) return false;
      throw err;
    }
  });
  return ns;
}

export interface TestPodSpec {
  namespace: string;
  name: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** Default `default` (must exist; see createNamespace). */
  serviceAccountName?: string;
  /** Default TEST_NODE (must exist; see createNode). */
  nodeName?: string;
  /** Container ports, named `port-<n>` unless given as { name, port }. */
  ports?: (number | { name: string; port: number })[];
}

/** Creates a pod already bound to a node (spec.nodeName), as the scheduler would. */
export function createPod(core: CoreV1Api, spec: TestPodSpec): Promise<V1Pod> {
  const ports = (spec.ports ?? []).map((p) =>
    typeof p === 'number' ? { name: `port-${p}`, containerPort: p } : { name: p.name, containerPort: p.port },
  );
  return core.createNamespacedPod({
    namespace: spec.namespace,
    body: {
      metadata: { name: spec.name, labels: spec.labels ?? {}, annotations: spec.annotations ?? {} },
      spec: {
        nodeName: spec.nodeName ?? TEST_NODE,
        serviceAccountName: spec.serviceAccountName ?? 'default',
        containers: [{ name: 'app', image: 'example.invalid/app:test', ports }],
      },
    },
  });
}

/**
 * Reports a pod Running and Ready with `ip`, through pods/<name>/status as a
 * kubelet would. `ready: false` reports it Running but not Ready (the
 * EndpointSlice controller then lists it with ready=false).
 */
export function markPodRunning(
  core: CoreV1Api,
  namespace: string,
  name: string,
  ip: string,
  ready = true,
): Promise<V1Pod> {
  const now = new Date().toISOString();
  const status = ready ? 'True' : 'False';
  const body = {
    status: {
      phase: 'Running',
      // podIPs[0] must equal podIP (API validation).
      podIP: ip,
      podIPs: [{ ip }],
      hostIP: '127.0.0.1',
      startTime: now,
      conditions: [
        { type: 'PodScheduled', status: 'True', lastTransitionTime: now },
        { type: 'Initialized', status: 'True', lastTransitionTime: now },
        { type: 'ContainersReady', status, lastTransitionTime: now },
        { type: 'Ready', status, lastTransitionTime: now },
      ],
    },
  };
  // A JSON merge patch replaces the conditions list whole, so the result does not depend on earlier state.
  return core.patchNamespacedPodStatus(
    { namespace, name, body },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

/** The EndpointSlices the controller published for a Service (label kubernetes.io/service-name). */
export async function endpointSlicesOf(
  discovery: DiscoveryV1Api,
  namespace: string,
  service: string,
): Promise<V1EndpointSlice[]> {
  const list = await discovery.listNamespacedEndpointSlice({
    namespace,
    labelSelector: `kubernetes.io/service-name=${service}`,
  });
  return list.items;
}

/** Ready endpoint addresses of a Service across its slices, sorted. */
export async function readyAddresses(
  discovery: DiscoveryV1Api,
  namespace: string,
  service: string,
): Promise<string[]> {
  const slices = await endpointSlicesOf(discovery, namespace, service);
  return slices
    .flatMap((s) => s.endpoints ?? [])
    .filter((e) => e.conditions?.ready === true)
    .flatMap((e) => e.addresses)
    .sort();
}

/** Polls `probe` every 100 ms until it returns true; throws after `timeoutMs`. */
export async function waitFor(
  what: string,
  probe: () => Promise<boolean>,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(100);
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Creates skein's CRDs (charts/skein/crds) as raw JSON — client-node's typed
 * serializer would drop `x-kubernetes-*` schema keys — and waits until each is
 * Established. CRDs that exist already (a shared cluster) are fine.
 */
export async function applyCrds(kc: KubeConfig): Promise<void> {
  const dir = crdDirectory();
  await applyCrdFiles(
    kc,
    readdirSync(dir)
      .filter((f) => f.endsWith('.yaml'))
      .map((f) => path.join(dir, f)),
  );
}

/** applyCrds for any CRD files (another mesh's, for the benchmark's peer). */
export async function applyCrdFiles(kc: KubeConfig, files: readonly string[]): Promise<void> {
  const client = new KubeClient({ kubeConfig: kc });
  const base = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
  for (const file of files) {
    const body: unknown = parse(readFileSync(file, 'utf8'));
    if (!isRecord(body) || !isRecord(body['metadata'])) throw new Error(`${file}: not a CRD`);
    const name = String(body['metadata']['name']);
    try {
      await client.request('POST', base, { body });
    } catch (err) {
      if (!(err instanceof KubeApiError && err.status === 409)) throw err;
    }
    await waitFor(`CRD ${name} Established`, async () => {
      const crd = await client.request('GET', `${base}/${name}`);
      const status = isRecord(crd) ? crd['status'] : undefined;
      const conditions = isRecord(status) && Array.isArray(status['conditions']) ? status['conditions'] : [];
      return conditions.some((c) => isRecord(c) && c['type'] === 'Established' && c['status'] === 'True');
    });
  }
}

/**
 * Creates or replaces (with its current resourceVersion) a namespaced custom object
 * at `apis/<group>/<version>/namespaces/<ns>/<plural>`.
 */
export async function applyCustomObject(
  api: KubeClient,
  group: string,
  version: string,
  plural: string,
  body: Record<string, unknown>,
  ns: string,
): Promise<void> {
  const name = String((body['metadata'] as { name: string }).name);
  const base = `/apis/${group}/${version}/namespaces/${ns}/${plural}`;
  try {
    const current = (await api.request('GET', `${base}/${name}`)) as {
      metadata: { resourceVersion: string };
    };
    const meta = { ...(body['metadata'] as object), resourceVersion: current.metadata.resourceVersion };
    await api.request('PUT', `${base}/${name}`, { body: { ...body, metadata: meta } });
  } catch (err) {
    if (!(err instanceof KubeApiError && err.status === 404)) throw err;
    await api.request('POST', base, { body });
  }
}

/** The tests' TrafficSplit of `bookstore` over bookstore-v1 and bookstore-v2. */
export function bookstoreSplit(ns: string, v1: number, v2: number): Record<string, unknown> {
  return {
    apiVersion: 'split.smi-spec.io/v1alpha4',
    kind: 'TrafficSplit',
    metadata: { name: 'bookstore-split', namespace: ns },
    spec: {
      service: 'bookstore',
      backends: [
        { service: 'bookstore-v1', weight: v1 },
        { service: 'bookstore-v2', weight: v2 },
      ],
    },
  };
}
