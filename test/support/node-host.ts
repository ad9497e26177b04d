// What a test node leaves on the host, and how to remove it: the fixed paths,
// the bridge, the processes, mounts, network namespaces, cgroups and iptables
// chains of a kubelet + containerd run. `cleanupNodeHost()` runs before a node
// starts (a failed or killed earlier run leaves all of these) and after it stops.
//
// Only what this harness creates is touched: its own directory, its bridge,
// processes whose command line names its directory, cgroups under `kubepods`,
// containerd's `cni-*` network namespaces, and iptables chains named KUBE-*.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, readFile, readlink, rm, rmdir } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { sleep } from './processes.js';

const run = promisify(execFile);

/** Everything of the node lives here; fixed, so the next run finds a crashed run's leftovers. */
export const NODE_DIR = '/var/tmp/skein-node';
/** The node's bridge: the CNI plugin attaches pods to it, and it carries the node's address. */
export const NODE_BRIDGE = 'skein0';
/** The node's InternalIP, the bridge's address and the pods' gateway. */
export const NODE_IP = '10.88.0.1';
export const POD_CIDR = '10.88.0.0/16';
/** `<pid> <start time>` of the test process whose node this is; written at start. */
export const NODE_OWNER_FILE = path.join(NODE_DIR, 'owner.pid');

/** A process's start time in clock ticks since boot (/proc/<pid>/stat field 22), or undefined if it is gone. */
async function startTime(pid: number): Promise<string | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  // The command name (field 2) is in parentheses and may hold spaces: count fields after it.
  return stat?.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
}

/** What NODE_OWNER_FILE holds for this process. */
export async function nodeOwnerRecord(): Promise<string> {
  return `${process.pid} ${(await startTime(process.pid)) ?? ''}`.trim();
}

/**
 * Whether an owner record names a live process other than this one. A pid alone could
 * have been reused by an unrelated process since a crashed run wrote it, which would
 * block every later node, so the start time must match too when the record has one.
 */
export async function ownerRecordAlive(record: string): Promise<boolean> {
  const [pidText, recordedStart] = record.trim().split(' ');
  const owner = Number(pidText);
  if (!Number.isInteger(owner) || owner <= 0 || owner === process.pid) return false;
  const started = await startTime(owner);
  if (started === undefined) return false;
  return recordedStart === undefined || recordedStart === started;
}

/** Whether the node on this host belongs to a process that is still alive (not ours to clean up). */
export async function nodeOwnerAlive(): Promise<boolean> {
  return ownerRecordAlive(await readFile(NODE_OWNER_FILE, 'utf8').catch(() => ''));
}

/** Paths the kubelet writes outside --root-dir (device plugin sockets, container log links). */
const KUBELET_FIXED_DIRS = ['/var/lib/kubelet'];
const CONTAINER_LOG_LINKS = '/var/log/containers';
const NETNS_DIR = '/run/netns';

async function sh(cmd: string, args: string[]): Promise<string> {
  const { stdout } = await run(cmd, args, { maxBuffer: 64 * 1024 * 1024 });
  return stdout;
}

async function quiet(cmd: string, args: string[]): Promise<void> {
  await run(cmd, args).catch(() => undefined);
}

/** The bridge with the node's address; created before the API server binds that address. */
export async function createNodeBridge(): Promise<void> {
  await quiet('ip', ['link', 'del', NODE_BRIDGE]);
  await sh('ip', ['link', 'add', NODE_BRIDGE, 'type', 'bridge']);
  await sh('ip', ['addr', 'add', `${NODE_IP}/16`, 'dev', NODE_BRIDGE]);
  await sh('ip', ['link', 'set', NODE_BRIDGE, 'up']);
}

/** Pids whose command line, environment-free, mentions `needle`. */
async function pidsMentioning(needle: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes(needle)) pids.push(pid);
  }
  return pids;
}

/** Pids in a kubelet pod cgroup: every container process, wherever its shim went. */
async function podProcesses(): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    const cgroups = await readFile(`/proc/${pid}/cgroup`, 'utf8').catch(() => '');
    if (cgroups.includes('/kubepods')) pids.push(pid);
  }
  return pids;
}

function kill(pids: number[], signal: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}

/** Mount points at or below one of `roots`, deepest first (unmount order). */
async function mountsUnder(roots: string[]): Promise<string[]> {
  const text = await readFile('/proc/self/mountinfo', 'utf8');
  const points = text
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((p): p is string => p !== undefined)
    // mountinfo escapes spaces and such as octal; our paths have none.
    .filter((p) => roots.some((r) => p === r || p.startsWith(`${r}/`)));
  return [...new Set(points)].sort((a, b) => b.length - a.length);
}

/** Removes `dir`'s cgroup subtree, children first (rmdir only succeeds on empty cgroups). */
async function removeCgroupTree(dir: string): Promise<void> {
  let entries: import('node:fs').Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) if (e.isDirectory()) await removeCgroupTree(path.join(dir, e.name));
  await rmdir(dir).catch(() => undefined);
}

/** Every KUBE-* chain and the rules that jump to one, for one iptables binary (legacy or nft). */
async function removeKubeChains(iptables: 'iptables' | 'iptables-legacy'): Promise<void> {
  const save = `${iptables}-save`;
  let dump: string;
  try {
    dump = await sh(save, []);
  } catch {
    return; // that backend is not installed
  }
  if (!dump.includes('KUBE-')) return;
  // iptables-restore with --noflush would keep chains; rewrite each touched table whole.
  const out: string[] = [];
  for (const line of dump.split('\n')) {
    if (line.startsWith(':KUBE-')) continue;
    if (line.startsWith('-A') && line.includes('KUBE-')) continue;
    out.push(line);
  }
  await new Promise<void>((resolve, reject) => {
    const child = execFile(`${iptables}-restore`, [], (err) => (err ? reject(err) : resolve()));
    child.stdin?.end(out.join('\n'));
  });
}

/** The kubelet's nftables tables (kube-proxy's iptables mode also keeps canaries there). */
async function removeKubeNftTables(): Promise<void> {
  let tables: string;
  try {
    tables = await sh('nft', ['list', 'tables']);
  } catch {
    return;
  }
  for (const line of tables.split('\n')) {
    const [kw, family, name] = line.trim().split(/\s+/);
    if (kw === 'table' && family && name?.startsWith('kube'))
      await quiet('nft', ['delete', 'table', family, name]);
  }
}

/**
 * Removes everything a node run left on this host, running or crashed: its
 * processes, containers, mounts, network namespaces, cgroups, iptables chains,
 * bridge and files. Safe to call when nothing is left.
 */
export async function cleanupNodeHost(): Promise<void> {
  // Containers first (they hold mounts and namespaces), then the programs that would restart them.
  for (let round = 0; round < 2; round++) {
    const pids = [...(await podProcesses()), ...(await pidsMentioning(NODE_DIR))];
    if (pids.length === 0) break;
    kill(pids, round === 0 ? 'SIGTERM' : 'SIGKILL');
    await sleep(round === 0 ? 1000 : 300);
  }
  // SIGKILLed processes take a moment to be reaped; mounts and cgroups stay busy until then.
  for (let i = 0; i < 50; i++) {
    const left = [...(await podProcesses()), ...(await pidsMentioning(NODE_DIR))];
    if (left.length === 0) break;
    kill(left, 'SIGKILL');
    await sleep(100);
  }

  // containerd's CRI names pod network namespaces cni-<uuid>; `ip netns del` unmounts and unlinks.
  if (existsSync(NETNS_DIR))
    for (const ns of await readdir(NETNS_DIR))
      if (ns.startsWith('cni-')) await quiet('ip', ['netns', 'del', ns]);

  // mountinfo names /var/run paths by their real place, /run.
  for (const point of await mountsUnder([NODE_DIR, ...KUBELET_FIXED_DIRS, '/run/containerd']))
    await quiet('umount', ['-l', point]);

  for (const controller of await readdir('/sys/fs/cgroup').catch(() => [])) {
    await removeCgroupTree(path.join('/sys/fs/cgroup', controller, 'kubepods'));
    // containerd puts a container without a kubelet parent under /k8s.io (a crash mid-create).
    await removeCgroupTree(path.join('/sys/fs/cgroup', controller, 'k8s.io'));
  }

  await removeKubeChains('iptables');
  await removeKubeChains('iptables-legacy');
  await removeKubeNftTables();

  await quiet('ip', ['link', 'del', NODE_BRIDGE]);

  if (existsSync(CONTAINER_LOG_LINKS))
    for (const link of await readdir(CONTAINER_LOG_LINKS)) {
      const target = await readlink(path.join(CONTAINER_LOG_LINKS, link)).catch(() => '');
      if (target.startsWith(NODE_DIR)) await rm(path.join(CONTAINER_LOG_LINKS, link), { force: true });
    }
  for (const dir of [NODE_DIR, ...KUBELET_FIXED_DIRS]) await rm(dir, { recursive: true, force: true });
  // host-local IPAM and libcni keep results here unless told otherwise (ours: under NODE_DIR).
  await rm('/var/lib/cni/results', { recursive: true, force: true }).catch(() => undefined);
}

/** What of a node is still on the host; empty when cleanupNodeHost() did its job. */
export async function nodeHostLeftovers(): Promise<string[]> {
  const left: string[] = [];
  const procs = [...(await podProcesses()), ...(await pidsMentioning(NODE_DIR))];
  if (procs.length) left.push(`processes ${procs.join(', ')}`);
  const mounts = await mountsUnder([NODE_DIR, ...KUBELET_FIXED_DIRS]);
  if (mounts.length) left.push(`mounts ${mounts.join(', ')}`);
  for (const dir of [NODE_DIR, ...KUBELET_FIXED_DIRS]) if (existsSync(dir)) left.push(`directory ${dir}`);
  for (const controller of await readdir('/sys/fs/cgroup').catch(() => []))
    if (existsSync(path.join('/sys/fs/cgroup', controller, 'kubepods')))
      left.push(`cgroup ${controller}/kubepods`);
  const links = await sh('ip', ['-o', 'link', 'show']);
  if (links.includes(`${NODE_BRIDGE}:`)) left.push(`interface ${NODE_BRIDGE}`);
  if (existsSync(NETNS_DIR))
    for (const ns of await readdir(NETNS_DIR)) if (ns.startsWith('cni-')) left.push(`netns ${ns}`);
  for (const save of ['iptables-save', 'iptables-legacy-save']) {
    const dump = await sh(save, []).catch(() => '');
    if (dump.includes('KUBE-')) left.push(`${save}: KUBE-* chains`);
  }
  return left;
}
