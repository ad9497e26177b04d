// End to end in Kubernetes mode: the real skein-controller process watching a
// real API server (with the real EndpointSlice controller), an Envoy-style
// sidecar client over mTLS ADS, and real proxyless gRPC workloads (one process
// per pod) whose bootstraps and certificates the controller writes
// (--workload-files). Pods are made the way a kubelet would report them:
// created with spec.nodeName, given an IP through the status subresource,
// and marked Ready only once their server is listening.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import {
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type V1Service,
} from '@kubernetes/client-node';
import { TypeUrl } from '../../pkg/envoy/types.js';
import { DEFAULT_TRUST_DOMAIN, LABEL_MONITORED_BY, LABEL_PROXY_UUID } from '../../pkg/mesh/constants.js';
import { proxyCommonName } from '../../pkg/mesh/identity.js';
import { acquireCluster } from '../support/cluster.js';
import { adsClient, fetchLikeEnvoy, proxyCredentials } from '../support/envoy-like.js';
import { validateWithEnvoy } from '../support/envoy-validate.js';
import { createNamespace, createPod, markPodRunning } from '../support/kube.js';
import { KubeMesh, podAddress, untilCalls } from '../support/kube-mesh.js';
import { prepareMeshCluster } from '../support/kube-registry-fixture.js';
import { tally } from '../support/local-mesh.js';
import { freePorts, type JsonLineProcess, sleep } from '../support/processes.js';
import { RawAdsClient } from '../support/xds/test-client.js';

// Names of their own: the cluster may be shared with other test files.
const sfx = randomBytes(3).toString('hex');
const MESH = `skein-mesh-${sfx}`;
const CP = `skein-system-${sfx}`;
const STORE = `bookstore-${sfx}`;
const BUYER = `bookbuyer-${sfx}`;
const THIEF = `bookthief-${sfx}`;
const INVENTORY = `inventory-${sfx}`;
const BOOKSTORE = `bookstore.${STORE}.svc.cluster.local:14001`;

const SMI_ACCESS = { group: 'access.smi-spec.io', version: 'v1alpha3', plural: 'traffictargets' };
const SMI_SPECS = { group: 'specs.smi-spec.io', version: 'v1alpha4', plural: 'httproutegroups' };
const SMI_SPLIT = { group: 'split.smi-spec.io', version: 'v1alpha4', plural: 'trafficsplits' };

const ip = podAddress();

function grpcService(name: string, selector: Record<string, string>): V1Service {
  return {
    metadata: { name },
    spec: {
      selector,
      // Named target port: each test pod listens on a port of its own.
      ports: [{ name: 'grpc-api', port: 14001, targetPort: 'grpc-api', appProtocol: 'grpc' }],
    },
  };
}

function routeGroup(namespace: string, name: string) {
  return {
    apiVersion: 'specs.smi-spec.io/v1alpha4',
    kind: 'HTTPRouteGroup',
    metadata: { name, namespace },
    spec: { matches: [{ name: 'all', pathRegex: '.*', methods: ['*'] }] },
  };
}

function trafficTarget(namespace: string, name: string, destination: string, source: [string, string]) {
  return {
    apiVersion: 'access.smi-spec.io/v1alpha3',
    kind: 'TrafficTarget',
    metadata: { name, namespace },
    spec: {
      destination: { kind: 'ServiceAccount', name: destination, namespace },
      sources: [{ kind: 'ServiceAccount', name: source[1], namespace: source[0] }],
      rules: [{ kind: 'HTTPRouteGroup', name: 'routes', matches: ['all'] }],
    },
  };
}

describe('Kubernetes mode end to end: skein-controller --kubeconfig and real gRPC workloads', {
  timeout: 180_000,
  skip: ip === undefined ? 'no non-loopback IPv4 address to give test pods' : false,
}, () => {
  let release: () => Promise<void>;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let mesh: KubeMesh;
  const ports = new Map<string, number>();
  const servers = new Map<string, JsonLineProcess>();
  const uuids = new Map<string, string>();

  /** Creates a bookstore pod not yet Ready, starts its server, then marks it Ready (a readiness probe passing). */
  async function addBookstorePod(name: string, version: string): Promise<void> {
    const port = ports.get(name);
    assert.ok(port && ip);
    await createPod(core, {
      namespace: STORE,
      name,
      serviceAccountName: 'bookstore',
      labels: { app: 'bookstore', version, [LABEL_PROXY_UUID]: randomUUID() },
      ports: [{ name: 'grpc-api', port }],
    });
    // The IP first: the controller binds the server's listener to the pod IP.
    await markPodRunning(core, STORE, name, ip, false);
    servers.set(name, await mesh.startServer(STORE, name, `${ip}:${port}`));
    await markPodRunning(core, STORE, name, ip, true);
  }

  async function addClientPod(namespace: string, name: string): Promise<void> {
    const uuid = randomUUID();
    uuids.set(name, uuid);
    await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
    await createPod(core, {
      namespace,
      name,
      serviceAccountName: name,
      labels: { app: name, [LABEL_PROXY_UUID]: uuid },
    });
  }

  before(async () => {
    const acquired = await acquireCluster();
    release = acquired.release;
    core = acquired.kubeConfig.makeApiClient(CoreV1Api);
    custom = acquired.kubeConfig.makeApiClient(CustomObjectsApi);
    const names = ['bookstore-v1', 'bookstore-v2', 'bookstore-v1b', 'bookstore-v1c'];
    for (const [i, p] of (await freePorts(names.length)).entries()) ports.set(names[i] ?? '', p);
    await prepareMeshCluster(acquired.kubeConfig, core, CP);
    const inMesh = { [LABEL_MONITORED_BY]: MESH };
    await Promise.all([
      createNamespace(core, STORE, inMesh),
      createNamespace(core, BUYER, inMesh),
      createNamespace(core, THIEF, inMesh),
      createNamespace(core, INVENTORY),
    ]);
    await core.createNamespacedServiceAccount({
      namespace: STORE,
      body: { metadata: { name: 'bookstore' } },
    });
    await core.createNamespacedService({
      namespace: STORE,
      body: grpcService('bookstore', { app: 'bookstore' }),
    });
    for (const v of ['v1', 'v2']) {
      await core.createNamespacedService({
        namespace: STORE,
        body: grpcService(`bookstore-${v}`, { app: 'bookstore', version: v }),
      });
    }
    await custom.createNamespacedCustomObject({
      ...SMI_SPECS,
      namespace: STORE,
      body: routeGroup(STORE, 'routes'),
    });
    await custom.createNamespacedCustomObject({
      ...SMI_ACCESS,
      namespace: STORE,
      body: trafficTarget(STORE, 'bookbuyer-access', 'bookstore', [BUYER, 'bookbuyer']),
    });
    await addClientPod(BUYER, 'bookbuyer');
    await addClientPod(THIEF, 'bookthief');

    mesh = await KubeMesh.start({
      kubeconfigPath: acquired.endpoint.kubeconfigPath,
      meshName: MESH,
      namespace: CP,
    });
    await Promise.all([addBookstorePod('bookstore-v1', 'v1'), addBookstorePod('bookstore-v2', 'v2')]);
  });
  after(async () => {
    await mesh?.stop();
    await Promise.all(
      [CP, STORE, BUYER, THIEF, INVENTORY].map((name) =>
        core?.deleteNamespace({ name }).catch(() => undefined),
      ),
    );
    await release?.();
  });

  test('labelling a namespace brings its services into a connected sidecar; removing the label takes them out', async () => {
    await core.createNamespacedServiceAccount({
      namespace: INVENTORY,
      body: { metadata: { name: 'inventory' } },
    });
    await core.createNamespacedService({
      namespace: INVENTORY,
      body: {
        metadata: { name: 'inventory' },
        spec: { selector: { app: 'inventory' }, ports: [{ name: 'http', port: 8080 }] },
      },
    });
    // Under SMI a service is reachable through the identities of the pods behind it.
    await createPod(core, {
      namespace: INVENTORY,
      name: 'inventory',
      serviceAccountName: 'inventory',
      labels: { app: 'inventory' },
      ports: [8080],
    });
    await custom.createNamespacedCustomObject({
      ...SMI_SPECS,
      namespace: INVENTORY,
      body: routeGroup(INVENTORY, 'routes'),
    });
    await custom.createNamespacedCustomObject({
      ...SMI_ACCESS,
      namespace: INVENTORY,
      body: trafficTarget(INVENTORY, 'bookbuyer-access', 'inventory', [BUYER, 'bookbuyer']),
    });
    // bookbuyer's sidecar, watching CDS over mTLS the way Envoy does (a wildcard, ACKing each push).
    const { credentials, cn } = await proxyCredentials(mesh.stateDir, {
      namespace: BUYER,
      serviceAccount: 'bookbuyer',
      uuid: randomUUID(),
      kind: 'sidecar',
    });
    const client = adsClient(mesh.ports.ads, credentials);
    try {
      client.send({ typeUrl: TypeUrl.Cluster, node: { id: cn, cluster: 'skein-test' } });
      const bookstore = `${STORE}/bookstore|14001`;
      const inventory = `${INVENTORY}/inventory|8080`;
      let clusters = await clustersUntil(client, 'the first CDS response', () => true);
      assert.ok(clusters.includes(bookstore), `bookstore is allowed: ${clusters.join(', ')}`);
      assert.ok(!clusters.includes(inventory), 'an unlabelled namespace is not in the mesh');

      await core.patchNamespace({
        name: INVENTORY,
        body: [{ op: 'add', path: '/metadata/labels', value: { [LABEL_MONITORED_BY]: MESH } }],
      });
      clusters = await clustersUntil(client, 'the inventory cluster', (c) => c.includes(inventory));
      assert.ok(clusters.includes(bookstore));
      // The whole sidecar configuration of this Kubernetes-fed mesh passes Envoy's own rules.
      const full = adsClient(mesh.ports.ads, credentials);
      try {
        const res = await fetchLikeEnvoy(full, cn);
        assert.ok(res.clusters.some((c) => c.name === inventory));
        assert.deepEqual(await validateWithEnvoy(res.encoded), []);
      } finally {
        full.close();
      }

      await core.patchNamespace({
        name: INVENTORY,
        body: [{ op: 'remove', path: `/metadata/labels/${LABEL_MONITORED_BY.replace('/', '~1')}` }],
      });
      clusters = await clustersUntil(client, 'the inventory cluster gone', (c) => !c.includes(inventory));
      assert.ok(clusters.includes(bookstore), 'the rest of the mesh stays');
    } finally {
      client.close();
    }
  });

  test('pods created, scaled up and deleted: EDS follows at a running client and every call succeeds', async () => {
    const buyer = await mesh.startCaller(BUYER, 'bookbuyer', BOOKSTORE, [
      '--interval-ms',
      '5',
      // Generous: a loaded 2-core machine must not turn slowness into a failed call.
      '--deadline-ms',
      '10000',
    ]);
    // What bookbuyer's proxyless channel is told: EDS of the bookstore cluster, watched
    // on a stream of its own over the plaintext ADS port, as grpc-js-xds subscribes.
    const eds = new RawAdsClient({
      address: `127.0.0.1:${mesh.ports.insecureAds}`,
      credentials: grpc.credentials.createInsecure(),
    });
    const nodeId = proxyCommonName({
      uuid: uuids.get('bookbuyer') ?? '',
      kind: 'grpc',
      serviceAccount: 'bookbuyer',
      namespace: BUYER,
      trustDomain: DEFAULT_TRUST_DOMAIN,
    });
    const cluster = `${STORE}/bookstore|14001`;
    eds.send({
      typeUrl: TypeUrl.ClusterLoadAssignment,
      resourceNames: [cluster],
      node: { id: nodeId, cluster: 'skein' },
    });
    const portsOf = (...pods: string[]) => pods.map((p) => ports.get(p) ?? 0).sort((a, b) => a - b);
    try {
      // The two pods from before() may still be on their way through the
      // EndpointSlice controller: wait for both rather than take the first answer.
      const initial = portsOf('bookstore-v1', 'bookstore-v2');
      assert.deepEqual(await endpointPortsUntil(eds, cluster, (p) => p.join() === initial.join()), initial);
      await untilCalls(
        buyer,
        'both bookstore pods answering',
        (t) => (t.ok['bookstore-v1'] ?? 0) > 0 && (t.ok['bookstore-v2'] ?? 0) > 0,
      );
      // Scale up: two more pods behind the same Service.
      await Promise.all([addBookstorePod('bookstore-v1b', 'v1'), addBookstorePod('bookstore-v1c', 'v1')]);
      const four = portsOf('bookstore-v1', 'bookstore-v2', 'bookstore-v1b', 'bookstore-v1c');
      await endpointPortsUntil(eds, cluster, (p) => p.join() === four.join());
      await untilCalls(
        buyer,
        'the new pods answering',
        (t) => (t.ok['bookstore-v1b'] ?? 0) > 0 && (t.ok['bookstore-v1c'] ?? 0) > 0,
      );
      // Delete them but keep their servers running: once the change has
      // converged, no call may reach them any more.
      for (const name of ['bookstore-v1b', 'bookstore-v1c'])
        await core.deleteNamespacedPod({ namespace: STORE, name, gracePeriodSeconds: 0 });
      const two = portsOf('bookstore-v1', 'bookstore-v2');
      await endpointPortsUntil(eds, cluster, (p) => p.join() === two.join());
      const from = await untilCalls(
        buyer,
        'no call to the deleted pods',
        (t) =>
          (t.ok['bookstore-v1b'] ?? 0) === 0 &&
          (t.ok['bookstore-v1c'] ?? 0) === 0 &&
          (t.ok['bookstore-v1'] ?? 0) > 0 &&
          (t.ok['bookstore-v2'] ?? 0) > 0,
      );
      await sleep(1500);
      const settled = tally(buyer, from);
      assert.deepEqual(
        Object.keys(settled.ok).sort(),
        ['bookstore-v1', 'bookstore-v2'],
        `calls after convergence: ${JSON.stringify(settled)}`,
      );
      assert.ok(servers.get('bookstore-v1b')?.child.exitCode === null, 'the deleted pod’s server still runs');
      const total = tally(buyer);
      assert.deepEqual(total.errors, {}, `every call succeeded: ${JSON.stringify(total)}`);
    } finally {
      eds.close();
      await buyer.stop();
    }
  });

  test('a TrafficTarget applied allows a caller; deleting it denies again with PERMISSION_DENIED', async () => {
    const thief = await mesh.startCaller(THIEF, 'bookthief', BOOKSTORE, ['--interval-ms', '20']);
    try {
      await untilCalls(
        thief,
        'only denials',
        (t) => Object.keys(t.ok).length === 0 && (t.errors['PERMISSION_DENIED'] ?? 0) > 0,
      );
      await custom.createNamespacedCustomObject({
        ...SMI_ACCESS,
        namespace: STORE,
        body: trafficTarget(STORE, 'bookthief-access', 'bookstore', [THIEF, 'bookthief']),
      });
      await untilCalls(
        thief,
        'only successes',
        (t) => Object.keys(t.errors).length === 0 && Object.keys(t.ok).length > 0,
      );
      await custom.deleteNamespacedCustomObject({
        ...SMI_ACCESS,
        namespace: STORE,
        name: 'bookthief-access',
      });
      await untilCalls(
        thief,
        'only denials again',
        (t) => Object.keys(t.ok).length === 0 && (t.errors['PERMISSION_DENIED'] ?? 0) > 0,
      );
    } finally {
      await thief.stop();
    }
  });

  test('a TrafficSplit reaches a running client, and its 75/25 weights hold within ±5 points over 1,200 calls', async () => {
    const buyer = await mesh.startCaller(BUYER, 'bookbuyer', BOOKSTORE, ['--interval-ms', '5']);
    const weights = (v1: number, v2: number) => ({
      service: 'bookstore',
      backends: [
        { service: 'bookstore-v1', weight: v1 },
        { service: 'bookstore-v2', weight: v2 },
      ],
    });
    try {
      // All to v1 first: a state a running client shows unmistakably.
      await custom.createNamespacedCustomObject({
        ...SMI_SPLIT,
        namespace: STORE,
        body: {
          apiVersion: 'split.smi-spec.io/v1alpha4',
          kind: 'TrafficSplit',
          metadata: { name: 'bookstore-split', namespace: STORE },
          spec: weights(100, 0),
        },
      });
      await untilCalls(
        buyer,
        'only bookstore-v1',
        (t) => (t.ok['bookstore-v1'] ?? 0) > 20 && Object.keys(t.ok).length === 1,
      );
      await custom.patchNamespacedCustomObject(
        { ...SMI_SPLIT, namespace: STORE, name: 'bookstore-split', body: { spec: weights(75, 25) } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
      await untilCalls(buyer, 'bookstore-v2 back', (t) => (t.ok['bookstore-v2'] ?? 0) > 0);
      assert.deepEqual(tally(buyer).errors, {});
    } finally {
      await buyer.stop();
    }
    const counter = await mesh.startCaller(BUYER, 'bookbuyer', BOOKSTORE, [
      '--count',
      '1200',
      '--interval-ms',
      '0',
    ]);
    const done = await counter.waitFor((l) => l['type'] === 'done', 60_000);
    const r = tally(counter);
    assert.equal(done['type'], 'done');
    assert.deepEqual(r.errors, {});
    const v1 = r.ok['bookstore-v1'] ?? 0;
    const v2 = r.ok['bookstore-v2'] ?? 0;
    assert.equal(v1 + v2, 1200, JSON.stringify(r));
    const share = v1 / 1200;
    assert.ok(Math.abs(share - 0.75) <= 0.05, `bookstore-v1 share ${share.toFixed(3)} not within 0.75±0.05`);
  });

  test('the bookstore namespace leaves the mesh and re-joins: the same caller and servers serve again without a restart', async () => {
    const buyer = await mesh.startCaller(BUYER, 'bookbuyer', BOOKSTORE, [
      '--interval-ms',
      '10',
      '--report-ms',
      '100',
    ]);
    const label = (value: string | null) =>
      core.patchNamespace(
        { name: STORE, body: { metadata: { labels: { [LABEL_MONITORED_BY]: value } } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    try {
      await untilCalls(
        buyer,
        'calls served',
        (t) => Object.keys(t.errors).length === 0 && Object.keys(t.ok).length > 0,
      );
      const pids = [buyer, ...servers.values()].map((p) => p.child.pid);
      await label(null);
      // Out of the mesh: the target has no route (fails at once), the servers deny every caller.
      await untilCalls(
        buyer,
        'only UNAVAILABLE',
        (t) => Object.keys(t.ok).length === 0 && (t.errors['UNAVAILABLE'] ?? 0) > 10,
      );
      await sleep(2000);
      const restored = Date.now();
      const from = buyer.lines.length;
      await label(MESH);
      await buyer.waitFor(
        (l) => l['type'] === 'stats' && Object.keys((l['ok'] ?? {}) as object).length > 0,
        15_000,
        from,
      );
      const tookMs = Date.now() - restored;
      process.stderr.write(`kube mesh: proxyless calls served ${tookMs} ms after the namespace re-joined\n`);
      await untilCalls(
        buyer,
        'only successes again',
        (t) => Object.keys(t.errors).length === 0 && Object.keys(t.ok).length > 0,
      );
      assert.deepEqual(
        [buyer, ...servers.values()].map((p) => p.child.pid),
        pids,
      );
      assert.ok(tookMs < 3000, `served again after ${tookMs} ms`);
    } finally {
      await buyer.stop();
    }
  });
});

/**
 * Reads CDS responses on a stream subscribed to clusters only, ACKing each,
 * until the latest cluster names satisfy `pred`; returns them sorted.
 */
async function clustersUntil(
  client: RawAdsClient,
  what: string,
  pred: (names: string[]) => boolean,
  ms = 20_000,
): Promise<string[]> {
  const deadline = Date.now() + ms;
  let latest: string[] | undefined;
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`never saw ${what} within ${ms} ms; clusters: ${latest?.join(', ')}`);
    const res = await client.next(left).catch(() => undefined);
    if (!res) continue;
    client.ack(res);
    if (res.typeUrl !== TypeUrl.Cluster) continue;
    latest = [...res.names].sort();
    if (pred(latest)) return latest;
  }
}

/** Every `port_value` in a decoded message, sorted. */
function portValues(message: unknown): number[] {
  const out: number[] = [];
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) for (const x of v) walk(x);
    else if (typeof v === 'object' && v !== null) {
      for (const [k, x] of Object.entries(v)) {
        if (k === 'port_value' && typeof x === 'number') out.push(x);
        else walk(x);
      }
    }
  };
  walk(message);
  return out.sort((a, b) => a - b);
}

/**
 * Reads EDS responses on a stream subscribed to one cluster, ACKing each,
 * until the ports of its endpoints satisfy `pred`; returns them sorted.
 */
async function endpointPortsUntil(
  client: RawAdsClient,
  cluster: string,
  pred: (ports: number[]) => boolean,
  ms = 20_000,
): Promise<number[]> {
  const deadline = Date.now() + ms;
  let latest: number[] | undefined;
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0)
      throw new Error(`EDS for ${cluster} never matched within ${ms} ms; last: ${latest?.join()}`);
    const res = await client.next(left).catch(() => undefined);
    if (!res) continue;
    client.ack(res, [cluster]);
    const i = res.names.indexOf(cluster);
    if (res.typeUrl !== TypeUrl.ClusterLoadAssignment || i < 0) continue;
    latest = portValues(res.messages[i]);
    if (pred(latest)) return latest;
  }
}
