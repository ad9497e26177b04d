// The CA kept in a Kubernetes Secret (type Opaque, keys ca.crt and ca.key) in
// the control-plane namespace, so every controller replica signs with one root.
import { KubeApiError } from '../registry/kube/client.js';
import { CA_CERT_FILE, CA_KEY_FILE } from './builtin.js';
import {
  type CAKeyPair,
  type CARecordStore,
  type CAStore,
  CAStoreError,
  type VersionedRecord,
} from './ca-store.js';
import { type CARecord, decodeRecord, encodeRecord } from './rotation.js';

/** The part of KubeClient this store needs (a fake in tests). */
export interface KubeRequester {
  request(method: string, path: string, options?: { body?: unknown; contentType?: string }): Promise<unknown>;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The CA Secret by name: its description for messages, its paths, a GET that is undefined on 404. */
class KubeCASecret {
  readonly description: string;
  /** The namespace's Secrets collection. */
  protected readonly collection: string;
  /** The Secret itself. */
  protected readonly path: string;

  constructor(
    protected readonly client: KubeRequester,
    protected readonly namespace: string,
    protected readonly name: string,
  ) {
    this.description = `Secret ${namespace}/${name}`;
    this.collection = `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets`;
    this.path = `${this.collection}/${encodeURIComponent(name)}`;
  }

  /** POST or PUT the whole Secret with `data` (plain text, encoded here); false on 409 Conflict. */
  protected async write(
    method: 'POST' | 'PUT',
    path: string,
    data: Record<string, string>,
    resourceVersion?: string,
  ): Promise<boolean> {
    const encoded: Record<string, string> = {};
    for (const [k, v] of Object.entries(data)) encoded[k] = Buffer.from(v).toString('base64');
    const body = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: this.name,
        namespace: this.namespace,
        ...(resourceVersion !== undefined ? { resourceVersion } : {}),
        labels: { 'app.kubernetes.io/managed-by': 'skein', 'app.kubernetes.io/component': 'ca' },
      },
      type: 'Opaque',
      data: encoded,
    };
    try {
      await this.client.request(method, path, { body });
      return true;
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 409) return false;
      throw err;
    }
  }

  protected async get(): Promise<unknown> {
    try {
      return await this.client.request('GET', this.path);
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 404) return undefined;
      throw err;
    }
  }
}

export class KubeSecretCAStore extends KubeCASecret implements CAStore {
  async load(): Promise<CAKeyPair | undefined> {
    const secret = await this.get();
    if (secret === undefined) return undefined;
    const data = isRecord(secret) ? secret['data'] : undefined;
    const read = (key: string): string => {
      const v = isRecord(data) ? data[key] : undefined;
      if (typeof v !== 'string' || v === '')
        throw new CAStoreError(
          `${this.description} has no ${key}; delete it to create a new CA, or add the missing key`,
        );
      // Secret data is base64 (the API server's wire form of []byte).
      return Buffer.from(v, 'base64').toString('utf8');
    };
    return { certPem: read(CA_CERT_FILE), keyPem: read(CA_KEY_FILE) };
  }

  async create(pair: CAKeyPair): Promise<boolean> {
    // 409 AlreadyExists: another replica created it between our GET and POST.
    return this.write('POST', this.collection, { [CA_CERT_FILE]: pair.certPem, [CA_KEY_FILE]: pair.keyPem });
  }
}

/**
 * The whole CA record (rotation.ts) in the same Secret: `ca.crt`/`ca.key` in
 * force, `next.crt`/`next.key` and `rotation.json` during a rotation. Writes
 * carry the resourceVersion read, so two replicas (or the controller and
 * `skein ca rotate`) never overwrite each other's step: the loser reads again.
 */
export class KubeSecretCARecordStore extends KubeCASecret implements CARecordStore {
  async load(): Promise<VersionedRecord | undefined> {
    const secret = await this.get();
    if (secret === undefined) return undefined;
    const meta = isRecord(secret) && isRecord(secret['metadata']) ? secret['metadata'] : {};
    const data = isRecord(secret) && isRecord(secret['data']) ? secret['data'] : {};
    const decoded: Record<string, string> = {};
    for (const [k, v] of Object.entries(data))
      if (typeof v === 'string') decoded[k] = Buffer.from(v, 'base64').toString('utf8');
    try {
      return {
        record: decodeRecord(decoded, this.description),
        version: String(meta['resourceVersion'] ?? ''),
      };
    } catch (err) {
      throw new CAStoreError(`${(err as Error).message}; fix or delete it (deleting creates a new CA)`);
    }
  }

  async save(record: CARecord, version: string): Promise<boolean> {
    const data: Record<string, string> = {};
    for (const [k, v] of Object.entries(encodeRecord(record))) if (v !== '') data[k] = v;
    // PUT with the resourceVersion read: 409 Conflict when anyone wrote in between.
    return this.write('PUT', this.path, data, version);
  }
}
