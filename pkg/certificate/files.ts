import { EventEmitter } from 'node:events';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../logger/logger.js';
import { type Identity, identityKey } from '../mesh/identity.js';
import { writeFileAtomic } from './builtin.js';
import type { CertificateManager } from './manager.js';
import type { IssuedCertificate } from './types.js';

export interface WorkloadCertPaths {
  dir: string;
  certFile: string;
  keyFile: string;
  caFile: string;
}

export interface WorkloadCertWriterOptions {
  manager: CertificateManager;
  /** Root of the per-identity folders, normally `workloadCertsDir(stateDir)`. */
  dir: string;
  logger: Logger;
  /** First retry delay after a failed write (default 1 s), doubling up to `retryMaxMs` (default 30 s). */
  retryInitialMs?: number;
  retryMaxMs?: number;
}

export interface WorkloadCertWriterEvents {
  /** The files of an identity now hold this certificate. */
  written: [identityKey: string, paths: WorkloadCertPaths, serialNumber: string];
}

/** `<stateDir>/workloads`: where local mode keeps workload certificate files. */
export function workloadCertsDir(stateDir: string): string {
  return join(stateDir, 'workloads');
}

// The names become path segments: refuse anything that could leave the folder.
function assertPathSegment(kind: string, value: string): void {
  if (value === '' || value === '.' || value === '..' || /[/\\\0]/.test(value)) {
    throw new Error(`${kind} ${JSON.stringify(value)} cannot name a certificate folder`);
  }
}

/**
 * What readWorkloadCert last found per certificate file, until the writer's
 * first write of that identity consumes it: the writer then need not read the
 * three files again to see that they already hold the adopted certificate.
 */
const foundOnDisk = new Map<string, { certPem: string; keyPem: string; caPem: string }>();

/** The three files of a folder, or undefined when one is missing or unreadable. */
async function readAll(
  paths: WorkloadCertPaths,
): Promise<{ certPem: string; keyPem: string; caPem: string } | undefined> {
  try {
    const [certPem, keyPem, caPem] = await Promise.all([
      readFile(paths.certFile, 'utf8'),
      readFile(paths.keyFile, 'utf8'),
      readFile(paths.caFile, 'utf8'),
    ]);
    return { certPem, keyPem, caPem };
  } catch {
    return undefined;
  }
}

/**
 * An identity's certificate as a previous run left it in `dir`, when its CA
 * file names `caPem`: for CertificateManager's `load`, which still checks the
 * signature, names, key and dates before adopting it.
 */
export async function readWorkloadCert(
  dir: string,
  identity: Identity,
  caPem: string,
): Promise<{ certPem: string; keyPem: string } | undefined> {
  const paths = WorkloadCertWriter.pathsFor(dir, identity);
  const files = await readAll(paths);
  if (files?.caPem !== caPem) return undefined;
  foundOnDisk.set(paths.certFile, files);
  return files;
}

interface Tracked {
  identity: Identity;
  paths: WorkloadCertPaths;
  writtenSerial?: string;
  /** Writes of one identity run one after another, so an older certificate never lands last. */
  chain: Promise<void>;
  failures: number;
  retry?: NodeJS.Timeout;
}

/**
 * Local mode: keeps `<dir>/<ns>/<sa>/{cert.pem,key.pem,ca.pem}` current for each
 * tracked identity, for workloads whose gRPC xDS `file_watcher` certificate
 * provider reads them. Each file is replaced atomically (temp file + rename).
 */
export class WorkloadCertWriter extends EventEmitter<WorkloadCertWriterEvents> {
  readonly #manager: CertificateManager;
  readonly #dir: string;
  readonly #log: Logger;
  readonly #retryInitialMs: number;
  readonly #retryMaxMs: number;
  readonly #tracked = new Map<string, Tracked>();
  #started = false;
  #lastWriteAt: number | undefined;

  constructor(opts: WorkloadCertWriterOptions) {
    super();
    this.#manager = opts.manager;
    this.#dir = opts.dir;
    this.#log = opts.logger;
    this.#retryInitialMs = opts.retryInitialMs ?? 1000;
    this.#retryMaxMs = opts.retryMaxMs ?? 30_000;
  }

  static pathsFor(dir: string, identity: Identity): WorkloadCertPaths {
    assertPathSegment('namespace', identity.namespace);
    assertPathSegment('service account', identity.serviceAccount);
    const folder = join(dir, identity.namespace, identity.serviceAccount);
    return {
      dir: folder,
      certFile: join(folder, 'cert.pem'),
      keyFile: join(folder, 'key.pem'),
      caFile: join(folder, 'ca.pem'),
    };
  }

  /** Follows the manager: every renewal of a tracked identity rewrites its files. */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    this.#manager.on('issued', this.#onIssued);
  }

  /**
   * Starts keeping an identity's files current and resolves once they hold a
   * valid certificate. On a write failure it rejects but keeps retrying.
   */
  async track(identity: Identity): Promise<WorkloadCertPaths> {
    const key = identityKey(identity);
    let tracked = this.#tracked.get(key);
    if (tracked === undefined) {
      tracked = {
        identity: { namespace: identity.namespace, serviceAccount: identity.serviceAccount },
        paths: WorkloadCertWriter.pathsFor(this.#dir, identity),
        chain: Promise.resolve(),
        failures: 0,
      };
      this.#tracked.set(key, tracked);
    }
    await this.#manager.ensure(identity);
    await this.#enqueue(key, tracked, true);
    return tracked.paths;
  }

  /** Stops rewriting an identity's files; the files stay (a workload may still be reading them). */
  untrack(identity: Identity): boolean {
    const key = identityKey(identity);
    const tracked = this.#tracked.get(key);
    if (tracked === undefined) return false;
    clearTimeout(tracked.retry);
    this.#tracked.delete(key);
    return true;
  }

  /** Tracked identities whose files do not hold the manager's current certificate yet. */
  unwritten(): number {
    let n = 0;
    for (const [key, tracked] of this.#tracked) {
      const cert = this.#manager.serviceCertificate(key);
      if (cert !== undefined && cert.serialNumber !== tracked.writtenSerial) n++;
    }
    return n;
  }

  /** Epoch ms of the last file write (a root rotation waits for file watchers to read it). */
  get lastWriteAt(): number | undefined {
    return this.#lastWriteAt;
  }

  /** Unsubscribes, cancels retries and waits for writes in progress. */
  async stop(): Promise<void> {
    this.#started = false;
    this.#manager.off('issued', this.#onIssued);
    const pending: Promise<void>[] = [];
    for (const tracked of this.#tracked.values()) {
      clearTimeout(tracked.retry);
      pending.push(tracked.chain);
    }
    this.#tracked.clear();
    await Promise.all(pending);
  }

  readonly #onIssued = (key: string, _cert: IssuedCertificate): void => {
    const tracked = this.#tracked.get(key);
    if (tracked === undefined) return;
    this.#enqueue(key, tracked, false).catch(() => {
      // Logged and retried by #enqueue; an event handler has no one to report to.
    });
  };

  /** Queues a write of whatever certificate the manager holds when the write runs. */
  #enqueue(key: string, tracked: Tracked, rethrow: boolean): Promise<void> {
    const run = tracked.chain.then(() => this.#write(key, tracked));
    tracked.chain = run.catch((err: unknown) => this.#failed(key, tracked, err));
    return rethrow ? run : tracked.chain;
  }

  async #write(key: string, tracked: Tracked): Promise<void> {
    if (this.#tracked.get(key) !== tracked) return;
    const cert = this.#manager.serviceCertificate(key);
    if (cert === undefined || cert.serialNumber === tracked.writtenSerial) return;
    const { paths } = tracked;
    // After a restart the files may already hold this certificate (adopted by the manager):
    // rewriting them would only create 3 new files per identity.
    if (tracked.writtenSerial === undefined) {
      const found = foundOnDisk.get(paths.certFile);
      foundOnDisk.delete(paths.certFile);
      const onDisk = found ?? (await readAll(paths));
      if (
        onDisk?.certPem === cert.certPem &&
        onDisk.keyPem === cert.keyPem &&
        onDisk.caPem === cert.caPem &&
        this.#tracked.get(key) === tracked
      ) {
        tracked.writtenSerial = cert.serialNumber;
        tracked.failures = 0;
        this.emit('written', key, paths, cert.serialNumber);
        return;
      }
    }
    await mkdir(paths.dir, { recursive: true, mode: 0o700 });
    // CA first, so a reader that picks up the new leaf already trusts its issuer; the key is
    // private to this user (0600).
    await writeFileAtomic(paths.caFile, cert.caPem, 0o644);
    await writeFileAtomic(paths.keyFile, cert.keyPem, 0o600);
    await writeFileAtomic(paths.certFile, cert.certPem, 0o644);
    tracked.writtenSerial = cert.serialNumber;
    tracked.failures = 0;
    this.#lastWriteAt = Date.now();
    this.#log.debug(
      { identity: key, serial: cert.serialNumber, dir: paths.dir },
      'wrote workload certificate',
    );
    this.emit('written', key, paths, cert.serialNumber);
  }

  #failed(key: string, tracked: Tracked, err: unknown): void {
    if (this.#tracked.get(key) !== tracked) return;
    tracked.failures += 1;
    const delay = Math.min(this.#retryInitialMs * 2 ** (tracked.failures - 1), this.#retryMaxMs);
    this.#log.error(
      { err, identity: key, dir: tracked.paths.dir, attempt: tracked.failures, retryInMs: delay },
      'writing workload certificate files failed',
    );
    clearTimeout(tracked.retry);
    tracked.retry = setTimeout(() => {
      tracked.retry = undefined;
      this.#enqueue(key, tracked, false).catch(() => {});
    }, delay);
    tracked.retry.unref();
  }
}
