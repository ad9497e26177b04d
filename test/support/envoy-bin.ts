// The real Envoy binaries (test/envoybin, `make envoy-bin`): locating them,
// `--mode validate`, and short runs of a sidecar bootstrap on loopback.
import { type ChildProcess, spawn } from 'node:child_process';
import { access, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ADS_CLUSTER } from '../../pkg/injector/bootstrap.js';
import { isJsonObject as isObject, type Json } from '../../pkg/injector/pod.js';

// dist/test/support → repo root (the binaries are never copied into dist/).
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** The oldest supported Envoy and the newest (test/envoybin/fetch.sh). */
export const ENVOY_VERSIONS = ['1.36.2', '1.40.0'] as const;
export type EnvoyVersion = (typeof ENVOY_VERSIONS)[number];

/** The binary's path; rejects with how to get it when it is missing. */
export async function envoyBinary(version: EnvoyVersion): Promise<string> {
  const bin = path.join(repoRoot, 'test', 'envoybin', 'bin', `envoy-${version}`);
  try {
    await access(bin);
  } catch {
    throw new Error(`${bin} is missing: run \`make envoy-bin\``);
  }
  return bin;
}

// No hot restart: Envoy then creates no shared memory (/dev/shm/envoy_shared_memory_*),
// so parallel runs need no distinct --base-id and leave nothing behind.
const COMMON_ARGS = ['--disable-hot-restart'];

export interface EnvoyOutput {
  code: number | null;
  /** stdout and stderr, interleaved as they arrived. */
  output: string;
}

function collect(child: ChildProcess): { output: () => string; exited: Promise<number | null> } {
  let text = '';
  child.stdout?.on('data', (b: Buffer) => (text += b.toString('utf8')));
  child.stderr?.on('data', (b: Buffer) => (text += b.toString('utf8')));
  const exited = new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve(code));
  });
  return { output: () => text, exited };
}

/** `envoy --mode validate -c <config>`: parses and checks the bootstrap without opening sockets. */
export async function envoyValidate(version: EnvoyVersion, configPath: string): Promise<EnvoyOutput> {
  const child = spawn(await envoyBinary(version), [...COMMON_ARGS, '--mode', 'validate', '-c', configPath], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const c = collect(child);
  return { code: await c.exited, output: c.output() };
}

/** A running Envoy; stop() ends it (SIGTERM) and resolves with what it printed. */
export class EnvoyRun {
  private constructor(
    private readonly child: ChildProcess,
    private readonly out: { output: () => string; exited: Promise<number | null> },
    private readonly adminPath: string,
  ) {}

  static async start(
    version: EnvoyVersion,
    configPath: string,
    dir: string,
    logLevel = 'info',
  ): Promise<EnvoyRun> {
    const adminPath = path.join(dir, `admin-address-${process.pid}-${Date.now()}`);
    const child = spawn(
      await envoyBinary(version),
      [...COMMON_ARGS, '-c', configPath, '-l', logLevel, '--admin-address-path', adminPath],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    return new EnvoyRun(child, collect(child), adminPath);
  }

  output(): string {
    return this.out.output();
  }

  /** `host:port` of the admin interface, once Envoy has written it. */
  async adminAddress(timeoutMs = 10_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const text = await readFile(this.adminPath, 'utf8').catch(() => '');
      if (text.trim() !== '') return text.trim();
      if (this.child.exitCode !== null)
        throw new Error(`envoy exited (${this.child.exitCode}):\n${this.output()}`);
      if (Date.now() > deadline) throw new Error(`envoy wrote no admin address:\n${this.output()}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** GET on the admin interface. */
  async admin(pathAndQuery: string): Promise<string> {
    const res = await fetch(`http://${await this.adminAddress()}${pathAndQuery}`);
    const body = await res.text();
    if (!res.ok) throw new Error(`admin ${pathAndQuery}: ${res.status} ${body}`);
    return body;
  }

  async stop(): Promise<EnvoyOutput> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM');
    return { code: await this.out.exited, output: this.output() };
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
