// Two live skein-controller replicas against the real API server serve one proxy the same
// configuration: LDS, CDS, EDS and RDS byte for byte with the same SotW version strings (versions
// are content hashes, so a proxy that fails over to the other replica is already up to date),
// and in SDS the same trust bundle. The identity's own leaf certificate is where the replicas
// differ: each issues its own from the one shared root (the CA Secret), for the same identity —
// so the proxy's TLS keeps working across a failover, at the cost of one SDS update (the new
// leaf). Why skein does not share leaf keys through the API server: docs/design.md, "Several
// replicas".
//
// A root CA rotation with the two replicas: a proxy connected only to the follower holds the
// rotation at its stage until it ACKs what the follower pushed, and once the follower is killed
// its report expires and the leader goes on (docs/certificates.md, "Several replicas").
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes, randomUUID, X509Certificate } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { KubeSecretCARecordStore } from '../../pkg/certificate/kube-secret-store.js';
import { REPLICA_LEASE_PREFIX } from '../../pkg/certificate/replica-reports.js';
import type { RotationStatus } from '../../pkg/certificate/rotation.js';
import { DEFAULT_CA_SECRET } from '../../pkg/controller/options.js';
import { TypeUrl } from '../../pkg/envoy/types.js';
import { LABEL_MONITORED_BY, LABEL_PROXY_UUID } from '../../pkg/mesh/constants.js';
import { KubeApiError, KubeClient } from '../../pkg/registry/kube/client.js';
import { decodeMessage } from '../../pkg/xds/proto/codec.js';
import { acquireCluster } from '../support/cluster.js';
import {
  adsClient,
  type EnvoyLikeResources,
  fetchLikeEnvoy,
  proxyCredentials,
} from '../support/envoy-like.js';
import { createNamespace, createPod, markPodRunning } from '../support/kube.js';
import { type KubeController, startKubeController } from '../support/kube-controller.js';
import { eventually, prepareMeshCluster, SMI_ACCESS } from '../support/kube-registry-fixture.js';
import { repoRoot } from '../support/local-mesh.js';
import { sleep } from '../support/processes.js';
import type { ReceivedResponse } from '../support/xds/test-client.js';

const sfx = randomBytes(3).toString('hex');
const MESH = `rep-${sfx}`;
const CP = `skein-system-rep-${sfx}`;
const STORE = `rep-store-${sfx}`;
const BUYER = `rep-buyer-${sfx}`;
const SMI_SPECS = { group: 'specs.smi-spec.io', version: 'v1alpha4', plural: 'httproutegroups' };
// A documentation address (RFC 5737): EndpointSlices refuse loopback, and no one dials it.
const STORE_IP = '192.0.2.10';
/** Leader election (and so the replicas' evidence reports) in seconds, not the default 15 s. */
const LEASE_S = 6;
const skeinCli = path.join(repoRoot, 'dist', 'cmd', 'skein', 'main.js');
const TYPES = [
  TypeUrl.Listener,
  TypeUrl.Cluster,
  TypeUrl.ClusterLoadAssignment,
  TypeUrl.RouteConfiguration,
  TypeUrl.Secret,
] as const;

/** Each resource's bytes as received (its Any value), by name. */
function bytesByName(res: EnvoyLikeResources, typeUrl: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const [name, r] of res.held.get(typeUrl) ?? []) out.set(name, Buffer.from(r.bytes).toString('base64'));
  return out;
}

/** The certificate of a TLS certificate Secret resource (SDS), if it is one. */
function leafOf(res: EnvoyLikeResources, name: string): X509Certificate | undefined {
  const r = res.held.get(TypeUrl.Secret)?.get(name);
  if (!r) return undefined;
  const secret = decodeMessage(TypeUrl.Secret, r.bytes) as {
    tls_certificate?: { certificate_chain?: { inline_bytes?: Uint8Array; inline_string?: string } };
  };
  const chain = secret.tls_certificate?.certificate_chain;
  const pem =
    chain?.inline_string ?? (chain?.inline_bytes ? Buffer.from(chain.inline_bytes).toString() : undefined);
  return pem ? new X509Certificate(pem) : undefined;
}

describe('two controller replicas serve a proxy the same configuration', { timeout: 300_000 }, () => {
  let release: () => Promise<void>;
  let kubeconfigPath: string;
  let core: CoreV1Api;
  let api: KubeClient;
  const controllers: KubeController[] = [];
  let caDir: string;

  before(async () => {
    const acquired = await acquireCluster();
    release = acquired.release;
    const kc = acquired.kubeConfig;
    kubeconfigPath = acquired.endpoint.kubeconfigPath;
    core = kc.makeApiClient(CoreV1Api);
    api = new KubeClient({ kubeConfig: kc });
    const custom = kc.makeApiClient(CustomObjectsApi);
    await prepareMeshCluster(kc, core, CP);
    const inMesh = { [LABEL_MONITORED_BY]: MESH };
    await Promise.all([createNamespace(core, STORE, inMesh), createNamespace(core, BUYER, inMesh)]);
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
        spec: { selector: { app: 'bookstore' }, ports: [{ name: 'http', port: 8080 }] },
      },
    });
    await createPod(core, {
      namespace: STORE,
      name: 'bookstore',
      serviceAccountName: 'bookstore',
      labels: { app: 'bookstore', [LABEL_PROXY_UUID]: randomUUID() },
      ports: [8080],
    });
    await markPodRunning(core, STORE, 'bookstore', STORE_IP, true);
    await custom.createNamespacedCustomObject({
      ...SMI_SPECS,
      namespace: STORE,
      body: {
        apiVersion: 'specs.smi-spec.io/v1alpha4',
        kind: 'HTTPRouteGroup',
        metadata: { name: 'routes', namespace: STORE },
        spec: { matches: [{ name: 'books', pathRegex: '/books.*', methods: ['GET'] }] },
      },
    });
    await custom.createNamespacedCustomObject({
      ...SMI_ACCESS,
      namespace: STORE,
      body: {
        apiVersion: 'access.smi-spec.io/v1alpha3',
        kind: 'TrafficTarget',
        metadata: { name: 'bookbuyer-access', namespace: STORE },
        spec: {
          destination: { kind: 'ServiceAccount', name: 'bookstore', namespace: STORE },
          sources: [{ kind: 'ServiceAccount', name: 'bookbuyer', namespace: BUYER }],
          rules: [{ kind: 'HTTPRouteGroup', name: 'routes', matches: ['books'] }],
        },
      },
    });
    for (let i = 0; i < 2; i++)
      controllers.push(
        await startKubeController({
          kubeconfigPath: acquired.endpoint.kubeconfigPath,
          meshName: MESH,
          namespace: CP,
          args: [
            ...['--debug', '--ca-rotation-delivery', '1s'],
            ...['--leader-elect-lease-duration', `${LEASE_S}s`, '--leader-elect-renew-deadline', '4s'],
            ...['--leader-elect-retry-period', '1s'],
          ],
        }),
      );
    // The proxy's client certificate comes from the root both replicas loaded from the CA Secret.
    const secret = (await api.request('GET', `/api/v1/namespaces/${CP}/secrets/${DEFAULT_CA_SECRET}`)) as {
      data: Record<string, string>;
    };
    caDir = await mkdtemp(path.join(tmpdir(), 'skein-replicas-'));
    await mkdir(path.join(caDir, 'ca'));
    for (const file of ['ca.crt', 'ca.key'])
      await writeFile(path.join(caDir, 'ca', file), Buffer.from(secret.data[file] ?? '', 'base64'), {
        mode: 0o600,
      });
  });

  after(async () => {
    for (const c of controllers) await c.stop().catch(() => undefined);
    if (caDir) await rm(caDir, { recursive: true, force: true });
    for (const ns of [STORE, BUYER, CP]) await core?.deleteNamespace({ name: ns }).catch(() => undefined);
    await release?.();
  });

  test('LDS, CDS, EDS, RDS byte-identical with the same versions; SDS: the same trust bundle, a leaf of the same identity from each', async () => {
    const uuid = randomUUID();
    await createPod(core, {
      namespace: BUYER,
      name: 'bookbuyer',
      serviceAccountName: 'bookbuyer',
      labels: { app: 'bookbuyer', [LABEL_PROXY_UUID]: uuid },
    });
    const { credentials, cn } = await proxyCredentials(caDir, {
      namespace: BUYER,
      serviceAccount: 'bookbuyer',
      uuid,
      kind: 'sidecar',
    });
    const fetchFrom = async (c: KubeController): Promise<EnvoyLikeResources> => {
      const client = adsClient(Number(c.ready['ads']), credentials);
      try {
        return await fetchLikeEnvoy(client, cn);
      } finally {
        client.close();
      }
    };
    const [a, b] = controllers;
    assert.ok(a && b);
    // Both replicas must have seen the whole mesh (their watches are independent): the endpoint
    // and the allowed route on each before comparing.
    let pair: EnvoyLikeResources[] = [];
    await eventually(
      'both replicas serve bookstore with its endpoint',
      async () => {
        pair = await Promise.all([fetchFrom(a), fetchFrom(b)]);
        for (const res of pair)
          assert.ok(JSON.stringify(res.endpoints).includes(STORE_IP), 'the endpoint is served');
      },
      60_000,
    );
    const [fromA, fromB] = pair;
    assert.ok(fromA && fromB);

    for (const typeUrl of TYPES) {
      const ra: ReceivedResponse | undefined = fromA.responses.get(typeUrl);
      const rb: ReceivedResponse | undefined = fromB.responses.get(typeUrl);
      assert.ok(ra && rb, `both answered ${typeUrl}`);
      assert.ok((fromA.held.get(typeUrl)?.size ?? 0) > 0, `${typeUrl} is not empty`);
      // What each client holds: a later SotW response of RDS, EDS or SDS may carry only what changed.
      assert.deepEqual(
        [...(fromA.held.get(typeUrl)?.keys() ?? [])],
        [...(fromB.held.get(typeUrl)?.keys() ?? [])],
        `${typeUrl}: the same resource names`,
      );
    }
    for (const typeUrl of TYPES.filter((t) => t !== TypeUrl.Secret)) {
      assert.deepEqual(
        bytesByName(fromA, typeUrl),
        bytesByName(fromB, typeUrl),
        `${typeUrl}: the same bytes`,
      );
      assert.equal(
        fromA.responses.get(typeUrl)?.versionInfo,
        fromB.responses.get(typeUrl)?.versionInfo,
        `${typeUrl}: the same version`,
      );
    }

    // SDS: everything but the proxy's own leaf (the trust bundle, validation contexts) is the same.
    const [secretsA, secretsB] = [bytesByName(fromA, TypeUrl.Secret), bytesByName(fromB, TypeUrl.Secret)];
    const leaves = [...secretsA.keys()].filter((name) => leafOf(fromA, name));
    assert.equal(leaves.length, 1, `one leaf certificate among ${[...secretsA.keys()].join(', ')}`);
    const [leafName = ''] = leaves;
    for (const [name, bytes] of secretsA)
      if (name !== leafName) assert.equal(secretsB.get(name), bytes, `SDS ${name}: the same bytes`);
    const [leafA, leafB] = [leafOf(fromA, leafName), leafOf(fromB, leafName)];
    assert.ok(leafA && leafB);
    const root = new X509Certificate(
      Buffer.from(
        (
          (await api.request('GET', `/api/v1/namespaces/${CP}/secrets/${DEFAULT_CA_SECRET}`)) as {
            data: Record<string, string>;
          }
        ).data['ca.crt'] ?? '',
        'base64',
      ),
    );
    for (const leaf of [leafA, leafB]) {
      assert.ok(leaf.checkIssued(root) && leaf.verify(root.publicKey), 'signed by the shared root');
      assert.ok(leaf.subjectAltName?.includes(`/ns/${BUYER}/sa/bookbuyer`), leaf.subjectAltName);
    }
    assert.equal(leafA.subject, leafB.subject, 'the same identity');
    assert.equal(leafA.subjectAltName, leafB.subjectAltName);
    // Each replica issued its own (docs/design.md): the one difference a failover brings the proxy.
    assert.notEqual(leafA.serialNumber, leafB.serialNumber);
    process.stderr.write(
      `replicas: ${TYPES.length - 1} types byte-identical (${TYPES.filter((t) => t !== TypeUrl.Secret)
        .map((t) => `${t.split('.').pop()} ${fromA.held.get(t)?.size}`)
        .join(', ')}); SDS ${secretsA.size - 1} of ${secretsA.size} identical, the leaf per replica\n`,
    );
  });
  test('a root rotation waits for a proxy connected only to the follower; it goes on once that proxy ACKs, or once the follower is gone and its report expired', async () => {
    const leaderOf = async () => {
      const flags = await Promise.all(
        controllers.map(async (c) => /^skein_leader 1$/m.test(await controllerGet(c, '/metrics'))),
      );
      assert.equal(flags.filter(Boolean).length, 1, `one leader: ${flags.join(', ')}`);
      const i = flags.indexOf(true);
      return { leader: controllers[i] as KubeController, follower: controllers[1 - i] as KubeController };
    };
    let roles = { leader: controllers[0] as KubeController, follower: controllers[1] as KubeController };
    await eventually(
      'one replica leads',
      async () => {
        roles = await leaderOf();
      },
      30_000,
    );
    const { leader, follower } = roles;
    const caStatus = async (c: KubeController) =>
      (JSON.parse(await controllerGet(c, '/debug/certs')) as { ca: RotationStatus }).ca;

    // A sidecar of its own whose bootstrap Secret the injector would have created at admission.
    const uuid = randomUUID();
    await createPod(core, {
      namespace: BUYER,
      name: 'bookbuyer-rot',
      serviceAccountName: 'bookbuyer',
      labels: { app: 'bookbuyer', [LABEL_PROXY_UUID]: uuid },
    });
    const secretPath = `/api/v1/namespaces/${BUYER}/secrets/skein-bootstrap-${uuid}`;
    await api.request('POST', `/api/v1/namespaces/${BUYER}/secrets`, {
      body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: `skein-bootstrap-${uuid}` }, data: {} },
    });
    const { credentials, cn } = await proxyCredentials(caDir, {
      namespace: BUYER,
      serviceAccount: 'bookbuyer',
      uuid,
      kind: 'sidecar',
    });
    // Connected to the follower only, everything ACKed; from now on it ACKs only when told to.
    const client = adsClient(Number(follower.ready['ads']), credentials);
    const fetched = await fetchLikeEnvoy(client, cn);
    const subscribed = new Map([...fetched.held].map(([t, m]) => [t, [...m.keys()].sort()]));
    assert.ok((subscribed.get(TypeUrl.Secret)?.length ?? 0) > 0, 'the proxy uses SDS');
    const ackAll = async () => {
      for (const r of await client.drain(500)) client.ack(r, subscribed.get(r.typeUrl) ?? []);
    };

    // The stage as stored, every 200 ms: the transitions the leader makes.
    const store = new KubeSecretCARecordStore(api, CP, DEFAULT_CA_SECRET);
    const transitions: { stage: string; at: number }[] = [];
    let polling = true;
    let firstSample: () => void = () => {};
    const sampled = new Promise<void>((resolve) => {
      firstSample = resolve;
    });
    const poller = (async () => {
      while (polling) {
        const stage = (await store.load().catch(() => undefined))?.record.rotation?.stage ?? 'idle';
        if (transitions.at(-1)?.stage !== stage) transitions.push({ stage, at: performance.now() });
        firstSample();
        await sleep(200);
      }
    })();
    // The CLI below runs synchronously: the stage before it must be sampled first, or a loaded
    // machine sees the rotation already in stage 1.
    await sampled;
    const stages = () => transitions.map((t) => t.stage);
    try {
      const rotate = spawnSync(
        process.execPath,
        [skeinCli, 'ca', 'rotate', '--kubeconfig', kubeconfigPath, '--controller-namespace', CP],
        { encoding: 'utf8' },
      );
      assert.equal(rotate.status, 0, rotate.stdout + rotate.stderr);
      const followerName = async () => (await caStatus(follower)).replicas?.find((r) => r.self)?.replica;
      let name: string | undefined;
      await eventually(
        'the leader shows the follower’s proxy behind in stage distribute',
        async () => {
          name = await followerName();
          const s = await caStatus(leader);
          assert.equal(s.stage, 'distribute');
          const r = s.replicas?.find((x) => x.replica === name);
          assert.ok(r, JSON.stringify(s.replicas));
          assert.deepEqual([r.current, r.proxies, r.connected, r.ready], [true, 1, 1, false]);
        },
        30_000,
      );
      // Its bootstrap Secret was rewritten by the follower it is connected to (two roots in ca.crt).
      await eventually('the follower rewrote the proxy’s bootstrap Secret', async () => {
        const secret = (await api.request('GET', secretPath)) as { data?: Record<string, string> };
        const ca = Buffer.from(secret.data?.['ca.crt'] ?? '', 'base64').toString();
        assert.equal(ca.match(/BEGIN CERTIFICATE/g)?.length, 2);
      });
      // Held: the delivery wait is 1 s and the leader checks every second, its own evidence is clean.
      await sleep(6000);
      assert.deepEqual(stages(), ['idle', 'distribute'], 'held while the follower’s proxy has not ACKed');
      const held = await caStatus(leader);
      assert.equal(held.pending?.proxies, 1);
      assert.match(held.waitingFor ?? '', new RegExp(`replica ${name}: waiting for 1 proxies`));
      assert.match(await controllerGet(leader, '/metrics'), /^skein_ca_rotation_pending [1-9]\d*$/m);
      const cli = spawnSync(
        process.execPath,
        [skeinCli, 'ca', 'status', '--controller-url', `http://127.0.0.1:${Number(leader.ready['http'])}`],
        { encoding: 'utf8' },
      );
      assert.equal(cli.status, 0, cli.stderr);
      assert.match(cli.stdout, new RegExp(`replica ${name}: 1 of 1 proxies behind`));

      // The proxy ACKs the two-root bundle: the rotation moves on, and holds again in stage 2
      // (the follower reissued the proxy's leaf, which it does not ACK).
      const ackedAt = performance.now();
      await ackAll();
      await eventually('stage reissue', async () => assert.equal(stages().at(-1), 'reissue'), 20_000);
      await eventually(
        'the follower’s proxy is behind again in stage reissue',
        async () => {
          const r = (await caStatus(leader)).replicas?.find((x) => x.replica === name);
          assert.deepEqual([r?.current, r?.proxies], [true, 1]);
        },
        20_000,
      );
      await sleep(5000);
      assert.deepEqual(stages(), ['idle', 'distribute', 'reissue']);

      // The follower dies (no graceful withdrawal): its proxy's stream ends with it, and its report
      // is no longer renewed. The leader treats it as gone after the report's lease duration.
      const killedAt = performance.now();
      follower.process.child.kill('SIGKILL');
      await eventually('the rotation completed', async () => assert.equal(stages().at(-1), 'idle'), 60_000);
      assert.deepEqual(stages(), ['idle', 'distribute', 'reissue', 'retire', 'idle']);
      const at = (stage: string) => transitions.find((t) => t.stage === stage)?.at ?? 0;
      const afterKill = at('retire') - killedAt;
      // The report stood until unrenewed for its duration as the leader saw it (less a check and a
      // renewal period: the follower's last renewal was up to a third of the duration before the kill).
      assert.ok(
        afterKill >= (LEASE_S * 1000 * 2) / 3 - 1000,
        `reissue ended ${Math.round(afterKill)} ms after the kill`,
      );
      await eventually(
        'the leader collected the gone replica’s report',
        async () => {
          const gone = await api
            .request(
              'GET',
              `/apis/coordination.k8s.io/v1/namespaces/${CP}/leases/${REPLICA_LEASE_PREFIX}${name}`,
            )
            .then(
              () => false,
              (err: unknown) => err instanceof KubeApiError && err.status === 404,
            );
          assert.ok(gone);
        },
        20_000,
      );
      assert.match(await controllerGet(leader, '/metrics'), /^skein_ca_rotation_pending 0$/m);
      process.stderr.write(
        `replicas rotation: distribute ended ${Math.round(at('reissue') - ackedAt)} ms after the ACK; ` +
          `reissue ended ${Math.round(afterKill)} ms after the follower was killed (report lease ${LEASE_S} s)\n`,
      );
    } finally {
      polling = false;
      await poller;
      client.close();
    }
  });
});

/** GET a controller's JSON or text over its HTTP port. */
async function controllerGet(c: KubeController, p: string): Promise<string> {
  return (await fetch(`http://127.0.0.1:${Number(c.ready['http'])}${p}`)).text();
}
