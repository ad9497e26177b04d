// The mesh the real-Envoy sidecar tests run: the real test API server, the
// real skein-controller in Kubernetes mode serving ADS and the injection
// webhook on the test pod network's node address, pods created through the
// API server (so injected by the real admission chain) and run from what it
// stored by the test kubelet (test/support/pod-runner.ts), with real Envoy
// binaries (test/envoybin, `make envoy-bin`) as the sidecar image.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api } from '@kubernetes/client-node';
import { KubeApiError, KubeClient } from '../../pkg/registry/kube/client.js';
import { acquireCluster } from '../support/cluster.js';
import { ENVOY_NEWEST, ENVOY_OLDEST, envoyBinary, hasEnvoy } from '../support/envoy-bin.js';
import { applyCustomObject, createNamespace } from '../support/kube.js';
import { type KubeController, startKubeController } from '../support/kube-controller.js';
import { eventually, prepareMeshCluster } from '../support/kube-registry-fixture.js';
import { PodNetwork, run } from '../support/pod-network.js';
import { type ImageStore, PodRunner, type RunningPod, until } from '../support/pod-runner.js';
import { freePorts, type JsonLineProcess } from '../support/processes.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const meshApp = path.join(repoRoot, 'dist', 'test', 'apps', 'mesh-app.js');
const skeinCli = path.join(repoRoot, 'dist', 'cmd', 'skein', 'main.js');

export const envoyImage = (version: string) => `envoyproxy/envoy:v${version}`;
export const APP_IMAGE = 'skein-test/mesh-app:dev';

export const SERVICE_CIDR = '10.96.0.0/16';

/** What each image runs here: Envoy images → the fetched binary of that version; the app image → mesh-app. */
export const testImages: ImageStore = {
  resolve(image, command) {
    const [, envoyVersion] = /^envoyproxy\/envoy:v(\d+\.\d+\.\d+)$/.exec(image) ?? [];
    const [cmd = '', ...args] = command;
    if (envoyVersion) {
      if (cmd !== 'envoy') throw new Error(`${image}: no ${cmd} in the image`);
      return [envoyBinary(envoyVersion), ...args];
    }
    if (image === APP_IMAGE) {
      if (cmd !== 'mesh-app') throw new Error(`${image}: no ${cmd} in the image`);
      return [process.execPath, meshApp, ...args];
    }
    // The init image (skein's controller image) runs /bin/sh with iptables: this machine's.
    return command;
  },
};

/** Whether this machine can run the suite, and if not why (a message for `skip`). */
export async function sidecarSuiteSkipReason(): Promise<string | undefined> {
  if (process.getuid?.() !== 0) return 'needs root (network namespaces, iptables)';
  for (const v of [ENVOY_OLDEST, ENVOY_NEWEST]) if (!hasEnvoy(v)) return `no Envoy ${v}: run make envoy-bin`;
  for (const tool of ['iptables-restore', 'setpriv', 'ip'])
    await run('sh', ['-c', `command -v ${tool}`]).catch(() => {
      throw new Error(`${tool} is missing (make test installs iptables)`);
    });
  return undefined;
}

export interface Service {
  name: string;
  selector: Record<string, string>;
  ports: { name: string; port: number; appProtocol?: string }[];
}

export interface PodSpec {
  name: string;
  serviceAccount: string;
  labels: Record<string, string>;
  annotations?: Record<string, string>;
  /** mesh-app serve flags after --name. */
  serve: string[];
}

/** What the tests read of an injected pod. */
interface AdmittedContainer {
  name: string;
  args?: string[];
  env?: { name: string; value?: string }[];
}
export interface AdmittedPod {
  spec?: { containers?: AdmittedContainer[]; initContainers?: AdmittedContainer[] };
}

export const HTTP_PORT = 8080;
export const GRPC_PORT = 9090;
export const TCP_PORT = 7070;

/** What the tests read of one `/debug/proxies` entry. */
export interface DebugStream {
  streamId: string;
  pod?: { name: string };
  protocol?: string;
  received?: { requests: number; bytes: number };
}

export class SidecarMesh {
  private readonly services = new Map<string, string>();
  /** Names outside the mesh (egress destinations): name → address, in every pod's /etc/hosts. */
  readonly outsideHosts = new Map<string, string>();
  private meshConfig: Record<string, unknown> = {};
  private constructor(
    readonly api: KubeClient,
    readonly core: CoreV1Api,
    readonly network: PodNetwork,
    readonly runner: PodRunner,
    readonly controlPlane: string,
    readonly meshName: string,
    readonly namespace: string,
    private controller: KubeController,
    private readonly controllerArgs: () => Promise<KubeController>,
    private readonly release: () => Promise<void>,
    /** The test cluster's kubeconfig, for running the `skein` CLI against it. */
    readonly kubeconfigPath: string,
  ) {}

  get controllerProcess(): JsonLineProcess {
    return this.controller.process;
  }

  /** The controller's Service name as the injected bootstraps address it. */
  get controllerHost(): string {
    return `skein-controller.${this.controlPlane}.svc.cluster.local`;
  }

  /** `controllerArgs`: more skein-controller flags (e.g. `--ingress-gateway`). */
  static async start(sfx: string, opts: { controllerArgs?: string[] } = {}): Promise<SidecarMesh> {
    const cluster = await acquireCluster();
    const kc = cluster.kubeConfig;
    const api = new KubeClient({ kubeConfig: kc });
    const core = kc.makeApiClient(CoreV1Api);
    const meshName = `sc-${sfx}`;
    const controlPlane = `skein-system-sc-${sfx}`;
    const namespace = `shop-${sfx}`;
    await prepareMeshCluster(kc, core, controlPlane);
    const network = await PodNetwork.create(SERVICE_CIDR);
    const gw = network.gatewayIp;
    const [webhookPort = 0, httpPort = 0] = await freePorts(2);
    // The node address stands in for the controller's Service IP: ADS on the
    // port the injected bootstrap names (15128), the webhook for the API server.
    const startController = () =>
      startKubeController({
        kubeconfigPath: cluster.endpoint.kubeconfigPath,
        meshName,
        namespace: controlPlane,
        stateDirPrefix: 'skein-sidecar-',
        args: [
          ...['--host', gw, '--ads-port', '15128', '--http-port', String(httpPort)],
          ...['--webhook-port', String(webhookPort), '--extra-san', gw],
          ...['--envoy-image', envoyImage(ENVOY_NEWEST), '--min-push-interval', '50ms', '--debug'],
          // PodRunner runs init containers to completion and probes only spec.containers: it has
          // no native sidecars (KEP-753) yet, so these pods keep the classic layout.
          ...['--native-sidecars', 'never'],
          // SKEIN_TEST_LOG_LEVEL=debug keeps every push and issuance in the controller's captured lines.
          ...['--log-level', process.env['SKEIN_TEST_LOG_LEVEL'] ?? 'info'],
          ...(opts.controllerArgs ?? []),
        ],
      });
    const controller = await startController();
    let mesh: SidecarMesh | undefined;
    const hosts = () => mesh?.hostsFile() ?? '';
    const runner = new PodRunner({ api, core, network, images: testImages, hosts, imageFiles: repoRoot });
    mesh = new SidecarMesh(
      api,
      core,
      network,
      runner,
      controlPlane,
      meshName,
      namespace,
      controller,
      startController,
      cluster.release,
      cluster.endpoint.kubeconfigPath,
    );
    await mesh.installWebhook(`https://${gw}:${webhookPort}/mutate-pod-creation`);
    await createNamespace(
      core,
      namespace,
      { 'skein.dev/monitored-by': meshName },
      { 'skein.dev/sidecar-injection': 'enabled' },
    );
    return mesh;
  }

  private webhookConfigName(): string {
    return `skein-sidecar-injector-${this.meshName}`;
  }

  private async installWebhook(url: string): Promise<void> {
    const path = '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations';
    await this.api.request('POST', path, {
      body: {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'MutatingWebhookConfiguration',
        metadata: { name: this.webhookConfigName() },
        webhooks: [
          {
            name: 'sidecar-injector.skein.dev',
            clientConfig: { url },
            rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
            namespaceSelector: { matchLabels: { 'skein.dev/monitored-by': this.meshName } },
            sideEffects: 'NoneOnDryRun',
            admissionReviewVersions: ['v1'],
            failurePolicy: 'Fail',
            timeoutSeconds: 10,
          },
          // The chart's second webhook: the ingress gateway's pods in the control-plane namespace.
          {
            name: 'ingress-gateway.skein.dev',
            clientConfig: { url },
            rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': this.controlPlane } },
            objectSelector: { matchLabels: { 'skein.dev/gateway': 'ingress' } },
            sideEffects: 'NoneOnDryRun',
            admissionReviewVersions: ['v1'],
            failurePolicy: 'Fail',
            timeoutSeconds: 10,
          },
        ],
      },
    });
    // The controller fills in the caBundle; the API server's webhook cache follows within moments.
    await eventually(
      'the API server trusts the webhook',
      async () => {
        await this.api.request('POST', `/api/v1/namespaces/${this.controlPlane}/pods`, {
          body: {
            metadata: { name: 'probe' },
            spec: { containers: [{ name: 'c', image: APP_IMAGE }] },
          },
          query: { dryRun: 'All' },
        });
        const cfg = await this.api.request('GET', `${path}/${this.webhookConfigName()}`);
        if (!JSON.stringify(cfg).includes('"caBundle"')) throw new Error('no caBundle yet');
      },
      30_000,
    );
  }

  /** Kube DNS, as /etc/hosts: every Service created here, and the controller at the node address. */
  hostsFile(): string {
    const lines = ['127.0.0.1 localhost', `${this.network.gatewayIp} ${this.controllerHost}`];
    for (const [name, ip] of this.services)
      lines.push(`${ip} ${name}.${this.namespace}.svc.cluster.local ${name}.${this.namespace}.svc ${name}`);
    for (const [name, ip] of this.outsideHosts) lines.push(`${ip} ${name}`);
    return `${lines.join('\n')}\n`;
  }

  async createServiceAccount(name: string): Promise<void> {
    await this.api.request('POST', `/api/v1/namespaces/${this.namespace}/serviceaccounts`, {
      body: { metadata: { name } },
    });
  }

  async createService(s: Service): Promise<string> {
    const created = await this.api.request('POST', `/api/v1/namespaces/${this.namespace}/services`, {
      body: {
        metadata: { name: s.name, labels: { app: s.name } },
        spec: {
          selector: s.selector,
          ports: s.ports.map((p) => ({ ...p, protocol: 'TCP', targetPort: p.port })),
        },
      },
    });
    const ip = String((created as { spec?: { clusterIP?: string } }).spec?.clusterIP ?? '');
    this.services.set(s.name, ip);
    await this.runner.refreshHosts();
    return ip;
  }

  /**
   * The ingress suites' backend: ServiceAccount, Service and one Ready pod
   * `<name>-1`, all named `name`, serving HTTP on HTTP_PORT.
   */
  async startHttpBackend(name: string): Promise<RunningPod> {
    await this.createServiceAccount(name);
    await this.createService({ name, selector: { app: name }, ports: [{ name: 'http', port: HTTP_PORT }] });
    const pod = await this.startPod({
      name: `${name}-1`,
      serviceAccount: name,
      labels: { app: name },
      serve: ['--http', String(HTTP_PORT)],
    });
    await this.waitReady(pod);
    return pod;
  }

  /** Creates the Pod through the API server (the webhook injects it), then runs what was stored. */
  async startPod(p: PodSpec): Promise<RunningPod> {
    await this.api.request('POST', `/api/v1/namespaces/${this.namespace}/pods`, { body: this.podBody(p) });
    return this.runner.run(this.namespace, p.name);
  }

  /**
   * The iptables rules the injector would give this pod now: a dry-run create
   * (the webhook mutates, nothing is stored), so a test can wait until a
   * MeshConfig change has reached the injector.
   */
  async admittedRules(p: PodSpec): Promise<string[]> {
    const pod = await this.admittedPod(p);
    const init = pod.spec?.initContainers?.find((c) => c.name === 'skein-init');
    const rules = init?.env?.find((e) => e.name === 'SKEIN_IPTABLES_RULES')?.value;
    if (rules === undefined) throw new Error(`pod ${p.name} was not injected: ${JSON.stringify(pod.spec)}`);
    return rules.split('\n');
  }

  /** The pod as the webhook would inject it now: a dry-run create (nothing is stored). */
  async admittedPod(p: PodSpec): Promise<AdmittedPod> {
    return (await this.api.request('POST', `/api/v1/namespaces/${this.namespace}/pods`, {
      body: this.podBody(p),
      query: { dryRun: 'All' },
    })) as AdmittedPod;
  }

  private podBody(p: PodSpec): Record<string, unknown> {
    return {
      metadata: { name: p.name, labels: p.labels, annotations: p.annotations ?? {} },
      spec: {
        nodeName: 'test-node',
        serviceAccountName: p.serviceAccount,
        // The app as its own, unprivileged user (the sidecar is 1500).
        securityContext: { runAsUser: 1000, runAsGroup: 1000 },
        containers: [
          {
            name: 'app',
            image: APP_IMAGE,
            command: ['mesh-app', 'serve', '--name', p.name, ...p.serve],
            ports: [{ name: 'http', containerPort: HTTP_PORT }],
            readinessProbe: { httpGet: { path: '/ready', port: 'http' }, periodSeconds: 1 },
            livenessProbe: { httpGet: { path: '/live', port: 'http' }, periodSeconds: 2 },
          },
        ],
      },
    };
  }

  /**
   * Waits for the Ready condition the test kubelet writes. Envoy starts its
   * static probe listeners only after its first xDS fetch, which a loaded
   * machine (CI runs two test files at once) can delay: a generous bound, and
   * on timeout what the probes and the sidecar said.
   */
  async waitReady(pod: RunningPod, ms = 90_000): Promise<void> {
    try {
      await until(
        `pod ${pod.name} Ready`,
        async () => {
          const stored = (await this.api.request(
            'GET',
            `/api/v1/namespaces/${this.namespace}/pods/${pod.name}`,
          )) as {
            status?: { conditions?: { type: string; status: string }[] };
          };
          return stored.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
        },
        ms,
      );
    } catch (err) {
      const probes = JSON.stringify(pod.probeLog.slice(-3));
      const envoy = pod.containers.get('envoy')?.stderr.slice(-10).join('\n') ?? '';
      throw new Error(
        `${err instanceof Error ? err.message : String(err)}; last probes ${probes}; envoy:\n${envoy}`,
      );
    }
  }

  async deletePod(name: string): Promise<void> {
    await this.runner.remove(this.namespace, name);
    await this.api
      .request('DELETE', `/api/v1/namespaces/${this.namespace}/pods/${name}`, {
        query: { gracePeriodSeconds: '0' },
      })
      .catch((err: unknown) => {
        if (!(err instanceof KubeApiError && err.status === 404)) throw err;
      });
  }

  /** Creates or replaces a namespaced custom object (`apis/<group>/<version>/…/<plural>`). */
  async apply(
    group: string,
    version: string,
    plural: string,
    body: Record<string, unknown>,
    ns = this.namespace,
  ): Promise<void> {
    await applyCustomObject(this.api, group, version, plural, body, ns);
  }

  /** The mesh's MeshConfig spec (replaced whole). */
  async setMeshConfig(spec: Record<string, unknown>): Promise<void> {
    this.meshConfig = spec;
    await this.apply(
      'config.skein.dev',
      'v1alpha1',
      'meshconfigs',
      {
        apiVersion: 'config.skein.dev/v1alpha1',
        kind: 'MeshConfig',
        metadata: { name: 'skein', namespace: this.controlPlane },
        spec,
      },
      this.controlPlane,
    );
  }

  /** Puts the workload namespace in the mesh or takes it out (its monitored-by label). */
  async setMonitored(monitored: boolean): Promise<void> {
    await this.api.request('PATCH', `/api/v1/namespaces/${this.namespace}`, {
      contentType: 'application/merge-patch+json',
      body: { metadata: { labels: { 'skein.dev/monitored-by': monitored ? this.meshName : null } } },
    });
  }

  async setPermissive(permissive: boolean): Promise<void> {
    await this.setMeshConfig({ ...this.meshConfig, traffic: { permissive } });
  }

  /**
   * The controller's `/debug/proxies`: per stream, its pod, ADS protocol (`delta`, or absent for
   * SotW) and the request messages it received with their encoded bytes.
   */
  async debugProxies(): Promise<DebugStream[]> {
    return (await this.debug('proxies')) as DebugStream[];
  }

  /** The controller's `/metrics` (Prometheus text). */
  async metrics(): Promise<string> {
    const port = Number(this.controller.ready['http']);
    return (await fetch(`http://${this.network.gatewayIp}:${port}/metrics`)).text();
  }

  /** One of the controller's `/debug/<page>` JSON pages (problems, policies, …). */
  async debug(page: string): Promise<unknown> {
    const port = Number(this.controller.ready['http']);
    const res = await fetch(`http://${this.network.gatewayIp}:${port}/debug/${page}`);
    return res.json();
  }

  /**
   * `skein policy check <args> -o json` as a user runs it: the compiled CLI
   * against this mesh's API server, evaluating it with skein's policy engine
   * (for comparing its verdict with what the sidecars did).
   */
  async policyCheck(args: readonly string[]): Promise<{ code: number | null; verdict: string; out: string }> {
    const argv = [skeinCli, 'policy', 'check', ...args, '-o', 'json'];
    argv.push('--mesh-name', this.meshName, '--controller-namespace', this.controlPlane);
    argv.push('--kubeconfig', this.kubeconfigPath);
    const child = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', resolve);
    });
    let verdict = `unreadable (exit ${code}): ${out}${err}`;
    try {
      verdict = String((JSON.parse(out) as { verdict?: unknown }).verdict);
    } catch {
      // The message above says what the CLI printed instead.
    }
    return { code, verdict, out: `${out}${err}` };
  }

  /** The `skein` CLI against this mesh (its API server, the controller's HTTP port directly). */
  async skein(args: readonly string[]): Promise<{ code: number | null; out: string }> {
    const url = `http://${this.network.gatewayIp}:${Number(this.controller.ready['http'])}`;
    const argv = [skeinCli, ...args, '--kubeconfig', this.kubeconfigPath, '--controller-url', url];
    const child = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', resolve);
    });
    return { code, out };
  }

  /** When the running controller logged that it was ready (ms since the epoch, its pino `time`). */
  get controllerReadyAt(): number {
    return Number(this.controller.ready['time']);
  }

  async stopController(): Promise<void> {
    await this.controller.stop();
  }

  async restartController(): Promise<void> {
    this.controller = await this.controllerArgs();
  }

  async stop(): Promise<void> {
    await this.runner.destroy();
    await this.controller.stop();
    await this.api
      .request(
        'DELETE',
        `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/${this.webhookConfigName()}`,
      )
      .catch(() => undefined);
    for (const ns of [this.namespace, this.controlPlane])
      await this.api.request('DELETE', `/api/v1/namespaces/${ns}`).catch(() => undefined);
    await this.network.destroy();
    await this.release();
  }
}

/** A `mesh-app client` exec'd into a pod's app container: one JSON command in, one result out. */
export class MeshClient {
  private nextId = 1;
  private constructor(private readonly p: JsonLineProcess) {}

  static open(pod: RunningPod): MeshClient {
    return new MeshClient(pod.exec('app', [process.execPath, meshApp, 'client'], true));
  }

  async send(cmd: Record<string, unknown>, ms = 60_000): Promise<Outcomes> {
    const id = this.nextId++;
    this.p.child.stdin?.write(`${JSON.stringify({ id, ...cmd })}\n`);
    const line = await this.p.waitFor((l) => l['id'] === id, ms);
    return {
      counts: (line['counts'] ?? {}) as Record<string, number>,
      bodies: (line['bodies'] ?? {}) as Record<string, string>,
      ms: typeof line['ms'] === 'number' ? line['ms'] : 0,
    };
  }

  http(url: string, count = 1, extra: Record<string, unknown> = {}): Promise<Outcomes> {
    return this.send({ kind: 'http', url, count, ...extra });
  }

  close(): Promise<void> {
    this.p.child.stdin?.end();
    return this.p.stop();
  }
}

export interface Outcomes {
  counts: Record<string, number>;
  bodies: Record<string, string>;
  /** Wall time of the whole command in the client (ms). */
  ms: number;
}

/** A `caller` pod and a `flaky` backend pod (Service `flaky` on HTTP_PORT) failing `failRatio` of its calls. */
export async function callerAndFlaky(
  mesh: SidecarMesh,
  failRatio: number,
): Promise<{ caller: RunningPod; flaky: RunningPod; client: MeshClient }> {
  for (const sa of ['caller', 'flaky']) await mesh.createServiceAccount(sa);
  await mesh.createService({
    name: 'flaky',
    selector: { app: 'flaky' },
    ports: [{ name: 'http', port: HTTP_PORT }],
  });
  const serve = ['--http', String(HTTP_PORT)];
  const flaky = await mesh.startPod({
    name: 'flaky-1',
    serviceAccount: 'flaky',
    labels: { app: 'flaky' },
    serve: [...serve, '--fail-ratio', String(failRatio)],
  });
  const caller = await mesh.startPod({
    name: 'caller',
    serviceAccount: 'caller',
    labels: { app: 'caller' },
    serve,
  });
  await Promise.all([mesh.waitReady(caller), mesh.waitReady(flaky)]);
  const client = MeshClient.open(caller);
  // Permissive mode reaches flaky's sidecar with a push: until then its RBAC answers 403, and
  // while Envoy swaps the listener its workers may answer from either version for a few ms,
  // so a round of calls must pass, not one.
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
    const r = await client.http(`http://flaky:${HTTP_PORT}/warmup`, 10);
    if ((r.counts['403'] ?? 0) === 0) break;
    await new Promise((done) => setTimeout(done, 500));
  }
  return { caller, flaky, client };
}

/**
 * Permissive mode, a `caller` pod and a Service `svc` backed by two pods
 * (`<svc>-<name>` for each entry of `backends`: name → extra mesh-app flags),
 * once `answersFrom` finds answers from both in 20 calls' outcomes (e.g.
 * `200 sticky-a` and `200 sticky-b`).
 */
export async function callerAndPair(
  mesh: SidecarMesh,
  svc: string,
  backends: Record<string, string[]>,
  answersFrom: (counts: Record<string, number>) => boolean,
): Promise<{ callerPod: RunningPod; caller: MeshClient }> {
  await mesh.setMeshConfig({ traffic: { permissive: true } });
  for (const sa of ['caller', 'backend']) await mesh.createServiceAccount(sa);
  await mesh.createService({ name: svc, selector: { app: svc }, ports: [{ name: 'http', port: HTTP_PORT }] });
  const serve = ['--http', String(HTTP_PORT)];
  const [callerPod, ...rest] = await Promise.all([
    mesh.startPod({ name: 'caller', serviceAccount: 'caller', labels: { app: 'caller' }, serve }),
    ...Object.entries(backends).map(([name, extra]) =>
      mesh.startPod({
        name: `${svc}-${name}`,
        serviceAccount: 'backend',
        labels: { app: svc },
        serve: [...serve, ...extra],
      }),
    ),
  ]);
  if (!callerPod) throw new Error('no caller pod');
  await Promise.all([callerPod, ...rest].map((p) => mesh.waitReady(p)));
  const caller = MeshClient.open(callerPod);
  await eventually(
    `the caller reaches both ${svc} pods`,
    async () => {
      const r = await caller.http(`http://${svc}:${HTTP_PORT}/hello`, 20);
      // Every call answered by a backend app (`<status> <pod>`), none by a proxy (a bare
      // `403` while a sidecar still has the SMI-mode RBAC it got before permissive mode).
      const byProxy = Object.keys(r.counts).filter((k) => !k.includes(' '));
      if (byProxy.length > 0 || !answersFrom(r.counts)) throw new Error(JSON.stringify(r));
    },
    60_000,
  );
  return { callerPod, caller };
}
