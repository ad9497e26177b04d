// The real Envoy binaries (test/envoybin, `make envoy-bin`): the versions,
// locating them, `--mode validate`, running one (EnvoyProcess) and reading
// its /stats, and a sidecar bootstrap made to run on loopback.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { ADS_CLUSTER } from '../../pkg/injector/bootstrap.js';
import { isJsonObject as isObject, type Json } from '../../pkg/injector/pod.js';
import { recordChildLine } from './child-logs.js';
import { sleep } from './processes.js';

// dist/test/support → repo root (the binaries are never copied into dist/).
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const BIN_DIR = path.join(repoRoot, 'test', 'envoybin', 'bin');

/** The versions `make envoy-bin` fetches (test/envoybin/fetch.sh): the oldest supported and the newest. */
export const ENVOY_VERSIONS = ['1.36.2', '1.40.0'] as const;
export type EnvoyVersion = (typeof ENVOY_VERSIONS)[number];
export const [ENVOY_OLDEST, ENVOY_NEWEST] = ENVOY_VERSIONS;

const binPath = (version: string) => path.join(BIN_DIR, `envoy-${version}`);

/** Whether `make envoy-bin` has fetched this version (suites skip without it). */
export function hasEnvoy(version: string): boolean {
  return existsSync(binPath(version));
}

/** The binary's path; throws with how to get it when it is missing. */
export function envoyBinary(version: string): string {
  const bin = binPath(version);
  if (!existsSync(bin)) throw new Error(`${bin} is missing: run \`make envoy-bin\``);
  return bin;
}

export interface EnvoyOptions {
  /** `-l`; default info. */
  logLevel?: string;
  /** `--concurrency` (worker threads); Envoy's own default (one per core) when absent. */
  concurrency?: number;
  /** Run inside this network namespace (`ip netns exec`, which execs Envoy: signals reach it). */
  netns?: string;
}

export interface EnvoyOutput {
  code: number | null;
  /** stdout and stderr, interleaved as they arrived. */
  output: string;
}

/** A fresh temporary directory holding `json` as envoy.json (the extension tells Envoy it is JSON). */
async function configDir(json: string): Promise<{ dir: string; file: string }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'skein-envoy-'));
  const file = path.join(dir, 'envoy.json');
  await writeFile(file, json);
  return { dir, file };
}

// No hot restart: Envoy then creates no shared memory (/dev/shm/envoy_shared_memory_*),
// so parallel runs need no distinct --base-id and leave nothing behind.
function args(file: string, opts: EnvoyOptions): string[] {
  const concurrency = opts.concurrency === undefined ? [] : ['--concurrency', String(opts.concurrency)];
  return ['--disable-hot-restart', '-c', file, '-l', opts.logLevel ?? 'info', ...concurrency];
}

interface Spawned {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function spawnEnvoy(bin: string, argv: string[]): Spawned {
  const child = spawn(bin, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  // Buffers joined at the end: a character split across two chunks still decodes.
  const chunks: Buffer[] = [];
  child.stdout?.on('data', (b: Buffer) => chunks.push(b));
  child.stderr?.on('data', (b: Buffer) => chunks.push(b));
  for (const out of [child.stdout, child.stderr])
    if (out) createInterface({ input: out }).on('line', (line) => recordChildLine('envoy', line));
  const exited = new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve(code));
  });
  return { child, output: () => Buffer.concat(chunks).toString('utf8'), exited };
}

/** `envoy --mode validate` on a bootstrap (JSON text): parses and checks it without opening sockets. */
export async function envoyValidate(
  version: EnvoyVersion,
  json: string,
  opts: EnvoyOptions = {},
): Promise<EnvoyOutput> {
  const bin = envoyBinary(version);
  const { dir, file } = await configDir(json);
  try {
    const run = spawnEnvoy(bin, ['--mode', 'validate', ...args(file, opts)]);
    return { code: await run.exited, output: run.output() };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The admin path of /stats; `filter` is Envoy's (a regex on the name). */
export function envoyStatsPath(filter?: string): string {
  return `/stats${filter ? `?filter=${encodeURIComponent(filter)}` : ''}`;
}

/**
 * Envoy's counters and gauges in /stats text (`name: value` lines) by name;
 * histograms and text readouts, whose values are not integers, are left out.
 */
export function parseEnvoyStats(text: string): Map<string, number> {
  const stats = new Map<string, number>();
  for (const line of text.split('\n')) {
    // Greedy: a secret's name puts a colon in some stat names (…ssl.certificate.service-cert:ns/sa.…).
    const m = /^(.+): (\d+)$/.exec(line);
    if (m?.[1] && m[2]) stats.set(m[1], Number(m[2]));
  }
  return stats;
}

// Where Envoy writes its admin interface's address (--admin-address-path), next to the config.
const ADMIN_FILE = 'admin-address';

/** A running Envoy on a bootstrap of its own temporary directory; stop() ends it and removes that. */
export class EnvoyProcess {
  private address: string | undefined;

  private constructor(
    private readonly run: Spawned,
    private readonly dir: string,
  ) {}

  /**
   * Starts Envoy on `json` (a bootstrap as JSON text); resolves once spawned.
   * Its admin address is read from --admin-address-path, so the bootstrap may
   * give the admin interface port 0.
   */
  static async start(version: EnvoyVersion, json: string, opts: EnvoyOptions = {}): Promise<EnvoyProcess> {
    const bin = envoyBinary(version);
    const { dir, file } = await configDir(json);
    const argv = [...args(file, opts), '--admin-address-path', path.join(dir, ADMIN_FILE)];
    const run = opts.netns
      ? spawnEnvoy('ip', ['netns', 'exec', opts.netns, bin, ...argv])
      : spawnEnvoy(bin, argv);
    return new EnvoyProcess(run, dir);
  }

  private get gone(): boolean {
    return this.run.child.exitCode !== null || this.run.child.signalCode !== null;
  }

  output(): string {
    return this.run.output();
  }

  /** The Envoy process's id (its RSS and CPU time are read from /proc). */
  get pid(): number | undefined {
    return this.run.child.pid;
  }

  /** `host:port` of the admin interface, once Envoy has written it. */
  async adminAddress(timeoutMs = 10_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    while (this.address === undefined) {
      const text = (await readFile(path.join(this.dir, ADMIN_FILE), 'utf8').catch(() => '')).trim();
      if (text !== '') this.address = text;
      else if (this.gone)
        throw new Error(
          `envoy exited (${this.run.child.exitCode ?? this.run.child.signalCode}):\n${this.output()}`,
        );
      else if (Date.now() > deadline) throw new Error(`envoy wrote no admin address:\n${this.output()}`);
      else await sleep(50);
    }
    return this.address;
  }

  /** GET on the admin interface; rejects on a status other than 2xx. */
  async admin(pathAndQuery: string): Promise<string> {
    const res = await fetch(`http://${await this.adminAddress()}${pathAndQuery}`);
    const body = await res.text();
    if (!res.ok) throw new Error(`admin ${pathAndQuery}: ${res.status} ${body}`);
    return body;
  }

  /** Waits until /ready says LIVE (initialisation over, static listeners started). */
  async live(timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const address = await this.adminAddress(timeoutMs);
    while (Date.now() < deadline && !this.gone) {
      // /ready answers 503 with the state's name until then, and refuses connections at first.
      const state = await fetch(`http://${address}/ready`).then(
        (r) => r.text(),
        () => '',
      );
      if (state.trim() === 'LIVE') return;
      await sleep(50);
    }
    throw new Error(`Envoy did not become LIVE:\n${this.output().slice(-4000)}`);
  }

  /** Counters and gauges on /stats, by name (`filter` as for envoyStatsPath). */
  async stats(filter?: string): Promise<Map<string, number>> {
    return parseEnvoyStats(await this.admin(envoyStatsPath(filter)));
  }

  /** SIGTERM, SIGKILL if Envoy is still there 5 s later; may be called again. */
  async stop(): Promise<EnvoyOutput> {
    const { child, exited } = this.run;
    try {
      if (!this.gone) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited.finally(() => clearTimeout(timer));
      }
      return { code: await exited, output: this.output() };
    } finally {
      await rm(this.dir, { recursive: true, force: true });
    }
  }
}

/**
 * A copy of a sidecar bootstrap (JSON form) that runs on a test machine: the
 * admin interface and the static listeners on 127.0.0.1 with ports the kernel
 * picks, and the ADS cluster as plaintext to a local (stub) server. Node, ADS
 * config and overload manager are left as they are: those are what the runs check.
 */
export function loopbackBootstrap(bootstrap: Json, adsPort: number): Json {
  const b: Json = JSON.parse(JSON.stringify(bootstrap));
  if (!isObject(b)) throw new Error('not a bootstrap');
  const loopback = { socket_address: { address: '127.0.0.1', port_value: 0 } };
  if (isObject(b['admin'])) b['admin']['address'] = loopback;
  const statics = b['static_resources'];
  if (!isObject(statics)) throw new Error('bootstrap without static_resources');
  const listeners = statics['listeners'];
  if (Array.isArray(listeners)) for (const l of listeners) if (isObject(l)) l['address'] = loopback;
  const clusters = Array.isArray(statics['clusters']) ? statics['clusters'] : [];
  const ads = clusters.find((c) => isObject(c) && c['name'] === ADS_CLUSTER);
  if (!isObject(ads)) throw new Error(`bootstrap without cluster ${ADS_CLUSTER}`);
  delete ads['transport_socket'];
  ads['type'] = 'STATIC';
  ads['load_assignment'] = {
    cluster_name: ADS_CLUSTER,
    endpoints: [
      {
        lb_endpoints: [
          { endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: adsPort } } } },
        ],
      },
    ],
  };
  return b;
}
