// What the KubeRegistry tests against a real API server share: preparing the
// cluster (CRDs, the test Node, the control-plane namespace), a registry tuned
// for tests (fast retries, no client-side throttling to speak of), SMI
// TrafficTarget bodies and an assertion-retrying `eventually`.
import type { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { silentLogger } from '../../pkg/logger/logger.js';
import { KubeRegistry } from '../../pkg/registry/kube/registry.js';
import type { ProblemReporter } from '../../pkg/registry/registry.js';
import { eventually as retry } from './kube/eventually.js';
import { applyCrds, createNamespace, createNode } from './kube.js';

export const SMI_ACCESS = { group: 'access.smi-spec.io', version: 'v1alpha3', plural: 'traffictargets' };
export const SMI_SPLIT = { group: 'split.smi-spec.io', version: 'v1alpha4', plural: 'trafficsplits' };

/** A TrafficTarget in `namespace` letting SA `client` there reach SA `web` in `destNamespace` over TCP. */
export function trafficTargetBody(
  namespace: string,
  name: string,
  destNamespace = namespace,
): Record<string, unknown> {
  return {
    apiVersion: 'access.smi-spec.io/v1alpha3',
    kind: 'TrafficTarget',
    metadata: { name, namespace },
    spec: {
      destination: { kind: 'ServiceAccount', name: 'web', namespace: destNamespace },
      sources: [{ kind: 'ServiceAccount', name: 'client', namespace }],
      rules: [{ kind: 'TCPRoute', name: 'all' }],
    },
  };
}

/** A TrafficTarget letting SA `source` (`[namespace, name]`) reach SA `destination` in `namespace` on HTTPRouteGroup matches. */
export function httpTrafficTargetBody(o: {
  namespace: string;
  name: string;
  destination: string;
  source: [string, string];
  routeGroup: string;
  matches: string[];
}): Record<string, unknown> {
  return {
    apiVersion: 'access.smi-spec.io/v1alpha3',
    kind: 'TrafficTarget',
    metadata: { name: o.name, namespace: o.namespace },
    spec: {
      destination: { kind: 'ServiceAccount', name: o.destination, namespace: o.namespace },
      sources: [{ kind: 'ServiceAccount', name: o.source[1], namespace: o.source[0] }],
      rules: [{ kind: 'HTTPRouteGroup', name: o.routeGroup, matches: o.matches }],
    },
  };
}

/** Retries `check` every 100 ms until it stops throwing; after `ms`, throws its last error, prefixed by `what`. */
export async function eventually(
  what: string,
  check: () => void | Promise<void>,
  ms = 20_000,
): Promise<void> {
  try {
    await retry(check, ms, 100);
  } catch (err) {
    throw new Error(`${what}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** skein's CRDs, the test Node and the control-plane namespace `controlPlaneNamespace`. */
export async function prepareMeshCluster(
  kc: KubeConfig,
  core: CoreV1Api,
  controlPlaneNamespace: string,
): Promise<void> {
  await applyCrds(kc);
  await createNode(core);
  await createNamespace(core, controlPlaneNamespace);
}

export interface TestKubeRegistryOptions {
  kubeConfig: KubeConfig;
  meshName: string;
  controlPlaneNamespace: string;
  reporter: ProblemReporter;
}

/**
 * A KubeRegistry with test tuning: a high QPS budget and quick retries. Not
 * started: the caller holds it first, so its `after` stops it even when start() fails.
 */
export function testKubeRegistry(o: TestKubeRegistryOptions): KubeRegistry {
  return new KubeRegistry({
    ...o,
    logger: silentLogger(),
    qps: 50,
    burst: 50,
    backoff: { initialMs: 100, maxMs: 2000 },
  });
}
