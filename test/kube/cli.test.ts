// The `skein` CLI as users run it: the compiled dist/cmd/skein/main.js in its
// own process, with a kubeconfig for the real test API server. Namespaces,
// pods, services and SMI objects are created through the API; the CLI must
// change the real objects (namespace), answer from skein's own policy engine
// (policy check), read a real controller's debug endpoints (proxy get,
// dashboard), drive Helm (install/uninstall) and fail with messages a person
// can act on.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { AppsV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { TypeUrl } from '../../pkg/envoy/types.js';
import {
  ANNOTATION_SIDECAR_INJECTION,
  LABEL_MONITORED_BY,
  LABEL_PROXY_UUID,
} from '../../pkg/mesh/constants.js';
import { acquireCluster, type ClusterEndpoint } from '../support/cluster.js';
import { adsClient, proxyCredentials } from '../support/envoy-like.js';
import { createNamespace, createPod } from '../support/kube.js';
import { KubeMesh } from '../support/kube-mesh.js';
import { httpTrafficTargetBody, prepareMeshCluster } from '../support/kube-registry-fixture.js';

const distRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const cli = path.join(distRoot, 'cmd', 'skein', 'main.js');
const helm = path.resolve(distRoot, '..', 'test', 'helm', 'bin', 'helm');

const sfx = randomBytes(3).toString('hex');
const MESH = `cli-mesh-${sfx}`;
const CP = `cli-system-${sfx}`;
const STORE = `cli-store-${sfx}`;
const BUYER = `cli-buyer-${sfx}`;
const EXTRA = `cli-extra-${sfx}`;
const OTHER = `cli-other-${sfx}`;

const SMI_ACCESS = { group: 'access.smi-spec.io', version: 'v1alpha3', plural: 'traffictargets' };
const SMI_SPECS = { group: 'specs.smi-spec.io', version: 'v1alpha4', plural: 'httproutegroups' };
const MESH_CONFIGS = { group: 'config.skein.dev', version: 'v1alpha1', plural: 'meshconfigs' };

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

let kubeconfig = '';
let tmp = '';

/** Runs the compiled CLI; `--kubeconfig` is added unless the test passes its own. */
function skein(
  args: string[],
  opts: { env?: Record<string, string>; untilLine?: RegExp } = {},
): Promise<Run> {
  const withConfig = args.includes('--kubeconfig') ? args : [...args, '--kubeconfig', kubeconfig];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, ...withConfig], {
      // No ambient kubeconfig, no stray $HOME: the test decides what the CLI sees.
      env: { PATH: process.env['PATH'] ?? '', HOME: tmp, ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
      // Long-running commands (dashboard) are stopped the way a person does: Ctrl-C.
      if (opts.untilLine?.test(stdout)) child.kill('SIGINT');
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

function show(r: Run): string {
  return `exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`;
}

describe('skein CLI against the test cluster', { timeout: 180_000 }, () => {
  let release: () => Promise<void>;
  let endpoint: ClusterEndpoint;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let apps: AppsV1Api;
  const buyerUuid = randomUUID();

  before(async () => {
    const acquired = await acquireCluster();
    release = acquired.release;
    endpoint = acquired.endpoint;
    kubeconfig = endpoint.kubeconfigPath;
    tmp = await mkdtemp(path.join(tmpdir(), 'skein-cli-test-'));
    core = acquired.kubeConfig.makeApiClient(CoreV1Api);
    custom = acquired.kubeConfig.makeApiClient(CustomObjectsApi);
    apps = acquired.kubeConfig.makeApiClient(AppsV1Api);
    await prepareMeshCluster(acquired.kubeConfig, core, CP);
    const inMesh = { [LABEL_MONITORED_BY]: MESH };
    await Promise.all([
      createNamespace(core, STORE, inMesh),
      createNamespace(core, BUYER, inMesh),
      createNamespace(core, EXTRA),
      createNamespace(core, OTHER, { [LABEL_MONITORED_BY]: `another-${sfx}` }),
    ]);
    for (const [ns, sa] of [
      [STORE, 'bookstore'],
      [BUYER, 'bookbuyer'],
      [BUYER, 'bookthief'],
    ] as const)
      await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: sa } } });
    await core.createNamespacedService({
      namespace: STORE,
      body: {
        metadata: { name: 'bookstore' },
        spec: { selector: { app: 'bookstore' }, ports: [{ name: 'http', port: 14001, targetPort: 14001 }] },
      },
    });
    await createPod(core, {
      namespace: STORE,
      name: 'bookstore-v1',
      serviceAccountName: 'bookstore',
      labels: { app: 'bookstore', [LABEL_PROXY_UUID]: randomUUID() },
      ports: [14001],
    });
    await createPod(core, {
      namespace: BUYER,
      name: 'bookbuyer',
      serviceAccountName: 'bookbuyer',
      labels: { app: 'bookbuyer', [LABEL_PROXY_UUID]: buyerUuid },
    });
    // No proxy-UUID label: in a monitored namespace, but never injected.
    await createPod(core, {
      namespace: BUYER,
      name: 'bookthief',
      serviceAccountName: 'bookthief',
      labels: { app: 'bookthief' },
    });
    await custom.createNamespacedCustomObject({
      ...SMI_SPECS,
      namespace: STORE,
      body: {
        apiVersion: 'specs.smi-spec.io/v1alpha4',
        kind: 'HTTPRouteGroup',
        metadata: { name: 'books', namespace: STORE },
        spec: { matches: [{ name: 'buy-books', pathRegex: '/buy.*', methods: ['GET', 'POST'] }] },
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
        routeGroup: 'books',
        matches: ['buy-books'],
      }),
    });
  });

  after(async () => {
    await Promise.all(
      [CP, STORE, BUYER, EXTRA, OTHER].map((name) => core?.deleteNamespace({ name }).catch(() => undefined)),
    );
    if (tmp) await rm(tmp, { recursive: true, force: true });
    await release?.();
  });

  test('namespace add, list and remove change the real Namespace objects', async () => {
    let r = await skein(['namespace', 'add', EXTRA, '--mesh-name', MESH]);
    assert.equal(r.code, 0, show(r));
    assert.match(
      r.stdout,
      new RegExp(`namespace ${EXTRA} added to mesh ${MESH} \\(sidecar injection enabled\\)`),
    );
    let ns = await core.readNamespace({ name: EXTRA });
    assert.equal(ns.metadata?.labels?.[LABEL_MONITORED_BY], MESH);
    assert.equal(ns.metadata?.annotations?.[ANNOTATION_SIDECAR_INJECTION], 'enabled');

    r = await skein(['namespace', 'add', EXTRA, '--mesh-name', MESH, '--disable-sidecar-injection']);
    assert.equal(r.code, 0, show(r));
    ns = await core.readNamespace({ name: EXTRA });
    assert.equal(ns.metadata?.annotations?.[ANNOTATION_SIDECAR_INJECTION], 'disabled');

    r = await skein(['namespace', 'list', '--mesh-name', MESH]);
    assert.equal(r.code, 0, show(r));
    const lines = r.stdout.trimEnd().split('\n');
    assert.match(lines[0] ?? '', /^NAMESPACE\s+MESH\s+SIDECAR-INJECTION$/);
    const row = (name: string) => lines.find((l) => l.startsWith(`${name} `))?.split(/\s+/);
    assert.deepEqual(row(EXTRA), [EXTRA, MESH, 'disabled']);
    assert.deepEqual(row(BUYER), [BUYER, MESH, 'not', 'set', '(off)']);
    assert.equal(row(OTHER), undefined, 'another mesh is not listed under --mesh-name');

    // A namespace of another mesh is not taken over.
    r = await skein(['namespace', 'add', OTHER, '--mesh-name', MESH]);
    assert.equal(r.code, 2, show(r));
    assert.match(r.stderr, new RegExp(`namespace ${OTHER} already belongs to mesh "another-${sfx}"`));
    assert.equal(
      (await core.readNamespace({ name: OTHER })).metadata?.labels?.[LABEL_MONITORED_BY],
      `another-${sfx}`,
    );

    r = await skein(['namespace', 'remove', EXTRA, '--mesh-name', MESH]);
    assert.equal(r.code, 0, show(r));
    ns = await core.readNamespace({ name: EXTRA });
    assert.equal(ns.metadata?.labels?.[LABEL_MONITORED_BY], undefined);
    assert.equal(ns.metadata?.annotations?.[ANNOTATION_SIDECAR_INJECTION], undefined);

    r = await skein(['namespace', 'add', `missing-${sfx}`, '--mesh-name', MESH]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, new RegExp(`^skein: namespace missing-${sfx} not found`));
  });

  test('policy check: ALLOWED names the TrafficTarget and routes; DENIED says who is allowed (exit 0 / 1)', async () => {
    let r = await skein([
      'policy',
      'check',
      `${BUYER}/bookbuyer`,
      `${STORE}/bookstore-v1`,
      '--mesh-name',
      MESH,
    ]);
    assert.equal(r.code, 0, show(r));
    assert.match(r.stdout, new RegExp(`^ALLOWED: ${BUYER}/bookbuyer \\(identity ${BUYER}/bookbuyer\\)`));
    assert.match(
      r.stdout,
      new RegExp(
        `${STORE}/bookstore port 14001 \\(http\\): allowed by TrafficTarget ${STORE}/bookbuyer-access`,
      ),
    );
    assert.match(r.stdout, /routes: buy-books \(path ~ \/buy\.\*; methods GET,POST\)/);

    r = await skein([
      'policy',
      'check',
      'bookthief',
      `${STORE}/bookstore-v1`,
      '-n',
      BUYER,
      '--mesh-name',
      MESH,
    ]);
    assert.equal(r.code, 1, show(r));
    assert.match(r.stdout, new RegExp(`^DENIED: ${BUYER}/bookthief \\(identity ${BUYER}/bookthief\\)`));
    assert.match(r.stdout, new RegExp(`no TrafficTarget allows ${BUYER}/bookthief`));
    assert.match(r.stdout, new RegExp(`${BUYER}/bookbuyer by TrafficTarget ${STORE}/bookbuyer-access`));

    // In permissive mode every meshed pair is allowed, and the answer says why.
    const meshConfig = {
      apiVersion: 'config.skein.dev/v1alpha1',
      kind: 'MeshConfig',
      metadata: { name: MESH, namespace: CP },
      spec: { traffic: { permissive: true } },
    };
    await custom.createNamespacedCustomObject({ ...MESH_CONFIGS, namespace: CP, body: meshConfig });
    try {
      r = await skein([
        'policy',
        'check',
        `${BUYER}/bookthief`,
        `${STORE}/bookstore-v1`,
        '--mesh-name',
        MESH,
        '--controller-namespace',
        CP,
      ]);
      assert.equal(r.code, 0, show(r));
      assert.match(r.stdout, /^ALLOWED: /);
      assert.match(r.stdout, /permissive mode/);
    } finally {
      await custom.deleteNamespacedCustomObject({ ...MESH_CONFIGS, namespace: CP, name: MESH });
    }

    r = await skein(['policy', 'check', `${EXTRA}/nobody`, `${STORE}/bookstore-v1`, '--mesh-name', MESH]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, new RegExp(`pod ${EXTRA}/nobody not found`));
  });

  test('policy check --to and --from-ip: Egress and IngressBackend+Ingress read from the API server (exit 0 / 1)', async () => {
    const POLICY = { group: 'policy.skein.dev', version: 'v1alpha1' };
    const INGRESSES = { group: 'networking.k8s.io', version: 'v1', plural: 'ingresses' };
    // Removed afterwards: the later tests run a controller over these namespaces.
    const created: { group: string; version: string; plural: string; namespace: string; name: string }[] = [];
    const create = async (
      t: { group: string; version: string; plural: string },
      namespace: string,
      body: { metadata: { name: string; namespace?: string } } & Record<string, unknown>,
    ) => {
      await custom.createNamespacedCustomObject({ ...t, namespace, body });
      created.push({ ...t, namespace, name: body.metadata.name });
    };
    try {
      const bookbuyer = [{ kind: 'ServiceAccount', name: 'bookbuyer', namespace: BUYER }];
      await create(SMI_SPECS, BUYER, {
        apiVersion: 'specs.smi-spec.io/v1alpha4',
        kind: 'HTTPRouteGroup',
        metadata: { name: 'api-reads', namespace: BUYER },
        spec: { matches: [{ name: 'get', pathRegex: '/v1/.*', methods: ['GET'] }] },
      });
      const egress = (name: string, spec: Record<string, unknown>) =>
        create({ ...POLICY, plural: 'egresses' }, BUYER, {
          apiVersion: 'policy.skein.dev/v1alpha1',
          kind: 'Egress',
          metadata: { name },
          spec,
        });
      await egress('api', {
        sources: bookbuyer,
        hosts: ['api.example.com'],
        ports: [{ number: 80, protocol: 'http' }],
        matches: [{ kind: 'HTTPRouteGroup', name: 'api-reads' }],
      });
      await egress('db', {
        sources: bookbuyer,
        ipAddresses: ['10.1.0.0/16'],
        ports: [{ number: 5432, protocol: 'tcp' }],
      });
      await create({ ...POLICY, plural: 'ingressbackends' }, STORE, {
        apiVersion: 'policy.skein.dev/v1alpha1',
        kind: 'IngressBackend',
        metadata: { name: 'shop' },
        spec: {
          backends: [{ name: 'bookstore', port: { number: 14001, protocol: 'http' } }],
          sources: [{ kind: 'IPRange', name: '10.0.9.0/24' }],
        },
      });
      await create(INGRESSES, STORE, {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'Ingress',
        metadata: { name: 'shop' },
        spec: {
          rules: [
            {
              host: 'shop.example.com',
              http: {
                paths: [
                  {
                    path: '/books',
                    pathType: 'Prefix',
                    backend: { service: { name: 'bookstore', port: { number: 14001 } } },
                  },
                ],
              },
            },
          ],
        },
      });
      const check = (...args: string[]) => skein(['policy', 'check', ...args, '--mesh-name', MESH]);

      // Egress, as JSON: the verdict, the Egress and its HTTPRouteGroup match.
      let r = await check(`${BUYER}/bookbuyer`, '--to', 'http://api.example.com/v1/books', '-o', 'json');
      assert.equal(r.code, 0, show(r));
      const v = JSON.parse(r.stdout) as { verdict: string; allowedBy: { origin: string; match?: string }[] };
      assert.equal(v.verdict, 'ALLOWED');
      assert.deepEqual(v.allowedBy, [
        { origin: `Egress ${BUYER}/api`, match: 'get (path ~ /v1/.*; methods GET)' },
      ]);
      const cases: [string[], number, RegExp][] = [
        [
          ['--to', 'http://api.example.com/v1/books', '--method', 'POST'],
          1,
          /only for requests matching: get/,
        ],
        [['--to', 'http://other.example.com/'], 1, /host other\.example\.com is not allowed on port 80/],
        [
          ['--to', 'tcp://10.1.2.3:5432'],
          0,
          new RegExp(`allowed by Egress ${BUYER}/db\\n {2}via egress_tcp_5432`),
        ],
        [['--to', '10.9.0.1:5432'], 1, /only to 10\.1\.0\.0\/16; 10\.9\.0\.1 is not in them/],
      ];
      for (const [args, code, re] of cases) {
        r = await check(`${BUYER}/bookbuyer`, ...args);
        assert.equal(r.code, code, show(r));
        assert.match(r.stdout, re);
      }
      r = await check(`${BUYER}/bookthief`, '--to', 'https://github.com');
      assert.equal(r.code, 1, show(r));
      assert.match(r.stdout, new RegExp(`no Egress lists ${BUYER}/bookthief as a source`));

      // Ingress: the IngressBackend's source range on the Ingress's host and paths.
      const from = (ip: string, path: string) =>
        check('--from-ip', ip, '--host', 'shop.example.com', '--path', path, `${STORE}/bookstore-v1`);
      r = await from('10.0.9.5', '/books/1');
      assert.equal(r.code, 0, show(r));
      assert.match(
        r.stdout,
        new RegExp(
          `${STORE}/bookstore target port 14001 \\(http, chain ingress_14001_http\\): allowed by IngressBackend ${STORE}/shop, Ingress route shop\\.example\\.com, Prefix /books`,
        ),
      );
      r = await from('10.0.9.5', '/admin');
      assert.equal(r.code, 1, show(r));
      assert.match(r.stdout, /\/admin is none of them \(403\)/);
      r = await from('192.0.2.1', '/books');
      assert.equal(r.code, 1, show(r));
      assert.match(r.stdout, /192\.0\.2\.1 is not among the sources of IngressBackend/);
    } finally {
      for (const o of created.reverse()) await custom.deleteNamespacedCustomObject(o).catch(() => undefined);
    }
  });

  test('errors a person can act on: unreachable cluster, unknown context, no kubeconfig, pod not in the mesh, mesh not installed', async () => {
    const dead = path.join(tmp, 'dead.kubeconfig');
    await writeFile(
      dead,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [
          { name: 'gone', cluster: { server: 'https://127.0.0.1:1', 'insecure-skip-tls-verify': true } },
        ],
        users: [{ name: 'u', user: { token: 'x' } }],
        contexts: [{ name: 'gone-ctx', context: { cluster: 'gone', user: 'u' } }],
        'current-context': 'gone-ctx',
      }),
    );
    let r = await skein(['namespace', 'list', '--kubeconfig', dead]);
    assert.equal(r.code, 2, show(r));
    assert.match(
      r.stderr,
      /^skein: cannot reach the Kubernetes API at https:\/\/127\.0\.0\.1:1 \(context gone-ctx\): .*ECONNREFUSED/,
    );
    assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');

    r = await skein(['namespace', 'list', '--context', 'staging']);
    assert.equal(r.code, 2, show(r));
    assert.match(
      r.stderr,
      /^skein: context "staging" not found in .*admin\.kubeconfig \(its contexts: test\)/,
    );

    r = await skein(['namespace', 'list', '--kubeconfig', path.join(tmp, 'missing')]);
    assert.match(r.stderr, /^skein: kubeconfig .*missing: no such file/);

    // Neither a flag nor $KUBECONFIG nor ~/.kube/config.
    r = await new Promise<Run>((resolve) => {
      const child = spawn(process.execPath, [cli, 'namespace', 'list'], { env: { PATH: '', HOME: tmp } });
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (d: string) => {
        stderr += d;
      });
      child.once('close', (code) => resolve({ code, stdout: '', stderr }));
    });
    assert.equal(r.code, 2);
    assert.match(
      r.stderr,
      /^skein: no kubeconfig: pass --kubeconfig <file>, set KUBECONFIG, or create ~\/\.kube\/config/,
    );

    r = await skein([
      'proxy',
      'get',
      'status',
      'bookthief',
      '-n',
      BUYER,
      '--controller-url',
      'http://127.0.0.1:1',
    ]);
    assert.equal(r.code, 2, show(r));
    assert.match(
      r.stderr,
      new RegExp(`pod ${BUYER}/bookthief is not in the mesh: it has no ${LABEL_PROXY_UUID} label`),
    );

    r = await skein([
      'proxy',
      'get',
      'status',
      'nope',
      '-n',
      BUYER,
      '--controller-url',
      'http://127.0.0.1:1',
    ]);
    assert.match(r.stderr, new RegExp(`^skein: pod ${BUYER}/nope not found`));

    r = await skein(['proxy', 'get', 'config', `${BUYER}/bookbuyer`, '--controller-namespace', CP]);
    assert.equal(r.code, 2, show(r));
    assert.match(
      r.stderr,
      new RegExp(`^skein: no skein controller in namespace ${CP}: run \`skein install\``),
    );

    r = await skein(['dashboard', '--controller-namespace', CP, '--no-browser']);
    assert.match(r.stderr, new RegExp(`no skein controller in namespace ${CP}`));
  });

  test('proxy get status/config and dashboard against a real controller (debug endpoints on by MeshConfig)', async () => {
    await custom.createNamespacedCustomObject({
      ...MESH_CONFIGS,
      namespace: CP,
      body: {
        apiVersion: 'config.skein.dev/v1alpha1',
        kind: 'MeshConfig',
        metadata: { name: MESH, namespace: CP },
        spec: { observability: { enableDebugServer: true } },
      },
    });
    const mesh = await KubeMesh.start({ kubeconfigPath: kubeconfig, meshName: MESH, namespace: CP });
    const url = `http://127.0.0.1:${mesh.ports.http}`;
    const { credentials, cn } = await proxyCredentials(mesh.stateDir, {
      namespace: BUYER,
      serviceAccount: 'bookbuyer',
      uuid: buyerUuid,
      kind: 'sidecar',
    });
    const client = adsClient(mesh.ports.ads, credentials);
    try {
      client.send({ typeUrl: TypeUrl.Cluster, node: { id: cn, cluster: 'skein-test' } });
      // Wait for a CDS answer that names the bookstore (the registry may still be syncing) and ACK it.
      const deadline = Date.now() + 20_000;
      for (;;) {
        const res = await client.next(Math.max(1, deadline - Date.now()));
        client.ack(res);
        if (res.typeUrl === TypeUrl.Cluster && res.names.includes(`${STORE}/bookstore|14001`)) break;
      }
      // The ACK travels on; the controller records it before the CLI asks (poll briefly).
      let r: Run | undefined;
      for (let i = 0; i < 50; i++) {
        r = await skein(['proxy', 'get', 'status', 'bookbuyer', '-n', BUYER, '--controller-url', url]);
        if (r.code === 0 && /CDS\s+\S+\s+\S+\s+SYNCED/.test(r.stdout)) break;
        await new Promise((res) => setTimeout(res, 100));
      }
      assert.ok(r);
      assert.equal(r.code, 0, show(r));
      assert.match(r.stdout, new RegExp(`^PROXY   ${cn.replaceAll('.', '\\.')}$`, 'm'));
      assert.match(r.stdout, new RegExp(`^POD     ${BUYER}/bookbuyer$`, 'm'));
      assert.match(r.stdout, /^TYPE\s+SENT\s+ACKED\s+STATE\s+LAST NACK$/m);
      const cds = r.stdout
        .split('\n')
        .find((l) => l.startsWith('CDS '))
        ?.split(/\s+/);
      assert.equal(cds?.[3], 'SYNCED', r.stdout);
      assert.equal(cds?.[1], cds?.[2], 'sent version == ACKed version');

      r = await skein(['proxy', 'get', 'config', `${BUYER}/bookbuyer`, '--controller-url', url]);
      assert.equal(r.code, 0, show(r));
      const dump: unknown = JSON.parse(r.stdout);
      assert.ok(typeof dump === 'object' && dump !== null);
      assert.equal(Reflect.get(dump, 'proxy'), cn);
      const types = Reflect.get(dump, 'types');
      const clusters = Reflect.get(Reflect.get(types, TypeUrl.Cluster) ?? {}, 'resources');
      assert.ok(Array.isArray(clusters));
      assert.ok(
        clusters.some(
          (c: unknown) =>
            typeof c === 'object' && c !== null && Reflect.get(c, 'name') === `${STORE}/bookstore|14001`,
        ),
        r.stdout.slice(0, 2000),
      );

      // A meshed pod whose proxy is not connected.
      r = await skein(['proxy', 'get', 'status', `${STORE}/bookstore-v1`, '--controller-url', url]);
      assert.equal(r.code, 2, show(r));
      assert.match(
        r.stderr,
        new RegExp(`no proxy of pod ${STORE}/bookstore-v1 \\(proxy UUID [0-9a-f-]+\\) is connected`),
      );

      // The dashboard prints its URL and runs until Ctrl-C.
      r = await skein(['dashboard', '--controller-url', url, '--no-browser'], { untilLine: /Press Ctrl-C/ });
      assert.equal(r.code, 0, show(r));
      assert.match(r.stdout, new RegExp(`^skein dashboard: ${url}/ui/$`, 'm'));
    } finally {
      client.close();
      await mesh.stop();
      await custom
        .deleteNamespacedCustomObject({ ...MESH_CONFIGS, namespace: CP, name: MESH })
        .catch(() => undefined);
    }
  });

  test('install applies CRDs, installs the chart and reports the wait; uninstall removes the release', {
    skip: existsSync(helm) ? false : 'test/helm/bin/helm missing: run `make helm-bin`',
  }, async () => {
    const ns = `cli-install-${sfx}`;
    const env = {
      SKEIN_HELM: helm,
      HELM_CACHE_HOME: path.join(tmp, 'helm-cache'),
      HELM_CONFIG_HOME: path.join(tmp, 'helm-config'),
      HELM_DATA_HOME: path.join(tmp, 'helm-data'),
    };
    try {
      // No kubelet runs: the controller pod never becomes ready, so the wait must time out clearly.
      let r = await skein(
        ['install', '--namespace', ns, '--mesh-name', `cli-install-${sfx}`, '--timeout', '3s'],
        { env },
      );
      assert.equal(r.code, 2, show(r));
      assert.match(
        r.stdout,
        /customresourcedefinition traffictargets\.access\.smi-spec\.io (created|configured|unchanged)/,
      );
      assert.match(r.stdout, /STATUS: deployed/);
      assert.match(r.stdout, /Waiting up to 3s for the skein controller to become ready\n {2}\S/);
      assert.match(
        r.stderr,
        new RegExp(
          `^skein: the skein controller did not become ready: deployment ${ns}/skein-controller not ready after 3 s`,
        ),
      );
      const deployment = await apps.readNamespacedDeployment({ namespace: ns, name: 'skein-controller' });
      assert.equal(deployment.metadata?.name, 'skein-controller');

      r = await skein(['version', '--controller-namespace', ns]);
      assert.equal(r.code, 0, show(r));
      assert.match(
        r.stdout,
        new RegExp(`^controller \\S+ \\(${ns}/skein-controller, image \\S+, 0/1 ready\\)$`, 'm'),
      );

      // Again without waiting: an upgrade of the same release.
      r = await skein(['install', '-n', ns, '--mesh-name', `cli-install-${sfx}`, '--wait=false'], { env });
      assert.equal(r.code, 0, show(r));
      assert.match(r.stdout, /Release skein revision 2: deployed/);

      r = await skein(['uninstall', '-n', ns], { env });
      assert.equal(r.code, 0, show(r));
      assert.match(r.stdout, /Release skein uninstalled\./);
      assert.match(r.stdout, /CustomResourceDefinitions and SMI objects kept/);
      await assert.rejects(apps.readNamespacedDeployment({ namespace: ns, name: 'skein-controller' }));

      r = await skein(['uninstall', '-n', ns], { env });
      assert.equal(r.code, 0, show(r));
      assert.match(r.stdout, /No release skein in namespace/);
    } finally {
      await core.deleteNamespace({ name: ns }).catch(() => undefined);
    }
  });
});
