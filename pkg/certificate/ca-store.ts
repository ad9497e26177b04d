// Where skein's root CA is kept when it is not a pair of local files: a store
// several controller replicas share (in Kubernetes, a Secret). The first
// replica to start creates the root; every other one must load that same root,
// or proxies issued by one replica would not be trusted by the others.
import { BuiltinCA, type BuiltinCAOptions } from './builtin.js';

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
