// One read of the mesh from the API server into a MeshStore, so the CLI can ask
// skein's own policy engine (buildMeshView) the questions the controller would.
// Objects are checked exactly as the Kubernetes registry checks them; those it
// would ignore are ignored here too, with a warning saying why.
import { LABEL_MONITORED_BY } from '../mesh/constants.js';
import type { ObjectKind } from '../model/objects.js';
import { watchedTypes } from '../registry/kube/types.js';
import { MeshStore } from '../registry/store.js';
import { validateManifest } from '../registry/validate.js';
import type { Kube } from './kube.js';
import { record, str } from './kube.js';

/**
 * What policy needs. ServiceAccounts do not change who may talk to whom;
 * EndpointSlices do for ingress (an IngressBackend's Service source is its
 * endpoint addresses).
 */
const POLICY_KINDS: readonly ObjectKind[] = [
  'Service',
  'Pod',
  'EndpointSlice',
  'TrafficTarget',
  'HTTPRouteGroup',
  'TCPRoute',
  'TrafficSplit',
  'Egress',
  'IngressBackend',
  // Also the routes of skein's ingress gateway (`skein ingress routes`).
  'Ingress',
  'UpstreamTrafficSetting',
];

export interface MeshSnapshot {
  store: MeshStore;
  /** Objects skein ignores (invalid), one line each. */
  warnings: string[];
}

/** `/api/v1/services` → `/api/v1/namespaces/<ns>/services`. */
export function namespacedPath(clusterPath: string, namespace: string): string {
  const slash = clusterPath.lastIndexOf('/');
  return `${clusterPath.slice(0, slash)}/namespaces/${encodeURIComponent(namespace)}${clusterPath.slice(slash)}`;
}

export async function readMeshSnapshot(
  kube: Kube,
  meshName: string,
  controlPlaneNamespace: string,
): Promise<MeshSnapshot> {
  const store = new MeshStore();
  const warnings: string[] = [];
  const types = watchedTypes(controlPlaneNamespace);
  const typeOf = (kind: ObjectKind) => {
    const t = types.find((x) => x.kind === kind);
    if (!t) throw new Error(`no API path for ${kind}`);
    return t;
  };
  const put = (kind: ObjectKind, apiVersion: string, raw: Record<string, unknown>) => {
    // List items of built-in kinds carry no apiVersion/kind.
    const result = validateManifest({ ...raw, apiVersion, kind }, { unknownFields: 'prune' });
    if (result.ok) store.upsert(result.object);
    else {
      const meta = record(raw['metadata']);
      const ns = str(meta['namespace']);
      warnings.push(
        `${kind} ${ns ? `${ns}/` : ''}${str(meta['name']) ?? '?'} is ignored by skein: ${result.reason}`,
      );
    }
  };

  const nsType = typeOf('Namespace');
  const namespaces = await kube.list(nsType.path, { labelSelector: `${LABEL_MONITORED_BY}=${meshName}` });
  for (const n of namespaces) put('Namespace', nsType.apiVersion, n);
  const mcType = typeOf('MeshConfig');
  for (const m of await kube.list(mcType.path)) put('MeshConfig', mcType.apiVersion, m);

  const names = namespaces.map((n) => str(record(n['metadata'])['name']) ?? '').filter(Boolean);
  const lists = await Promise.all(
    names.flatMap((ns) =>
      POLICY_KINDS.map(async (kind) => {
        const t = typeOf(kind);
        return { t, items: await kube.list(namespacedPath(t.path, ns)) };
      }),
    ),
  );
  for (const { t, items } of lists) for (const item of items) put(t.kind, t.apiVersion, item);
  return { store, warnings };
}
