import { access, cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventually } from './kube-registry-fixture.js';
import { freePorts, type JsonLineProcess, spawnNode } from './processes.js';

const distRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const repoRoot = path.resolve(distRoot, '..');
const controllerScript = path.join(distRoot, 'cmd', 'skein-controller', 'main.js');
const workloadScript = path.join(distRoot, 'test', 'apps', 'workload.js');

export interface LocalMeshPorts {
  ads: number;
  insecureAds: number;
  http: number;
}

/**
 * A controller in local mode on a private copy of a manifests directory, in
 * its own process, plus helpers to start proxyless workloads against it. The
 * example's workload ports (140xx) are remapped to free ports so several
 * meshes (test files, a running demo) never collide: grpc-js-xds servers bind
 * their port on every interface.
 */
export class LocalMesh {
  private readonly children: JsonLineProcess[] = [];
  private constructor(
    readonly dir: string,
    readonly stateDir: string,
    readonly controller: JsonLineProcess,
    readonly ports: LocalMeshPorts,
    private readonly portMap: Map<number, number>,
    private readonly root: string,
  ) {}

  static async start(
    opts: { example?: string; extraArgs?: string[]; prepare?: (dir: string) => Promise<void> } = {},
  ): Promise<LocalMesh> {
    const root = await mkdtemp(path.join(tmpdir(), 'skein-e2e-'));
    const dir = path.join(root, 'manifests');
    const stateDir = path.join(root, 'state');
    await cp(path.join(repoRoot, 'examples', opts.example ?? 'bookstore'), dir, { recursive: true });
    const portMap = await remapWorkloadPorts(dir);
    await opts.prepare?.(dir);
    const controller = spawnNode(
      'controller',
      controllerScript,
      [
        '--local',
        dir,
        '--state-dir',
        stateDir,
        '--host',
        '127.0.0.1',
        '--ads-port',
        '0',
        '--insecure-ads-port',
        '0',
        '--http-port',
        '0',
        '--min-push-interval',
        '50ms',
        ...(opts.extraArgs ?? []),
      ],
      { SKEIN_LOG_LEVEL: 'info' },
    );
    const ready = await controller.waitFor((l) => l['msg'] === 'skein controller ready', 20_000);
    const ports = {
      ads: Number(ready['ads']),
      insecureAds: Number(ready['insecureAds']),
      http: Number(ready['http']),
    };
    return new LocalMesh(dir, stateDir, controller, ports, portMap, root);
  }

  /** The port this mesh uses for a port written in the example (e.g. 14021). */
  port(examplePort: number): number {
    const p = this.portMap.get(examplePort);
    if (p === undefined) throw new Error(`port ${examplePort} is not a workload port of the example`);
    return p;
  }

  bootstrap(namespace: string, pod: string): string {
    return path.join(this.stateDir, 'bootstrap', namespace, `${pod}.json`);
  }

  /**
   * Starts a proxyless gRPC server for a pod on `ip:port` and waits until xDS
   * gave it its listener. `port` is an example port (remapped) or, with
   * `raw`, the port itself; `args` go to the workload (e.g. `--method`).
   */
  async startServer(
    namespace: string,
    pod: string,
    ip: string,
    port: number,
    raw = false,
    args: string[] = [],
  ): Promise<JsonLineProcess> {
    const p = spawnNode(
      `server ${pod}`,
      workloadScript,
      ['server', '--name', pod, '--listen', `${ip}:${raw ? port : this.port(port)}`, ...args],
      { GRPC_XDS_BOOTSTRAP: this.bootstrap(namespace, pod) },
    );
    this.children.push(p);
    await p.waitFor((l) => l['type'] === 'listening', 20_000);
    return p;
  }

  /** Starts a caller for a pod dialling `xds:///<host>:<servicePort>`. */
  startCaller(
    namespace: string,
    pod: string,
    host: string,
    servicePort: number,
    args: string[] = [],
  ): JsonLineProcess {
    const p = spawnNode(
      `caller ${pod}`,
      workloadScript,
      ['caller', '--target', `xds:///${host}:${servicePort}`, ...args],
      { GRPC_XDS_BOOTSTRAP: this.bootstrap(namespace, pod) },
    );
    this.children.push(p);
    return p;
  }

  /**
   * Adds another bookstore-v1 pod (`name`, at `ip`, proxy UUID ending in
   * `uuidSuffix`, on a free port), waits for its bootstrap and starts its
   * server with `args`. Returns the port it listens on.
   */
  async addBookstoreV1Endpoint(
    name: string,
    ip: string,
    uuidSuffix: string,
    args: string[] = [],
  ): Promise<number> {
    const [port] = await freePorts(1);
    if (port === undefined) throw new Error('no free port');
    await this.writeManifest(
      `${name}.yaml`,
      `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
  namespace: bookstore
  labels: { app: bookstore, version: v1, skein.dev/proxy-uuid: 00000000-0000-4000-8000-${uuidSuffix.padStart(12, '0')} }
spec:
  serviceAccountName: bookstore
  containers: [{ name: bookstore, ports: [{ name: grpc-api, containerPort: ${port} }] }]
status:
  phase: Running
  podIP: ${ip}
`,
    );
    await eventually(`${name} has a bootstrap`, async () => {
      await access(this.bootstrap('bookstore', name));
    });
    await this.startServer('bookstore', name, ip, port, true, args);
    return port;
  }

  async readManifest(file: string): Promise<string> {
    return readFile(path.join(this.dir, file), 'utf8');
  }

  /** Writes a manifest into the mesh directory (use `port()` for workload ports). */
  async writeManifest(file: string, text: string): Promise<void> {
    await writeFile(path.join(this.dir, file), text);
  }

  async removeManifest(file: string): Promise<void> {
    await rm(path.join(this.dir, file));
  }

  async stop(): Promise<void> {
    await Promise.all(this.children.map((c) => c.stop()));
    await this.controller.stop();
    await rm(this.root, { recursive: true, force: true });
  }
}

const WORKLOAD_PORT = /\b(140\d\d)\b/g;

async function remapWorkloadPorts(dir: string): Promise<Map<number, number>> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.yaml'));
  const texts = new Map(
    await Promise.all(files.map(async (f) => [f, await readFile(path.join(dir, f), 'utf8')] as const)),
  );
  const found = new Set<number>();
  for (const t of texts.values()) for (const m of t.matchAll(WORKLOAD_PORT)) found.add(Number(m[1]));
  const ports = await freePorts(found.size);
  const map = new Map([...found].map((p, i) => [p, ports[i] ?? 0]));
  for (const [f, t] of texts) {
    await writeFile(
      path.join(dir, f),
      t.replace(WORKLOAD_PORT, (m) => String(map.get(Number(m)) ?? m)),
    );
  }
  return map;
}

/** Sums the `stats` lines of a caller from line index `from` on. */
export function tally(
  p: JsonLineProcess,
  from = 0,
): { ok: Record<string, number>; errors: Record<string, number> } {
  const ok: Record<string, number> = {};
  const errors: Record<string, number> = {};
  for (const line of p.lines.slice(from)) {
    if (line['type'] !== 'stats') continue;
    for (const [k, v] of Object.entries((line['ok'] ?? {}) as Record<string, number>))
      ok[k] = (ok[k] ?? 0) + v;
    for (const [k, v] of Object.entries((line['errors'] ?? {}) as Record<string, number>))
      errors[k] = (errors[k] ?? 0) + v;
  }
  return { ok, errors };
}
