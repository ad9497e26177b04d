// The benchmark topology on a real API server (test/support/cluster.ts), for
// skein in Kubernetes mode and a peer control plane reading the same objects:
// namespaces joined to both meshes, pods carrying both proxy-UUID labels, bound
// to a Node and reported Running/Ready as a kubelet would (the EndpointSlice and
// Endpoints controllers then publish them), and the changes as API writes.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CA_CERT_FILE, CA_KEY_FILE } from '../../pkg/certificate/builtin.js';
import { LABEL_MONITORED_BY, LABEL_PROXY_UUID } from '../../pkg/mesh/constants.js';
import { KubeApiError, type KubeClient } from '../../pkg/registry/kube/client.js';
import type { ChangeSink } from './changes.js';
import {
  BENCH_MESH,
  meshConfigDoc,
  podDoc,
  podVersion,
  serviceDoc,
  type Topology,
  trafficSplitDoc,
  trafficTargetDoc,
} from './topology.js';

/**
 * Writes a CA kept in a Secret into `dir` as ca.crt/ca.key, what the fleet's BuiltinCA
 * loads: skein's `skein-ca` (keys ca.crt, ca.key) or OSM's `osm-ca-bundle` (ca.crt,
 * private.key).
 */
export async function exportCaSecret(
  api: KubeClient,
  secret: { namespace: string; name: string; certKey: string; keyKey: string },
  dir: string,
): Promise<void> {
  const s = (await api.request('GET', `/api/v1/namespaces/${secret.namespace}/secrets/${secret.name}`)) as {
    data?: Record<string, string>;
  };
  const crt = s.data?.[secret.certKey];
  const key = s.data?.[secret.keyKey];
  if (!crt || !key)
    throw new Error(`Secret ${secret.namespace}/${secret.name} has no ${secret.certKey} or ${secret.keyKey}`);
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, CA_CERT_FILE), Buffer.from(crt, 'base64'));
  await writeFile(path.join(dir, CA_KEY_FILE), Buffer.from(key, 'base64'), { mode: 0o600 });
}

/** The Node every bench pod is bound to (no kubelet behind it). */
export const BENCH_NODE = 'bench-node';

/** Labels a peer mesh wants on namespaces and pods, besides skein's. */
export interface PeerLabels {
  namespace: Record<string, string>;
  /** The pod label that carries the proxy UUID (the UUID is its value). */
  proxyUuid: string;
}

type Doc = Record<string, unknown>;

function meta(doc: Doc): { name: string; namespace?: string; labels?: Record<string, string> } {
  return doc['metadata'] as { name: string; namespace?: string; labels?: Record<string, string> };
}

/** Where the API server keeps a kind (the plural of the bench's kinds). */
function collection(doc: Doc): string {
  const apiVersion = String(doc['apiVersion']);
  const plural: Record<string, string> = {
    Namespace: 'namespaces',
    Node: 'nodes',
    ServiceAccount: 'serviceaccounts',
    Service: 'services',
    Pod: 'pods',
    TrafficTarget: 'traffictargets',
    TrafficSplit: 'trafficsplits',
    HTTPRouteGroup: 'httproutegroups',
    MeshConfig: 'meshconfigs',
  };
  const kind = String(doc['kind']);
  const p = plural[kind];
  if (!p) throw new Error(`bench: no collection for kind ${kind}`);
  const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  const ns = meta(doc).namespace;
  return ns ? `${base}/namespaces/${ns}/${p}` : `${base}/${p}`;
}

/** Creates an object; one that exists already is fine (a rerun on the same cluster). */
export async function create(api: KubeClient, doc: Doc): Promise<void> {
  try {
    await api.request('POST', collection(doc), { body: doc });
  } catch (err) {
    if (!(err instanceof KubeApiError && err.status === 409)) throw err;
  }
}

async function remove(api: KubeClient, doc: Doc): Promise<void> {
  try {
    await api.request('DELETE', `${collection(doc)}/${meta(doc).name}`, {
      body: { kind: 'DeleteOptions', apiVersion: 'v1', gracePeriodSeconds: 0 },
    });
  } catch (err) {
    if (!(err instanceof KubeApiError && err.status === 404)) throw err;
  }
}

/** Runs `fn` over `items` with at most `limit` in flight. */
async function eachLimited<T>(
  items: readonly T[],
  limit: number,
  fn: (x: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const run = async () => {
    for (;;) {
      const i = next++;
      const item = items[i];
      if (item === undefined) return;
      await fn(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, run));
}

/**
 * A pod as the bench creates it: bound to BENCH_NODE, with the peer's proxy-UUID
 * label too, then Running and Ready with its IP through pods/<name>/status (the
 * status in podDoc is what a kubelet would report; a create ignores it).
 */
async function createPod(api: KubeClient, doc: Doc, peer: PeerLabels, uuid: string): Promise<void> {
  const m = meta(doc);
  const body = {
    ...doc,
    metadata: { ...m, labels: { ...m.labels, [peer.proxyUuid]: uuid } },
    spec: { ...(doc['spec'] as object), nodeName: BENCH_NODE, automountServiceAccountToken: false },
  };
  delete (body as Doc)['status'];
  await create(api, body);
  const status = doc['status'] as { podIP: string };
  const now = new Date().toISOString();
  const conditions = ['PodScheduled', 'Initialized', 'ContainersReady', 'Ready'].map((type) => ({
    type,
    status: 'True',
    lastTransitionTime: now,
  }));
  await api.request('PATCH', `${collection(doc)}/${m.name}/status`, {
    contentType: 'application/merge-patch+json',
    body: {
      status: {
        phase: 'Running',
        podIP: status.podIP,
        podIPs: [{ ip: status.podIP }],
        hostIP: '127.0.0.1',
        startTime: now,
        conditions,
      },
    },
  });
}

/**
 * Applies the topology (planTopology) to the API server: what writeTopology
 * writes as manifests, as objects. `extra` are more objects to create first
 * (the peer's control-plane namespace and MeshConfig).
 */
export async function applyTopology(
  api: KubeClient,
  topo: Topology,
  peer: PeerLabels,
  extra: readonly Doc[] = [],
): Promise<void> {
  await create(api, {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: BENCH_NODE, labels: { 'kubernetes.io/hostname': BENCH_NODE } },
  });
  for (const name of topo.namespaces)
    await create(api, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name, labels: { [LABEL_MONITORED_BY]: BENCH_MESH, ...peer.namespace } },
    });
  await create(api, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'skein-system' } });
  for (const doc of extra) await create(api, doc);
  await create(api, meshConfigDoc(topo.permissive));
  for (const namespace of topo.namespaces)
    await create(api, {
      apiVersion: 'specs.smi-spec.io/v1alpha4',
      kind: 'HTTPRouteGroup',
      metadata: { name: 'all-routes', namespace },
      spec: { matches: [{ name: 'all', pathRegex: '.*', methods: ['*'] }] },
    });
  const podsOf = new Map<number, Topology['proxies']>();
  for (const p of topo.proxies) podsOf.set(p.service, [...(podsOf.get(p.service) ?? []), p]);
  // Services and their accounts before pods: the ServiceAccount admission plugin refuses a pod
  // naming a missing account.
  await eachLimited(topo.services, 16, async (svc) => {
    await create(api, {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: svc.serviceAccount, namespace: svc.namespace },
    });
    await create(api, serviceDoc(svc));
    if (svc.split) {
      await create(api, serviceDoc(svc, `${svc.name}-v1`, 'v1'));
      await create(api, serviceDoc(svc, `${svc.name}-v2`, 'v2'));
      await create(api, trafficSplitDoc(svc, 50));
    }
    const sources = svc.sources.map((i) => topo.services[i]).filter((s) => s !== undefined);
    if (sources.length > 0) await create(api, trafficTargetDoc(`${svc.name}-access`, svc, sources));
  });
  const pods = topo.services.flatMap((svc) =>
    (podsOf.get(svc.index) ?? []).map((p, ordinal) => ({ svc, p, ordinal })),
  );
  await eachLimited(pods, 16, ({ svc, p, ordinal }) =>
    createPod(
      api,
      podDoc(svc, `${svc.name}-${ordinal}`, p.uuid, p.podIP, podVersion(svc, ordinal)),
      peer,
      p.uuid,
    ),
  );
}

/**
 * Waits until the Endpoints controller lists every pod of the topology as a ready
 * address (the peer reads core/v1 Endpoints; skein reads EndpointSlices, which
 * the other controller writes at about the same time).
 */
export async function waitForEndpoints(api: KubeClient, topo: Topology, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const list = (await api.request('GET', '/api/v1/endpoints')) as {
      items: { subsets?: { addresses?: unknown[] }[] }[];
    };
    const ready = list.items.reduce(
      (n, e) => n + (e.subsets ?? []).reduce((m, s) => m + (s.addresses?.length ?? 0), 0),
      0,
    );
    // Every pod backs its service; a split apex's pods back one backend service too.
    const want = topo.proxies.reduce((n, p) => n + (topo.services[p.service]?.split ? 2 : 1), 0);
    if (ready >= want) return;
    if (Date.now() > deadline)
      throw new Error(`endpoints: ${ready} of ${want} addresses ready after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * The bench's changes (changes.ts ChangeDriver) as API writes, for controllers that
 * read the API server: a pod is created and reported Ready (createPod), a
 * TrafficSplit's spec merge-patched, anything else created; removal deletes.
 */
export function kubeChangeSink(api: KubeClient, peer: PeerLabels): ChangeSink {
  return {
    async put(_file, doc) {
      if (doc['kind'] === 'Pod') {
        await createPod(api, doc, peer, meta(doc).labels?.[LABEL_PROXY_UUID] ?? '');
      } else if (doc['kind'] === 'TrafficSplit') {
        await api.request('PATCH', `${collection(doc)}/${meta(doc).name}`, {
          contentType: 'application/merge-patch+json',
          body: { spec: doc['spec'] },
        });
      } else {
        await create(api, doc);
      }
    },
    remove: (_file, doc) => remove(api, doc),
  };
}
