// Where skein's root CA is kept when it is not a pair of local files: a store
// several controller replicas share (in Kubernetes, a Secret). The first
// replica to start creates the root; every other one must load that same root,
// or proxies issued by one replica would not be trusted by the others.
import { createHash } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BuiltinCA, type BuiltinCAOptions, CA_CERT_FILE, CA_KEY_FILE, writeFileAtomic } from './builtin.js';
import { type CARecord, decodeRecord, encodeRecord } from './rotation.js';

export interface CAKeyPair {
  certPem: string;
  keyPem: string;
}

export interface CAStore {
  /** Names the store in messages, e.g. `Secret skein-system/skein-ca`. */
  readonly description: string;
  /** The stored pair; undefined when nothing is stored yet. Throws when something unusable is stored. */
  load(): Promise<CAKeyPair | undefined>;
  /** Stores the pair unless one exists; false when another writer got there first. */
  create(pair: CAKeyPair): Promise<boolean>;
}

/** A stored CA that cannot be used; never replaced automatically, since that would orphan every issued certificate. */
export class CAStoreError extends Error {
  override name = 'CAStoreError';
}

async function fromStored(store: CAStore, pair: CAKeyPair): Promise<BuiltinCA> {
  try {
    return await BuiltinCA.fromPem(pair.certPem, pair.keyPem);
  } catch (err) {
    throw new CAStoreError(
      `cannot use the CA in ${store.description}: ${err instanceof Error ? err.message : String(err)}; delete it to create a new CA (certificates issued by the old one stop being trusted)`,
    );
  }
}

/**
 * Loads the CA from `store`, creating it when the store is empty. Creation
 * races between replicas are settled by the store: a loser reads the winner's
 * root instead of keeping its own.
 */
export async function loadOrCreateCA(store: CAStore, opts: BuiltinCAOptions = {}): Promise<BuiltinCA> {
  const existing = await store.load();
  if (existing) return fromStored(store, existing);
  const ca = await BuiltinCA.create(opts);
  if (await store.create({ certPem: ca.rootCertPem, keyPem: ca.rootKeyPem })) return ca;
  const winner = await store.load();
  if (!winner) throw new Error(`${store.description} was created by another writer but cannot be read back`);
  return fromStored(store, winner);
}

/** The CA record and the version it was read at (a resourceVersion, or a digest of the local file). */
export interface VersionedRecord {
  record: CARecord;
  version: string;
}

/** Where the CA record lives: read by every replica, written by the leader and `skein ca rotate`. */
export interface CARecordStore {
  readonly description: string;
  /** Undefined when no CA exists yet. Throws CAStoreError when what is stored is unusable. */
  load(): Promise<VersionedRecord | undefined>;
  /** Writes the record if the store is still at `version`; false when someone wrote in between. */
  save(record: CARecord, version: string): Promise<boolean>;
}

/**
 * Local mode: `<dir>/rotation-state.json` holds the record's keys once a
 * rotation was ever asked for (one file, replaced atomically, so a crash
 * leaves one whole step); `ca.crt`/`ca.key` keep the root in force for
 * workloads and tools that read them. Before any rotation only the pair exists.
 */
export class LocalCARecordStore implements CARecordStore {
  readonly description: string;
  readonly #file: string;

  constructor(private readonly dir: string) {
    this.description = `${join(dir, LOCAL_STATE_FILE)}`;
    this.#file = join(dir, LOCAL_STATE_FILE);
  }

  async load(): Promise<VersionedRecord | undefined> {
    let text: string;
    try {
      text = await readFile(this.#file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      const ca = await BuiltinCA.loadOrCreate(this.dir);
      return { record: { active: { certPem: ca.rootCertPem, keyPem: ca.rootKeyPem } }, version: '' };
    }
    let data: Record<string, string>;
    try {
      data = JSON.parse(text) as Record<string, string>;
      return { record: decodeRecord(data, this.description), version: digest(text) };
    } catch (err) {
      throw new CAStoreError(`cannot use ${this.description}: ${(err as Error).message}`);
    }
  }

  async save(record: CARecord, version: string): Promise<boolean> {
    const current = await readFile(this.#file, 'utf8').catch(() => '');
    if ((current === '' ? '' : digest(current)) !== version) return false;
    const encoded = encodeRecord(record);
    for (const k of Object.keys(encoded)) if (encoded[k] === '') delete encoded[k];
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    await writeFileAtomic(this.#file, `${JSON.stringify(encoded, null, 2)}\n`, 0o600);
    // The pair follows the record; the record file decides if a crash falls in between.
    await writeFileAtomic(join(this.dir, CA_KEY_FILE), record.active.keyPem, 0o600);
    await writeFileAtomic(join(this.dir, CA_CERT_FILE), record.active.certPem, 0o644);
    return true;
  }
}

export const LOCAL_STATE_FILE = 'rotation-state.json';

function digest(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** Loads the record, creating a CA when the store has none (Kubernetes: through `pairs`, which settles races). */
export async function loadOrCreateRecord(records: CARecordStore, pairs?: CAStore): Promise<VersionedRecord> {
  const found = await records.load();
  if (found) return found;
  if (!pairs) throw new CAStoreError(`${records.description} holds no CA`);
  await loadOrCreateCA(pairs);
  const created = await records.load();
  if (!created) throw new Error(`${records.description} was created but cannot be read back`);
  return created;
}
