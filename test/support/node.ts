// A real Kubernetes node for tests: kubelet, kube-proxy and kube-scheduler (built by
// `make cluster-bin` from the same k8s.io/kubernetes module as the API server),
// containerd + runc + the CNI bridge plugin (Debian packages, `make node-tools`),
// joined to a test cluster of its own whose API server listens on the node's
// bridge address, so pods reach it through the `kubernetes` Service like in any
// cluster. Images come from OCI archives (`make image test-images`), imported
// with ctr: nothing is pulled.
//
// One node per machine at a time (the kubelet writes fixed paths): start() refuses
// while another run's node is alive and cleans up a dead one's leftovers first.
//
// Stand-ins that remain (docs/testing.md): DNS is answered by cluster-dns.ts, not
// CoreDNS; the node runs no CSI, device plugins or cloud provider.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { keepLogFiles } from './child-logs.js';
import { CLUSTER_BIN_DIR, KUBERNETES_SERVICE_IP, TestCluster } from './cluster.js';
import { type ClusterDns, startClusterDns } from './cluster-dns.js';
import { type Component, spawnComponent } from './component.js';
import {
  cleanupNodeHost,
  createNodeBridge,
  NODE_BRIDGE,
  NODE_DIR,
  NODE_IP,
  NODE_OWNER_FILE,
  nodeHostLeftovers,
  nodeOwnerAlive,
  nodeOwnerRecord,
  POD_CIDR,
} from './node-host.js';
import { sleep } from './processes.js';

const run = promisify(execFile);

export { NODE_IP, nodeHostLeftovers };
export const NODE_NAME = 'skein-node';
/** The pod sandbox image containerd uses instead of pulling registry.k8s.io/pause. */
export const PAUSE_IMAGE = 'skein.test/pause:1';
export const CLUSTER_DOMAIN = 'cluster.local';

export interface TestNodeOptions {
  /** OCI archives to import (must include PAUSE_IMAGE's). */
  images: readonly string[];
  /** Echo component logs to stderr. */
  verbose?: boolean;
  /** Per step timeout; default 60 s. */
  timeoutMs?: number;
}

const d = (...p: string[]) => path.join(NODE_DIR, ...p);
const CONTAINERD_SOCKET = d('containerd', 'containerd.sock');
const IP_FORWARD = '/proc/sys/net/ipv4/ip_forward';

function containerdConfig(): string {
  // containerd 1.6 config v2 (Debian bookworm's). Everything under NODE_DIR.
  return `version = 2
root = "${d('containerd', 'root')}"
state = "${d('containerd', 'state')}"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "${CONTAINERD_SOCKET}"
[ttrpc]
  address = "${d('containerd', 'ttrpc.sock')}"
[plugins."io.containerd.internal.v1.opt"]
  path = "${d('containerd', 'opt')}"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${PAUSE_IMAGE}"
  # Root here lacks CAP_SYS_RESOURCE: runc cannot lower oom_score_adj, so it fails every sandbox.
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        # cgroup v1 with the cgroupfs driver, like the kubelet's cgroupDriver.
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "${d('cni', 'net.d')}"
    max_conf_num = 1
`;
}

function cniConfig(): unknown {
  return {
    cniVersion: '1.0.0',
    name: 'skein-node',
    plugins: [
      {
        type: 'bridge',
        bridge: NODE_BRIDGE,
        isGateway: true,
        // Pods reach only this machine: no masquerade, no rules in the host's nat table.
        ipMasq: false,
        // A pod calling itself through a Service comes back over its own veth.
        hairpinMode: true,
        ipam: {
          type: 'host-local',
          ranges: [[{ subnet: POD_CIDR, rangeStart: '10.88.0.10', gateway: NODE_IP }]],
          routes: [{ dst: '0.0.0.0/0' }],
          dataDir: d('cni', 'ipam'),
        },
      },
      { type: 'loopback' },
    ],
  };
}

function kubeletConfig(healthzPort: number): unknown {
  return {
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    // This machine's hierarchy is cgroup v1, which 1.35+ refuse unless told.
    failCgroupV1: false,
    cgroupDriver: 'cgroupfs',
    failSwapOn: false,
    containerRuntimeEndpoint: `unix://${CONTAINERD_SOCKET}`,
    // Only the API server and the tests talk to it: no authentication needed for `logs`/`exec`.
    authentication: { anonymous: { enabled: true }, webhook: { enabled: false } },
    authorization: { mode: 'AlwaysAllow' },
    address: NODE_IP,
    readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1',
    healthzPort,
    clusterDomain: CLUSTER_DOMAIN,
    clusterDNS: [NODE_IP],
    resolvConf: d('resolv.conf'),
    podLogsDir: d('pod-logs'),
    // A test machine's disk may be nearly full; the tests never want evictions or image GC.
    evictionHard: { 'memory.available': '1Mi', 'nodefs.available': '0%', 'imagefs.available': '0%' },
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    serializeImagePulls: false,
    makeIPTablesUtilChains: false,
    // Secret volumes follow changes at once (certificate rotation), not on the 1 min sync.
    configMapAndSecretChangeDetectionStrategy: 'Watch',
    syncFrequency: '10s',
    nodeStatusUpdateFrequency: '2s',
    shutdownGracePeriod: '0s',
  };
}

function kubeProxyConfig(kubeconfig: string, healthzPort: number, metricsPort: number): unknown {
  return {
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
    kind: 'KubeProxyConfiguration',
    mode: 'iptables',
    clientConnection: { kubeconfig },
    hostnameOverride: NODE_NAME,
    clusterCIDR: POD_CIDR,
    bindAddress: NODE_IP,
    healthzBindAddress: `127.0.0.1:${healthzPort}`,
    metricsBindAddress: `127.0.0.1:${metricsPort}`,
    // Leave the host's conntrack sysctls alone.
    conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' },
    iptables: { localhostNodePorts: false, syncPeriod: '30s', minSyncPeriod: '0s' },
  };
}

/**
 * A cluster with one real node. `start()` cleans up leftovers, creates the bridge,
 * starts the control plane on the bridge address, then containerd, the kubelet,
 * kube-proxy, kube-scheduler and the DNS stand-in, imports the images and waits for
 * the Node to be Ready. `stop()` stops it all and removes every trace.
 */
export class NodeCluster {
  private readonly components: Component[] = [];
  private dns: ClusterDns | undefined;
  private ipForwardWas = '0';
  private stopped = false;
  /** How long start() took, per step (for the suite's notes). */
  readonly timings: Record<string, number> = {};
  cluster!: TestCluster;

  private constructor(private readonly opts: TestNodeOptions) {}

  static async start(opts: TestNodeOptions): Promise<NodeCluster> {
    const node = new NodeCluster(opts);
    try {
      await node.boot();
    } catch (err) {
      await node.stop().catch(() => undefined);
      throw err;
    }
    return node;
  }

  private get timeoutMs(): number {
    return this.opts.timeoutMs ?? 60_000;
  }

  private async step<T>(name: string, f: () => Promise<T>): Promise<T> {
    const t0 = Date.now();
    const v = await f();
    this.timings[name] = Date.now() - t0;
    return v;
  }

  private async boot(): Promise<void> {
    await this.step('cleanup', async () => {
      if (await nodeOwnerAlive())
        throw new Error(
          `another test node (pid ${(await readFile(NODE_OWNER_FILE, 'utf8')).trim().split(' ')[0]}) is running on this machine; one at a time`,
        );
      await cleanupNodeHost();
      await mkdir(d('cni', 'net.d'), { recursive: true });
      await writeFile(NODE_OWNER_FILE, await nodeOwnerRecord());
      await writeFile(d('resolv.conf'), '');
      this.ipForwardWas = (await readFile(IP_FORWARD, 'utf8')).trim();
      // Pods reach Services through the host (kube-proxy's DNAT), then each other.
      await writeFile(IP_FORWARD, '1');
      await createNodeBridge();
    });
    this.cluster = await this.step('control plane', () =>
      TestCluster.start({
        host: NODE_IP,
        controllers: [
          'endpointslice-controller',
          'endpointslice-mirroring-controller',
          'namespace-controller',
          'garbage-collector-controller',
          'serviceaccount-controller',
          'deployment-controller',
          'replicaset-controller',
          'root-ca-certificate-publisher-controller',
          // Lifts the not-ready taint the kubelet registers with, once the Node is Ready.
          'node-lifecycle-controller',
        ],
        apiServerArgs: ['--kubelet-preferred-address-types=InternalIP'],
        verbose: this.opts.verbose,
      }),
    );
    await this.step('containerd', () => this.startContainerd());
    await this.step('images', () => this.importImages());
    await this.step('kubelet', () => this.startKubelet());
    await this.step('kube-proxy', () => this.startKubeProxy());
    await this.step('kube-scheduler', () => this.startScheduler());
    this.dns = await this.step('dns', () => startClusterDns(this.cluster, NODE_IP, CLUSTER_DOMAIN));
  }

  private spawn(name: string, bin: string, args: string[], lifeline = true): Component {
    const c = spawnComponent(name, bin, args, this.opts.verbose ?? false, {
      lifeline,
      buildHint: lifeline ? 'make cluster-bin' : 'make node-tools',
    });
    this.components.push(c);
    return c;
  }

  private async startContainerd(): Promise<void> {
    await mkdir(d('containerd'), { recursive: true });
    await writeFile(d('containerd', 'config.toml'), containerdConfig());
    await writeFile(d('cni', 'net.d', '10-skein.conflist'), JSON.stringify(cniConfig(), null, 2));
    // containerd has no lifeline: cleanupNodeHost() finds it by its config path if this process dies.
    const c = this.spawn(
      'containerd',
      '/usr/bin/containerd',
      ['--config', d('containerd', 'config.toml')],
      false,
    );
    await this.until('containerd', c, async () => {
      await this.ctr(['version']);
      return true;
    });
  }

  /** Runs ctr against this node's containerd in the CRI namespace. */
  async ctr(args: string[]): Promise<string> {
    const { stdout } = await run('/usr/bin/ctr', ['--address', CONTAINERD_SOCKET, '-n', 'k8s.io', ...args], {
      maxBuffer: 16 * 1024 * 1024,
    });
    return stdout;
  }

  private async importImages(): Promise<void> {
    for (const archive of this.opts.images) {
      if (!existsSync(archive)) throw new Error(`${archive} is missing: run \`make image test-images\``);
      await this.ctr(['images', 'import', '--no-unpack=false', archive]);
    }
    const list = await this.ctr(['images', 'ls', '-q']);
    if (!list.split('\n').some((ref) => ref.endsWith(PAUSE_IMAGE)))
      throw new Error(`no ${PAUSE_IMAGE} among the imported images:\n${list}`);
  }

  private async startKubelet(): Promise<void> {
    await writeFile(d('kubelet-config.json'), JSON.stringify(kubeletConfig(10248)));
    const c = this.spawn('kubelet', path.join(CLUSTER_BIN_DIR, 'kubelet'), [
      `--config=${d('kubelet-config.json')}`,
      `--kubeconfig=${this.cluster.componentKubeconfig('system:node:skein-node')}`,
      `--root-dir=${d('kubelet')}`,
      `--cert-dir=${d('kubelet-pki')}`,
      `--hostname-override=${NODE_NAME}`,
      `--node-ip=${NODE_IP}`,
      '--v=1',
    ]);
    await this.until('Node Ready', c, async () => {
      const res = await this.cluster.get(`/api/v1/nodes/${NODE_NAME}`);
      if (res.status !== 200) return false;
      const node = JSON.parse(res.body) as {
        spec?: { taints?: unknown[] };
        status?: { conditions?: { type: string; status: string }[] };
      };
      // Schedulable too: no taint left (node.kubernetes.io/not-ready goes once Ready is seen).
      return (
        (node.spec?.taints ?? []).length === 0 &&
        (node.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True') ?? false)
      );
    });
  }

  private async startKubeProxy(): Promise<void> {
    const config = d('kube-proxy-config.json');
    await writeFile(
      config,
      JSON.stringify(kubeProxyConfig(this.cluster.componentKubeconfig('system:kube-proxy'), 10256, 10249)),
    );
    const c = this.spawn('kube-proxy', path.join(CLUSTER_BIN_DIR, 'kube-proxy'), [
      `--config=${config}`,
      '--v=1',
    ]);
    // Ready once the `kubernetes` Service's rules are in: that is what in-cluster clients need first.
    await this.until('kube-proxy rules', c, async () => {
      const { stdout } = await run('iptables-save', ['-t', 'nat']);
      return stdout.includes(`-d ${KUBERNETES_SERVICE_IP}/32`);
    });
  }

  private async startScheduler(): Promise<void> {
    const kubeconfig = this.cluster.componentKubeconfig('system:kube-scheduler');
    const c = this.spawn('kube-scheduler', path.join(CLUSTER_BIN_DIR, 'kube-scheduler'), [
      `--kubeconfig=${kubeconfig}`,
      `--authentication-kubeconfig=${kubeconfig}`,
      `--authorization-kubeconfig=${kubeconfig}`,
      '--leader-elect=false',
      '--secure-port=0',
      '--v=1',
    ]);
    await sleep(200);
    if (!c.running) throw new Error(`kube-scheduler: ${c.describe()}`);
  }

  private async until(what: string, c: Component, probe: () => Promise<boolean>): Promise<void> {
    const deadline = Date.now() + this.timeoutMs;
    for (;;) {
      if (!c.running) throw new Error(`${what}: ${c.describe()}`);
      if (await probe().catch(() => false)) return;
      if (Date.now() > deadline)
        throw new Error(`${what} not ready in ${this.timeoutMs} ms: ${c.describe()}`);
      await sleep(100);
    }
  }

  /** Last log lines of a node component, for assertion messages. */
  logs(name: 'containerd' | 'kubelet' | 'kube-proxy' | 'kube-scheduler'): string[] {
    return [...(this.components.find((c) => c.name === name)?.tail ?? [])];
  }

  /** Stops everything, removes every trace from the host, and restores ip_forward. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.dns?.close();
    for (const c of [...this.components].reverse()) await c.stop(5000);
    await this.cluster?.stop();
    // The containers' own output (controller, Envoys) for the suite's key check (test/run.ts).
    await keepLogFiles('node-pod-logs', d('pod-logs'));
    await cleanupNodeHost();
    await writeFile(IP_FORWARD, this.ipForwardWas).catch(() => undefined);
  }
}
