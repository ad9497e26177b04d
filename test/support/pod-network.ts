// The pod network of the sidecar tests, standing in for a CNI plugin: a Linux
// bridge in the test's own address range, and per pod a network namespace with
// a veth pair on it. Needs root (CI runs as root).
//
// Addresses: the bridge holds `<prefix>.1` (it stands in for the node, and the
// controller listens there as if it were its Service IP); pods get `<prefix>.2`
// upward. Pods route only their own /24 and the cluster's Service range, both
// on-link: there is no default route, so a connection that escapes the
// sidecar (or a passthrough to a non-mesh address) fails inside the bridge
// instead of leaving this machine. The node does not forward (ip_forward is
// left as it is and nothing here enables it).
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);

/** Runs a command, failing with its stderr. */
export async function run(cmd: string, args: string[]): Promise<string> {
  try {
    const { stdout } = await exec(cmd, args, { maxBuffer: 16 * 1024 * 1024 });
    return stdout;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`${cmd} ${args.join(' ')}: ${e.stderr?.trim() || e.message}`);
  }
}

const NAME_PREFIX = 'sk';

/** Who owns each live network: `<dir>/<id>` holds the pid of the test process that made it. */
const OWNERS_DIR = path.join(tmpdir(), 'skein-pod-networks');

function ownerAlive(id: string): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(path.join(OWNERS_DIR, id), 'utf8'));
  } catch {
    return false;
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes bridges and namespaces an earlier run left behind (a killed test):
 * only names this file makes (`sk<hex>-…`), never those of a network whose
 * owning process lives (test files run in parallel: another suite's pod may be
 * between its namespace and its first process), and only when no process uses them.
 */
export async function sweepStaleNetworks(): Promise<void> {
  const ours = async () =>
    (await run('ip', ['netns', 'list']).catch(() => ''))
      .split('\n')
      .map((l) => l.split(' ')[0] ?? '')
      .filter((n) => /^sk[0-9a-f]{4}-/.test(n));
  for (const ns of await ours()) {
    if (ownerAlive(ns.slice(0, 6))) continue;
    const pids = await run('ip', ['netns', 'pids', ns]).catch(() => '');
    if (pids.trim() === '') await run('ip', ['netns', 'del', ns]).catch(() => undefined);
  }
  // A network whose namespaces are all gone is stale: its veth ends and its bridge go too.
  const live = new Set((await ours()).map((n) => n.slice(0, 6)));
  const links = await run('ip', ['-o', 'link', 'show']).catch(() => '');
  for (const m of links.matchAll(/^\d+: (sk[0-9a-f]{4})-(v\d+|br)[:@]/gm)) {
    if (m[1] && !live.has(m[1]) && !ownerAlive(m[1]))
      await run('ip', ['link', 'del', `${m[1]}-${m[2]}`]).catch(() => undefined);
  }
}

export interface PodInterface {
  /** The network namespace's name (`ip netns exec <netns> …`). */
  netns: string;
  /** The veth end on the bridge. */
  hostSide: string;
  ip: string;
}

export class PodNetwork {
  private nextHost = 2;
  private readonly pods = new Map<string, PodInterface>();

  private constructor(
    /** `sk<hex>`: every name this network makes starts with it. */
    readonly id: string,
    /** First three octets of the /24. */
    readonly prefix: string,
    readonly bridge: string,
    /** Routed on-link in every pod: the cluster's Service (ClusterIP) range. */
    private readonly serviceCidr: string,
  ) {}

  /** The bridge's address: the node as the pods see it. */
  get gatewayIp(): string {
    return `${this.prefix}.1`;
  }

  /**
   * Creates the bridge on a /24 of 10.213.0.0/16 that no route of this
   * machine covers yet.
   */
  static async create(serviceCidr: string): Promise<PodNetwork> {
    await sweepStaleNetworks();
    const id = `${NAME_PREFIX}${randomBytes(2).toString('hex')}`;
    const routes = await run('ip', ['-4', 'route', 'show', 'table', 'all']);
    let prefix = '';
    for (let tries = 0; tries < 50 && !prefix; tries++) {
      const candidate = `10.213.${1 + Math.floor(Math.random() * 250)}`;
      if (!routes.includes(`${candidate}.`)) prefix = candidate;
    }
    if (!prefix) throw new Error('no free /24 in 10.213.0.0/16 for the test pod network');
    const bridge = `${id}-br`;
    mkdirSync(OWNERS_DIR, { recursive: true });
    writeFileSync(path.join(OWNERS_DIR, id), String(process.pid));
    await run('ip', ['link', 'add', bridge, 'type', 'bridge']);
    await run('ip', ['addr', 'add', `${prefix}.1/24`, 'dev', bridge]);
    await run('ip', ['link', 'set', bridge, 'up']);
    return new PodNetwork(id, prefix, bridge, serviceCidr);
  }

  /** A namespace with lo up and eth0 on the bridge. */
  async addPod(key: string): Promise<PodInterface> {
    const existing = this.pods.get(key);
    if (existing) return existing;
    const n = this.nextHost++;
    if (n > 254) throw new Error('pod network full');
    const netns = `${this.id}-p${n}`;
    const hostSide = `${this.id}-v${n}`;
    const ip = `${this.prefix}.${n}`;
    await run('ip', ['netns', 'add', netns]);
    await run('ip', ['link', 'add', hostSide, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', netns]);
    await run('ip', ['link', 'set', hostSide, 'master', this.bridge, 'up']);
    const inNs = (...args: string[]) => run('ip', ['netns', 'exec', netns, 'ip', ...args]);
    await inNs('link', 'set', 'lo', 'up');
    await inNs('addr', 'add', `${ip}/24`, 'dev', 'eth0');
    await inNs('link', 'set', 'eth0', 'up');
    await inNs('route', 'add', this.serviceCidr, 'dev', 'eth0');
    const pod = { netns, hostSide, ip };
    this.pods.set(key, pod);
    return pod;
  }

  async removePod(key: string): Promise<void> {
    const pod = this.pods.get(key);
    if (!pod) return;
    this.pods.delete(key);
    // The pair goes first: a namespace lingers while the kernel still holds
    // sockets of it (FIN_WAIT, up to a minute), and its veth end with it.
    await run('ip', ['link', 'del', pod.hostSide]).catch(() => undefined);
    await run('ip', ['netns', 'del', pod.netns]).catch(() => undefined);
  }

  async destroy(): Promise<void> {
    for (const key of [...this.pods.keys()]) await this.removePod(key);
    await run('ip', ['link', 'del', this.bridge]).catch(() => undefined);
    rmSync(path.join(OWNERS_DIR, this.id), { force: true });
  }
}
