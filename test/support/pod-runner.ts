// A stand-in for the kubelet in the sidecar tests: it runs a Pod exactly as
// the real API server stored it after admission (so as skein's webhook
// mutated it), on this machine:
//
// - the pod's sandbox is a network namespace on the test bridge (PodNetwork);
// - Secret volumes are read from the API server and laid out as kubelet does
//   (`..<timestamp>/` holding the keys, `..data` pointing at it, one symlink
//   per key through `..data`), so an update is the same atomic `..data` swap;
// - init containers run to completion in order, then the containers start,
//   each in its own mount namespace with its volumes bind-mounted at their
//   mountPath and a private /dev/shm, as its securityContext's user;
// - probes run from the node (the root namespace) against the pod IP and the
//   ports in the stored spec (for a sidecar pod, the ports the webhook
//   rewrote), and the pod's status (Running, podIP, Ready) is written through
//   pods/status as kubelet would, which the EndpointSlice controller follows.
//
// The stand-ins, named: images are a table from image name to host programs
// (ImageStore); DNS is /etc/hosts, bound per namespace by `ip netns exec`
// from /etc/netns/<netns>/hosts (ip-netns(8)), with a resolver on the pod's
// own loopback that nothing answers, so lookups that miss /etc/hosts fail at
// once instead of waiting out c-ares timeouts.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readlink, rename, rm, rmdir, symlink, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { CoreV1Api } from '@kubernetes/client-node';
import { isJsonObject, type JsonObject } from '../../pkg/injector/pod.js';
import type { KubeClient } from '../../pkg/registry/kube/client.js';
import { envoyStatsPath, parseEnvoyStats } from './envoy-bin.js';
import { markPodRunning } from './kube.js';
import type { PodInterface, PodNetwork } from './pod-network.js';
import { JsonLineProcess, sleep } from './processes.js';

const execFileAsync = promisify(execFile);

/** Image name → how to run a command of it on this machine. */
export interface ImageStore {
  /** The host argv for `command` (the container's command + args) in `image`. */
  resolve(image: string, command: string[]): string[];
}

type Json = JsonObject[string];

function obj(v: Json | undefined): JsonObject {
  return isJsonObject(v) ? v : {};
}
function list(v: Json | undefined): JsonObject[] {
  return Array.isArray(v) ? v.filter(isJsonObject) : [];
}
function strings(v: Json | undefined): string[] {
  return Array.isArray(v) ? v.map(String) : [];
}

/** Single-quotes a word for /bin/sh. */
function sq(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

interface Probe {
  kind: 'readiness' | 'liveness' | 'startup';
  spec: JsonObject;
}

export interface ProbeRecord {
  container: string;
  kind: Probe['kind'];
  target: string;
  ok: boolean;
  detail: string;
}

const KUBELET_DIR_MODE = 0o755;

/** A Secret volume in kubelet's layout. */
class SecretVolume {
  private generation = 0;
  /** What the last write laid out, to swap only on a change as kubelet does. */
  private last = '';
  constructor(
    readonly dir: string,
    readonly secretName: string,
  ) {}

  /** Writes `data` as a new `..<ts>` dir and swaps `..data` to it in one rename. */
  async write(data: Record<string, string>): Promise<void> {
    const content = JSON.stringify(data);
    if (content === this.last) return;
    this.last = content;
    const stamp = `..${new Date().toISOString().replaceAll(/[-:.TZ]/g, '_')}${this.generation++}`;
    const target = path.join(this.dir, stamp);
    await mkdir(target, { mode: KUBELET_DIR_MODE });
    await chmod(target, KUBELET_DIR_MODE);
    for (const [k, v] of Object.entries(data)) await writeFile(path.join(target, k), v, { mode: 0o644 });
    let previous: string | undefined;
    try {
      previous = await readlink(path.join(this.dir, '..data'));
    } catch {
      previous = undefined;
    }
    const tmpLink = path.join(this.dir, '..data_tmp');
    await rm(tmpLink, { force: true });
    await symlink(stamp, tmpLink);
    await rename(tmpLink, path.join(this.dir, '..data'));
    for (const k of Object.keys(data)) {
      const link = path.join(this.dir, k);
      await rm(link, { force: true });
      await symlink(path.join('..data', k), link);
    }
    if (previous) await rm(path.join(this.dir, previous), { recursive: true, force: true });
  }
}

export interface PodRunnerOptions {
  api: KubeClient;
  core: CoreV1Api;
  network: PodNetwork;
  images: ImageStore;
  /** The /etc/hosts every pod sees (Service names → ClusterIPs, the controller → the node). */
  hosts: () => string;
  /**
   * Where the images' files live on this machine (the repository: dist/,
   * node_modules/, the fetched Envoy). Every container sees it bind-mounted
   * under the runner's world-readable directory and runs the ImageStore's
   * paths from there, as a container runs its image's files: a checkout in a
   * directory other users cannot enter (mktemp -d is 0700) must not keep the
   * app (uid 1000) or Envoy (uid 1500) from their programs.
   */
  imageFiles?: string;
  /**
   * How often each pod's Secret volumes are re-read and swapped when changed,
   * as kubelet's pod sync does (about a minute there; default 1 s here, so a
   * rotated bootstrap Secret reaches Envoy within the tests' time).
   */
  secretSyncMs?: number;
}

export class RunningPod {
  readonly containers = new Map<string, JsonLineProcess>();
  readonly probeLog: ProbeRecord[] = [];
  private readonly volumes = new Map<string, SecretVolume>();
  private readonly probeState = new Map<string, boolean>();
  private timers: NodeJS.Timeout[] = [];
  private reportedReady: boolean | undefined;
  private stopped = false;

  constructor(
    readonly namespace: string,
    readonly name: string,
    /** The Pod as the API server stored it. */
    readonly pod: JsonObject,
    readonly net: PodInterface,
    private readonly dir: string,
    private readonly o: PodRunnerOptions,
    private readonly mountPoints: Set<string>,
  ) {}

  get ip(): string {
    return this.net.ip;
  }

  private get spec(): JsonObject {
    return obj(this.pod['spec']);
  }

  private container(name: string, init = false): JsonObject {
    const c = list(this.spec[init ? 'initContainers' : 'containers']).find((x) => x['name'] === name);
    if (!c) throw new Error(`pod ${this.name} has no ${init ? 'init ' : ''}container ${name}`);
    return c;
  }

  /** runAsUser/runAsGroup of a container, else of the pod, else root (what an image without USER gives). */
  private user(c: JsonObject): { uid: number; gid: number } {
    const pod = obj(this.spec['securityContext']);
    const own = obj(c['securityContext']);
    const uid = Number(own['runAsUser'] ?? pod['runAsUser'] ?? 0);
    const gid = Number(own['runAsGroup'] ?? pod['runAsGroup'] ?? uid);
    return { uid, gid };
  }

  async mountVolumes(): Promise<void> {
    for (const v of list(this.spec['volumes'])) {
      const secret = obj(v['secret']);
      const secretName = secret['secretName'];
      if (typeof secretName !== 'string') continue;
      const dir = path.join(this.dir, 'volumes', String(v['name']));
      await mkdir(dir, { recursive: true, mode: KUBELET_DIR_MODE });
      const vol = new SecretVolume(dir, secretName);
      this.volumes.set(String(v['name']), vol);
      await vol.write(await this.readSecret(secretName));
    }
  }

  private async readSecret(name: string): Promise<Record<string, string>> {
    const s = obj(
      (await this.o.api.request('GET', `/api/v1/namespaces/${this.namespace}/secrets/${name}`)) as Json,
    );
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(obj(s['data']))) out[k] = Buffer.from(String(v), 'base64').toString();
    return out;
  }

  /** Re-reads a Secret volume's Secret and swaps it in, as kubelet's periodic sync does. */
  async refreshVolume(volume: string): Promise<void> {
    const vol = this.volumes.get(volume);
    if (!vol) throw new Error(`pod ${this.name} has no Secret volume ${volume}`);
    await vol.write(await this.readSecret(vol.secretName));
  }

  /** The shell line that enters a container's mounts and user, then execs argv. */
  private entry(c: JsonObject, argv: string[], user = this.user(c)): string[] {
    const mounts: string[] = ['mount -t tmpfs -o size=64m,mode=1777 tmpfs /dev/shm'];
    for (const m of list(c['volumeMounts'])) {
      const vol = this.volumes.get(String(m['name']));
      if (!vol) continue;
      const target = String(m['mountPath']);
      this.mountPoints.add(target);
      // The mount point is a host directory another test file's runner may have
      // removed meanwhile (see PodRunner.destroy): make it again if so.
      mounts.push(`mkdir -p ${sq(target)}`, `mount --bind ${sq(vol.dir)} ${sq(target)}`);
      if (m['readOnly'] === true) mounts.push(`mount -o remount,bind,ro ${sq(target)}`);
    }
    const files = this.o.imageFiles;
    const seen = path.join(path.dirname(this.dir), 'image');
    if (files !== undefined) mounts.push(`mount --bind ${sq(files)} ${sq(seen)}`);
    const run =
      files === undefined
        ? argv
        : argv.map((a) => (a.startsWith(`${files}/`) ? seen + a.slice(files.length) : a));
    const setpriv = ['setpriv', `--reuid=${user.uid}`, `--regid=${user.gid}`, '--clear-groups'];
    const script = `set -e; ${mounts.join('; ')}; exec ${[...setpriv, '--', ...run].map(sq).join(' ')}`;
    return ['ip', 'netns', 'exec', this.net.netns, '/bin/sh', '-c', script];
  }

  private env(c: JsonObject): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: '/tmp' };
    for (const e of list(c['env'])) if (typeof e['value'] === 'string') env[String(e['name'])] = e['value'];
    return env;
  }

  private argv(c: JsonObject): string[] {
    return this.o.images.resolve(String(c['image']), [...strings(c['command']), ...strings(c['args'])]);
  }

  private spawnIn(label: string, argv: string[], env: NodeJS.ProcessEnv, stdin = false): JsonLineProcess {
    const [cmd = '', ...args] = argv;
    const child: ChildProcess = spawn(cmd, args, { env, stdio: [stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
    return new JsonLineProcess(label, child);
  }

  async runInitContainers(): Promise<void> {
    for (const c of list(this.spec['initContainers'])) {
      const label = `${this.name}/${String(c['name'])}`;
      await this.mountInitVolumes(c);
      const p = this.spawnIn(label, this.entry(c, this.argv(c)), this.env(c));
      const code = await p.exited;
      if (code !== 0)
        throw new Error(`init container ${label} exited ${code}: ${p.stderr.slice(-10).join('\n')}`);
    }
  }

  private async mountInitVolumes(c: JsonObject): Promise<void> {
    for (const m of list(c['volumeMounts'])) await this.ensureMountPoint(String(m['mountPath']));
  }

  private async ensureMountPoint(target: string): Promise<void> {
    await mkdir(target, { recursive: true });
    this.mountPoints.add(target);
  }

  async startContainer(name: string): Promise<JsonLineProcess> {
    const c = this.container(name);
    for (const m of list(c['volumeMounts'])) await this.ensureMountPoint(String(m['mountPath']));
    const p = this.spawnIn(`${this.name}/${name}`, this.entry(c, this.argv(c)), this.env(c));
    this.containers.set(name, p);
    return p;
  }

  async stopContainer(name: string): Promise<void> {
    await this.containers.get(name)?.stop();
  }

  /** `kubectl exec -i`: runs argv in a container's namespaces and user, stdin open. */
  exec(container: string, argv: string[], stdin = false): JsonLineProcess {
    const c = this.container(container);
    return this.spawnIn(`${this.name}/${container} exec`, this.entry(c, argv), this.env(c), stdin);
  }

  /** `kubectl exec` for a command's output: runs argv in a container's namespaces and user. */
  async execText(container: string, argv: string[]): Promise<string> {
    const c = this.container(container);
    const [cmd = '', ...args] = this.entry(c, argv);
    try {
      const { stdout } = await execFileAsync(cmd, args, { env: this.env(c), maxBuffer: 64 * 1024 * 1024 });
      return stdout;
    } catch (err) {
      const e = err as { stderr?: string; message: string };
      throw new Error(`exec in ${this.name}/${container}: ${e.stderr?.trim() || e.message}`);
    }
  }

  /** GET on the Envoy admin interface (127.0.0.1:15000 inside the pod: only the pod reaches it). */
  envoyAdmin(pathAndQuery: string): Promise<string> {
    const script = `fetch('http://127.0.0.1:15000${pathAndQuery}').then(r=>r.text()).then(t=>process.stdout.write(t),e=>{console.error(String(e));process.exit(1)})`;
    return this.execText('envoy', [process.execPath, '-e', script]);
  }

  /** Envoy's counters and gauges as name → value. */
  async envoyStats(filter?: string): Promise<Map<string, number>> {
    return parseEnvoyStats(await this.envoyAdmin(envoyStatsPath(filter)));
  }

  /** Keeps Secret volumes current with their Secrets (kubelet's periodic sync). */
  startSecretSync(): void {
    if (this.volumes.size === 0) return;
    let busy = false;
    const sync = async () => {
      if (this.stopped || busy) return;
      busy = true;
      try {
        for (const v of this.volumes.values()) await v.write(await this.readSecret(v.secretName));
      } catch {
        // Kubelet keeps the last files when the API does not answer: so does this, until the next sync.
      } finally {
        busy = false;
      }
    };
    this.timers.push(setInterval(() => void sync(), this.o.secretSyncMs ?? 1_000));
  }

  startProbes(): void {
    for (const c of list(this.spec['containers'])) {
      const cname = String(c['name']);
      for (const kind of ['readiness', 'liveness', 'startup'] as const) {
        const spec = c[`${kind}Probe`];
        if (!isJsonObject(spec)) continue;
        const probe: Probe = { kind, spec };
        const periodMs = Number(spec['periodSeconds'] ?? 10) * 1000;
        const tick = async () => {
          if (this.stopped) return;
          const rec = await this.runProbe(cname, probe);
          this.probeLog.push(rec);
          if (this.probeLog.length > 500) this.probeLog.splice(0, 100);
          if (kind === 'readiness') {
            this.probeState.set(cname, rec.ok);
            await this.reportStatus();
          }
        };
        void tick();
        this.timers.push(setInterval(() => void tick(), periodMs));
      }
    }
    void this.reportStatus();
  }

  /** Ready once every container with a readiness probe passed its last one. */
  private ready(): boolean {
    return list(this.spec['containers']).every(
      (c) => !isJsonObject(c['readinessProbe']) || this.probeState.get(String(c['name'])) === true,
    );
  }

  private async reportStatus(): Promise<void> {
    const ready = this.ready();
    if (this.stopped || ready === this.reportedReady) return;
    this.reportedReady = ready;
    await markPodRunning(this.o.core, this.namespace, this.name, this.ip, ready);
  }

  private runProbe(container: string, p: Probe): Promise<ProbeRecord> {
    const timeoutMs = Number(p.spec['timeoutSeconds'] ?? 1) * 1000;
    const http = obj(p.spec['httpGet']);
    const tcp = obj(p.spec['tcpSocket']);
    const rec = (target: string, ok: boolean, detail: string): ProbeRecord => ({
      container,
      kind: p.kind,
      target,
      ok,
      detail,
    });
    if (http['port'] !== undefined) {
      // The stored spec after admission: numeric ports (the webhook resolves names it moves).
      const target = `${this.ip}:${Number(http['port'])}${String(http['path'] ?? '/')}`;
      return new Promise((resolve) => {
        const req = request(
          {
            host: this.ip,
            port: Number(http['port']),
            path: String(http['path'] ?? '/'),
            timeout: timeoutMs,
          },
          (res) => {
            res.resume();
            const code = res.statusCode ?? 0;
            // kubelet: 200 <= code < 400 is success.
            resolve(rec(target, code >= 200 && code < 400, `HTTP ${code}`));
          },
        );
        req.on('timeout', () => req.destroy(new Error('timeout')));
        req.on('error', (err) => resolve(rec(target, false, err.message)));
        req.end();
      });
    }
    if (tcp['port'] !== undefined) {
      const target = `${this.ip}:${Number(tcp['port'])}`;
      return new Promise((resolve) => {
        const s = connect({ host: this.ip, port: Number(tcp['port']), timeout: timeoutMs });
        s.on('connect', () => {
          s.destroy();
          resolve(rec(target, true, 'connected'));
        });
        s.on('timeout', () => {
          s.destroy();
          resolve(rec(target, false, 'timeout'));
        });
        s.on('error', (err) => resolve(rec(target, false, err.message)));
      });
    }
    return Promise.resolve(
      rec('-', false, `probe kind not supported by the test kubelet: ${JSON.stringify(p.spec)}`),
    );
  }

  async writeHosts(): Promise<void> {
    await writeFile(path.join('/etc/netns', this.net.netns, 'hosts'), this.o.hosts());
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    await Promise.all([...this.containers.values()].map((c) => c.stop()));
    await this.o.network.removePod(`${this.namespace}/${this.name}`);
    await rm(path.join('/etc/netns', this.net.netns), { recursive: true, force: true });
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** Which test processes run pods now: `<dir>/<pid>` per live PodRunner's process. */
const RUNNERS_DIR = path.join(tmpdir(), 'skein-pod-runners');
let runnersHere = 0;

function registerRunner(): void {
  mkdirSync(RUNNERS_DIR, { recursive: true });
  writeFileSync(path.join(RUNNERS_DIR, String(process.pid)), '');
  runnersHere++;
}

function releaseRunner(): void {
  if (runnersHere > 0 && --runnersHere === 0)
    rmSync(path.join(RUNNERS_DIR, String(process.pid)), { force: true });
}

function otherRunnersAlive(): boolean {
  let pids: string[];
  try {
    pids = readdirSync(RUNNERS_DIR);
  } catch {
    return false;
  }
  return pids.some((p) => {
    const pid = Number(p);
    if (!Number.isInteger(pid) || pid === process.pid) return false;
    try {
      process.kill(pid, 0);
      return true;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'EPERM';
    }
  });
}

/** Runs stored Pods; `destroy()` stops them all and removes what they left. */
export class PodRunner {
  readonly pods = new Map<string, RunningPod>();
  private readonly mountPoints = new Set<string>();
  private root = '';
  private rootReady: Promise<string> | undefined;

  constructor(private readonly o: PodRunnerOptions) {}

  /**
   * Reads the Pod from the API server and runs it: sandbox, volumes, init
   * containers, containers, probes. Resolves once the containers started
   * (not once Ready: see waitReady).
   */
  async run(namespace: string, name: string): Promise<RunningPod> {
    // One directory for every pod, made once even when pods start together.
    this.rootReady ??= (async () => {
      const root = await mkdtemp(path.join(tmpdir(), 'skein-pods-'));
      // Containers run as other users and must reach their volumes.
      await chmod(root, KUBELET_DIR_MODE);
      await mkdir(path.join(root, 'image'), { mode: KUBELET_DIR_MODE });
      registerRunner();
      this.root = root;
      return root;
    })();
    await this.rootReady;
    const pod = obj(
      (await this.o.api.request('GET', `/api/v1/namespaces/${namespace}/pods/${name}`)) as Json,
    );
    const net = await this.o.network.addPod(`${namespace}/${name}`);
    const dir = path.join(this.root, `${namespace}_${name}`);
    await mkdir(dir, { mode: KUBELET_DIR_MODE });
    await chmod(dir, KUBELET_DIR_MODE);
    const etc = path.join('/etc/netns', net.netns);
    await mkdir(etc, { recursive: true });
    // Nothing listens on the pod's own loopback port 53: a lookup /etc/hosts misses fails at once.
    await writeFile(path.join(etc, 'resolv.conf'), 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n');
    const running = new RunningPod(namespace, name, pod, net, dir, this.o, this.mountPoints);
    this.pods.set(`${namespace}/${name}`, running);
    await running.writeHosts();
    await running.mountVolumes();
    await running.runInitContainers();
    for (const c of list(obj(pod['spec'])['containers'])) await running.startContainer(String(c['name']));
    running.startProbes();
    running.startSecretSync();
    return running;
  }

  /** Rewrites every pod's /etc/hosts (after a Service was added). */
  async refreshHosts(): Promise<void> {
    for (const p of this.pods.values()) await p.writeHosts();
  }

  async remove(namespace: string, name: string): Promise<void> {
    const key = `${namespace}/${name}`;
    await this.pods.get(key)?.stop();
    this.pods.delete(key);
  }

  async destroy(): Promise<void> {
    for (const p of [...this.pods.values()]) await p.stop();
    this.pods.clear();
    // Mount points made on the host for the pods' volumes (e.g. /etc/skein):
    // removed when empty, and only when no other test process runs pods.
    // Removing a directory that is a mount point in another mount namespace
    // detaches that mount there (mount_namespaces(7), Linux ≥ 3.18), so doing
    // it under a parallel suite's live Envoy would take its certificates away.
    if (this.root) releaseRunner();
    if (runnersHere === 0 && !otherRunnersAlive())
      for (const m of this.mountPoints) await rmdir(m).catch(() => undefined);
    if (this.root) await rm(this.root, { recursive: true, force: true });
  }
}

/** Polls until `pred` holds; throws with `what` after `ms`. */
export async function until(
  what: string,
  pred: () => Promise<boolean> | boolean,
  ms = 20_000,
): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await pred()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms: ${what}`);
    await sleep(200);
  }
}
