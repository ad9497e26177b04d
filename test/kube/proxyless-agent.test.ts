// Proxyless workloads prove who they are, against the real API server: the
// real skein-controller (Kubernetes mode, no plaintext ADS port) injects pods
// annotated skein.dev/proxyless through the real admission chain; each pod's
// skein-agent (its own process, with the pod's bootstrap Secret as its files,
// as kubelet would mount them) relays real grpc-js-xds workloads' ADS to the
// controller over mTLS. Calls between two such pods succeed over mTLS with
// the injected certificate as their data-plane identity; a workload that
// claims another pod's identity gets nothing.
import assert from 'node:assert/strict';
import { randomBytes, X509Certificate } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { LABEL_MONITORED_BY, LABEL_PROXY_UUID } from '../../pkg/mesh/constants.js';
import { KubeClient } from '../../pkg/registry/kube/client.js';
import { acquireCluster } from '../support/cluster.js';
import { createNamespace, createPod, markPodRunning } from '../support/kube.js';
import { type KubeController, startKubeController } from '../support/kube-controller.js';
import { podAddress, untilCalls } from '../support/kube-mesh.js';
import {
  eventually,
  httpTrafficTargetBody,
  prepareMeshCluster,
  SMI_ACCESS,
} from '../support/kube-registry-fixture.js';
import { tally } from '../support/local-mesh.js';
import { freePorts, type JsonLineProcess, sleep, spawnNode } from '../support/processes.js';

const dist = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const agentScript = path.join(dist, 'cmd', 'skein-agent', 'main.js');
const workloadScript = path.join(dist, 'test', 'apps', 'workload.js');

const sfx = randomBytes(3).toString('hex');
const MESH = `agent-${sfx}`;
const CP = `skein-system-agent-${sfx}`;
const STORE = `store-agent-${sfx}`;
const BUYER = `buyer-agent-${sfx}`;
const CONFIG = `skein-sidecar-injector-${MESH}`;
const WEBHOOKS_PATH = '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations';
const TARGET = `bookstore.${STORE}.svc.cluster.local:14001`;
const ip = podAddress();

/** A pod as its containers see it: the Secret's files, the agent's socket, the bootstrap. */
interface PodFiles {
  uuid: string;
  commonName: string;
  /** The grpc-js-xds bootstrap with the pod's paths moved under this test's directory. */
  bootstrap: string;
  socket: string;
  secretDir: string;
}

describe('proxyless workloads behind skein-agent (Kubernetes mode, real admission)', {
  timeout: 240_000,
  skip: ip === undefined ? 'no non-loopback IPv4 address to give test pods' : false,
}, () => {
  let release: () => Promise<void> = async () => {};
  let api: KubeClient;
  let core: CoreV1Api;
  let controller: KubeController | undefined;
  let adsPort = 0;
  let httpPort = 0;
  let root = '';
  let storePort = 0;
  const children: JsonLineProcess[] = [];
  const pods = new Map<string, PodFiles>();
  const agents = new Map<string, JsonLineProcess>();

  function spawn(name: string, script: string, args: string[], env: NodeJS.ProcessEnv = {}): JsonLineProcess {
    const p = spawnNode(name, script, args, env);
    children.push(p);
    return p;
  }

  /** Creates a pod through the API server (the webhook injects it) and lays out its files as kubelet would. */
  async function admit(namespace: string, name: string, sa: string, port?: number): Promise<PodFiles> {
    const stored = await createPod(core, {
      namespace,
      name,
      serviceAccountName: sa,
      labels: { app: name.replace(/-\d+$/, '') },
      annotations: { 'skein.dev/proxyless': 'true' },
      ...(port !== undefined ? { ports: [{ name: 'grpc-api', port }] } : {}),
    });
    const uuid = stored.metadata?.labels?.[LABEL_PROXY_UUID];
    assert.ok(uuid, 'the webhook labelled the pod with its proxy UUID');
    // --native-sidecars=auto against this API server (1.29+): the agent is a native sidecar.
    const agent = stored.spec?.initContainers?.find((c) => c.name === 'skein-agent');
    assert.equal(agent?.restartPolicy, 'Always');
    assert.deepEqual(agent?.args?.slice(0, 2), [
      '--controller',
      `skein-controller.${CP}.svc.cluster.local:15128`,
    ]);
    assert.deepEqual(
      stored.spec?.containers?.[0]?.env?.map((e) => ({ name: e.name, value: e.value })),
      [{ name: 'GRPC_XDS_BOOTSTRAP', value: '/etc/skein/grpc-bootstrap.json' }],
    );
    assert.equal(stored.spec?.containers?.length, 1, 'no Envoy');

    const secret = await core.readNamespacedSecret({ namespace, name: `skein-bootstrap-${uuid}` });
    const data = (key: string) => Buffer.from(String(secret.data?.[key]), 'base64').toString();
    const dir = path.join(root, name);
    const secretDir = path.join(dir, 'etc', 'skein');
    const runDir = path.join(dir, 'var', 'run', 'skein');
    await mkdir(secretDir, { recursive: true });
    await mkdir(runDir, { recursive: true });
    for (const key of ['tls.crt', 'tls.key', 'ca.crt']) await writeFile(path.join(secretDir, key), data(key));
    const grpcBootstrap = data('grpc-bootstrap.json')
      .replaceAll('/etc/skein/', `${secretDir}/`)
      .replaceAll('/var/run/skein/', `${runDir}/`);
    const bootstrap = path.join(secretDir, 'grpc-bootstrap.json');
    await writeFile(bootstrap, grpcBootstrap);
    const parsed = JSON.parse(grpcBootstrap) as {
      node: { id: string };
      xds_servers: { server_uri: string }[];
    };
    return {
      uuid,
      commonName: parsed.node.id,
      bootstrap,
      socket: parsed.xds_servers[0]?.server_uri ?? '',
      secretDir,
    };
  }

  /** The pod's skein-agent: its Secret's files, its socket, the controller's mTLS port. */
  async function startAgent(name: string, files: PodFiles): Promise<JsonLineProcess> {
    const p = spawn(`agent ${name}`, agentScript, [
      ...['--controller', `127.0.0.1:${adsPort}`, '--server-name', 'localhost'],
      ...['--listen', files.socket],
      ...['--cert', path.join(files.secretDir, 'tls.crt'), '--key', path.join(files.secretDir, 'tls.key')],
      ...['--ca', path.join(files.secretDir, 'ca.crt')],
    ]);
    await p.waitFor((l) => l['msg'] === 'skein-agent ready', 15_000);
    agents.set(name, p);
    return p;
  }

  type ProxyStatus = { identity: { cn: string }; clientCert?: { serial: string; notAfter: string } };
  async function debugProxies(): Promise<ProxyStatus[]> {
    return (await fetch(`http://127.0.0.1:${httpPort}/debug/proxies`)).json() as Promise<ProxyStatus[]>;
  }

  /** Kubelet's part of a Secret volume: the pod's files follow the Secret, each replaced atomically. */
  async function syncSecret(namespace: string, files: PodFiles): Promise<number> {
    const secret = await core.readNamespacedSecret({ namespace, name: `skein-bootstrap-${files.uuid}` });
    let changed = 0;
    for (const key of ['tls.crt', 'tls.key', 'ca.crt']) {
      const file = path.join(files.secretDir, key);
      const content = Buffer.from(String(secret.data?.[key]), 'base64').toString();
      if ((await readFile(file, 'utf8')) === content) continue;
      await writeFile(`${file}.new`, content);
      await rename(`${file}.new`, file);
      changed++;
    }
    return changed;
  }

  before(async () => {
    const cluster = await acquireCluster();
    release = cluster.release;
    const kc = cluster.kubeConfig;
    api = new KubeClient({ kubeConfig: kc });
    core = kc.makeApiClient(CoreV1Api);
    const custom = kc.makeApiClient(CustomObjectsApi);
    await prepareMeshCluster(kc, core, CP);
    const inMesh = { [LABEL_MONITORED_BY]: MESH };
    const enabled = { 'skein.dev/sidecar-injection': 'enabled' };
    await createNamespace(core, STORE, inMesh, enabled);
    await createNamespace(core, BUYER, inMesh, enabled);
    await core.createNamespacedServiceAccount({
      namespace: STORE,
      body: { metadata: { name: 'bookstore' } },
    });
    await core.createNamespacedServiceAccount({
      namespace: BUYER,
      body: { metadata: { name: 'bookbuyer' } },
    });
    await core.createNamespacedService({
      namespace: STORE,
      body: {
        metadata: { name: 'bookstore' },
        spec: {
          selector: { app: 'bookstore' },
          ports: [{ name: 'grpc-api', port: 14001, targetPort: 'grpc-api', appProtocol: 'grpc' }],
        },
      },
    });
    await custom.createNamespacedCustomObject({
      group: 'specs.smi-spec.io',
      version: 'v1alpha4',
      plural: 'httproutegroups',
      namespace: STORE,
      body: {
        apiVersion: 'specs.smi-spec.io/v1alpha4',
        kind: 'HTTPRouteGroup',
        metadata: { name: 'routes', namespace: STORE },
        spec: { matches: [{ name: 'all', pathRegex: '.*', methods: ['*'] }] },
      },
    });
    await custom.createNamespacedCustomObject({
      ...SMI_ACCESS,
      namespace: STORE,
      body: httpTrafficTargetBody({
        namespace: STORE,
        name: 'bookbuyer-access',
        destination: 'bookstore',
        source: [BUYER, 'bookbuyer'],
        routeGroup: 'routes',
        matches: ['all'],
      }),
    });

    // Bootstrap certificates of 45 s (renewed ~10 s after issuance: the CA backdates 60 s), so
    // the pods live through rotations within the test.
    await custom.createNamespacedCustomObject({
      group: 'config.skein.dev',
      version: 'v1alpha1',
      plural: 'meshconfigs',
      namespace: CP,
      body: {
        apiVersion: 'config.skein.dev/v1alpha1',
        kind: 'MeshConfig',
        metadata: { name: 'skein', namespace: CP },
        spec: { certificate: { bootstrapValidity: '45s' } },
      },
    });
    const [webhookPort = 0, port = 0] = await freePorts(2);
    storePort = port;
    controller = await startKubeController({
      kubeconfigPath: cluster.endpoint.kubeconfigPath,
      meshName: MESH,
      namespace: CP,
      stateDirPrefix: 'skein-agent-',
      args: [
        ...['--webhook-port', String(webhookPort), '--extra-san', '127.0.0.1'],
        ...['--min-push-interval', '50ms', '--debug'],
      ],
    });
    adsPort = Number(controller.ready['ads']);
    httpPort = Number(controller.ready['http']);
    // Secure by default: no plaintext ADS port unless --insecure-ads-port is given.
    assert.equal(controller.ready['insecureAds'], undefined);

    const clientConfig = { url: `https://127.0.0.1:${webhookPort}/mutate-pod-creation` };
    await api.request('POST', WEBHOOKS_PATH, {
      body: {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'MutatingWebhookConfiguration',
        metadata: { name: CONFIG },
        webhooks: [
          {
            name: 'sidecar-injector.skein.dev',
            clientConfig,
            rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
            namespaceSelector: { matchLabels: inMesh },
            sideEffects: 'NoneOnDryRun',
            admissionReviewVersions: ['v1'],
            failurePolicy: 'Fail',
            timeoutSeconds: 10,
          },
        ],
      },
    });
    // The controller fills in the caBundle; a dry run proves the API server trusts the webhook.
    await eventually(
      'the API server calls the webhook',
      async () => {
        const probe = await core.createNamespacedPod({
          namespace: BUYER,
          dryRun: 'All',
          body: {
            metadata: { name: 'probe', annotations: { 'skein.dev/proxyless': 'true' } },
            spec: { containers: [{ name: 'app', image: 'example.invalid/app:test' }] },
          },
        });
        assert.ok(probe.metadata?.labels?.[LABEL_PROXY_UUID]);
      },
      30_000,
    );
    root = await mkdtemp(path.join(tmpdir(), 'skein-agent-pods-'));
  });

  after(async () => {
    await Promise.all(children.map((c) => c.stop()));
    await api?.request('DELETE', `${WEBHOOKS_PATH}/${CONFIG}`).catch(() => undefined);
    await controller?.stop();
    for (const name of [STORE, BUYER, CP]) await core?.deleteNamespace({ name }).catch(() => undefined);
    if (root) await rm(root, { recursive: true, force: true });
    await release();
  });

  test('a proxyless server and caller get their config through their agents and call each other over mTLS', async () => {
    assert.ok(ip);
    const store = await admit(STORE, 'bookstore-1', 'bookstore', storePort);
    const buyer = await admit(BUYER, 'bookbuyer-1', 'bookbuyer');
    pods.set('store', store);
    pods.set('buyer', buyer);
    assert.equal(store.commonName, `${store.uuid}.grpc.bookstore.${STORE}.cluster.local`);
    // One certificate: the ADS client identity (CN) and the data-plane one (URI SAN) callers pin.
    const cert = new X509Certificate(await readFile(path.join(store.secretDir, 'tls.crt')));
    assert.match(cert.subject, new RegExp(`CN=${store.commonName.replaceAll('.', '\\.')}`));
    assert.equal(cert.subjectAltName, `URI:spiffe://cluster.local/ns/${STORE}/sa/bookstore`);

    await startAgent('bookstore-1', store);
    await startAgent('bookbuyer-1', buyer);
    await markPodRunning(core, STORE, 'bookstore-1', ip, false);
    await markPodRunning(core, BUYER, 'bookbuyer-1', ip, true);
    // The server's Listener (mTLS required, RBAC from the TrafficTarget) arrives only over xDS.
    const server = spawn(
      'server bookstore-1',
      workloadScript,
      ['server', '--name', 'bookstore-1', '--listen', `${ip}:${storePort}`],
      {
        GRPC_XDS_BOOTSTRAP: store.bootstrap,
      },
    );
    await server.waitFor((l) => l['type'] === 'listening', 30_000);
    await markPodRunning(core, STORE, 'bookstore-1', ip, true);

    const caller = spawn('caller bookbuyer-1', workloadScript, ['caller', '--target', `xds:///${TARGET}`], {
      GRPC_XDS_BOOTSTRAP: buyer.bootstrap,
    });
    const from = await untilCalls(
      caller,
      'calls answered by bookstore-1',
      (t) => (t.ok['bookstore-1'] ?? 0) > 0,
      60_000,
    );
    await sleep(1_500);
    const t = tally(caller, from);
    assert.ok((t.ok['bookstore-1'] ?? 0) >= 20, JSON.stringify(t));
    assert.deepEqual(t.errors, {}, 'no failed call once the route is there');

    // Both identities came from the certificates their agents presented (mTLS streams).
    const proxies = await debugProxies();
    for (const cn of [store.commonName, buyer.commonName]) {
      const p = proxies.find((x) => x.identity.cn === cn);
      assert.ok(p?.clientCert, `${cn} is connected over mTLS: ${JSON.stringify(proxies)}`);
    }
  });

  test('a workload claiming another identity gets nothing: refused by its agent, and the controller has no plaintext port', async () => {
    const store = pods.get('store');
    const buyer = pods.get('buyer');
    assert.ok(store && buyer, 'needs the pods of the previous test');
    // In the buyer pod, a bootstrap naming the bookstore's proxy: its agent holds only the buyer's key.
    const claim = path.join(root, 'impostor-bootstrap.json');
    const own = JSON.parse(await readFile(buyer.bootstrap, 'utf8')) as { node: { id: string } };
    own.node.id = store.commonName;
    await writeFile(claim, JSON.stringify(own));
    const agentLines = children.find((c) => c.name === 'agent bookbuyer-1');
    assert.ok(agentLines);
    const refusedFrom = agentLines.lines.length;
    const impostor = spawn(
      'impostor',
      workloadScript,
      ['caller', '--target', `xds:///${TARGET}`, '--deadline-ms', '2000'],
      {
        GRPC_XDS_BOOTSTRAP: claim,
      },
    );
    const refusal = await agentLines.waitFor(
      (l) => /refused ADS stream/.test(String(l['msg'])) && l['code'] === 'PERMISSION_DENIED',
      20_000,
      refusedFrom,
    );
    assert.match(
      String(refusal['msg']),
      new RegExp(`node\\.id "${store.commonName.replaceAll('.', '\\.')}" is not this pod's identity`),
    );
    // Its calls fail (a loaded machine may take more than a few seconds to start it), and none succeeds.
    const failed = (t: ReturnType<typeof tally>) => Object.values(t.errors).reduce((a, b) => a + b, 0) > 0;
    await eventually(
      'the impostor made calls, and they failed',
      () => assert.ok(failed(tally(impostor, 0))),
      30_000,
    );
    await sleep(2_000);
    const t = tally(impostor, 0);
    assert.deepEqual(t.ok, {}, `the impostor got no answer: ${JSON.stringify(t)}`);
    // The controller saw the bookstore identity only on the bookstore agent's stream.
    const streams = (await debugProxies()).filter((p) => p.identity.cn === store.commonName);
    assert.equal(streams.length, 1, JSON.stringify(streams));

    // Without an agent: the same claim in plaintext straight at the controller's ADS port.
    const direct = JSON.parse(await readFile(store.bootstrap, 'utf8')) as {
      xds_servers: { server_uri: string }[];
    };
    const [xdsServer] = direct.xds_servers;
    assert.ok(xdsServer);
    xdsServer.server_uri = `127.0.0.1:${adsPort}`;
    const directFile = path.join(root, 'direct-bootstrap.json');
    await writeFile(directFile, JSON.stringify(direct));
    const plain = spawn(
      'plaintext impostor',
      workloadScript,
      ['caller', '--target', `xds:///${TARGET}`, '--deadline-ms', '2000'],
      {
        GRPC_XDS_BOOTSTRAP: directFile,
      },
    );
    await eventually(
      'the plaintext impostor made calls, and they failed',
      () => assert.ok(failed(tally(plain, 0))),
      30_000,
    );
    await sleep(2_000);
    const p = tally(plain, 0);
    assert.deepEqual(p.ok, {}, `plaintext to the mTLS port got no config: ${JSON.stringify(p)}`);
    assert.equal((await debugProxies()).filter((x) => x.identity.cn === store.commonName).length, 1);
  });

  test('the pod certificates rotate under traffic: the agent and both workloads move to the renewed ones, no call fails', async (t) => {
    const store = pods.get('store');
    const buyer = pods.get('buyer');
    const caller = children.find((c) => c.name === 'caller bookbuyer-1');
    assert.ok(store && buyer && caller, 'needs the pods of the first test');
    const first = new X509Certificate(await readFile(path.join(buyer.secretDir, 'tls.crt')));
    const firstStore = new X509Certificate(await readFile(path.join(store.secretDir, 'tls.crt')));
    // 45 s of validity after the CA's 60 s backdating.
    const lifetime = Date.parse(first.validTo) - Date.parse(first.validFrom);
    assert.ok(Math.abs(lifetime - 105_000) <= 2_000, `lifetime ${lifetime} ms (dates are whole seconds)`);
    const expired = Math.max(Date.parse(first.validTo), Date.parse(firstStore.validTo));
    const from = caller.lines.length;
    let rotations = 0;
    // Past the first certificates' expiry: every new TLS connection (the server recycles its
    // connections every 2 s) must present renewed certificates the workloads read from the files.
    while (Date.now() < expired + 8_000) {
      rotations += await syncSecret(STORE, store);
      rotations += await syncSecret(BUYER, buyer);
      await sleep(1_000);
    }
    assert.ok(rotations >= 2, `the controller rewrote both Secrets (${rotations} files changed)`);
    const now = new X509Certificate(await readFile(path.join(buyer.secretDir, 'tls.crt')));
    assert.notEqual(now.serialNumber, first.serialNumber);

    // A restarted agent (a container restart) presents the renewed certificate on its new stream;
    // the workload reconnects through the socket and keeps its config meanwhile.
    const old = agents.get('bookbuyer-1');
    assert.ok(old);
    await old.stop();
    await startAgent('bookbuyer-1', buyer);
    await eventually(
      'the controller sees the renewed certificate',
      async () => {
        await syncSecret(BUYER, buyer);
        const p = (await debugProxies()).find((x) => x.identity.cn === buyer.commonName);
        assert.ok(p?.clientCert, 'connected over mTLS');
        assert.notEqual(p.clientCert.serial.toUpperCase(), first.serialNumber.toUpperCase());
        // The stream opened with a certificate that was current on disk when it connected.
        assert.ok(Date.parse(p.clientCert.notAfter) > Date.parse(first.validTo));
      },
      30_000,
    );
    await sleep(1_500);
    const calls = tally(caller, from);
    t.diagnostic(`across ${rotations} rotated files and an agent restart: ${JSON.stringify(calls)}`);
    assert.ok((calls.ok['bookstore-1'] ?? 0) >= 100, JSON.stringify(calls));
    assert.deepEqual(calls.errors, {}, `no failed call across the rotations: ${JSON.stringify(calls)}`);
  });
});
