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

export class KubeSecretCAStore implements CAStore {
  readonly description: string;
  readonly #path: string;

  constructor(
    private readonly client: KubeRequester,
    private readonly namespace: string,
    private readonly name: string,
  ) {
    this.description = `Secret ${namespace}/${name}`;
    this.#path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets`;
  }

  async load(): Promise<CAKeyPair | undefined> {
    let secret: unknown;
    try {
      secret = await this.client.request('GET', `${this.#path}/${encodeURIComponent(this.name)}`);
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 404) return undefined;
      throw err;
    }
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
    const body = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: this.name,
        namespace: this.namespace,
        labels: { 'app.kubernetes.io/managed-by': 'skein', 'app.kubernetes.io/component': 'ca' },
      },
      type: 'Opaque',
      data: {
        [CA_CERT_FILE]: Buffer.from(pair.certPem).toString('base64'),
        [CA_KEY_FILE]: Buffer.from(pair.keyPem).toString('base64'),
      },
    };
    try {
      await this.client.request('POST', this.#path, { body });
      return true;
    } catch (err) {
      // 409 AlreadyExists: another replica created it between our GET and POST.
      if (err instanceof KubeApiError && err.status === 409) return false;
      throw err;
    }
  }
}

/**
 * The whole CA record (rotation.ts) in the same Secret: `ca.crt`/`ca.key` in
 * force, `next.crt`/`next.key` and `rotation.json` during a rotation. Writes
 * carry the resourceVersion read, so two replicas (or the controller and
 * `skein ca rotate`) never overwrite each other's step: the loser reads again.
 */
export class KubeSecretCARecordStore implements CARecordStore {
  readonly description: string;
  readonly #path: string;

  constructor(
    private readonly client: KubeRequester,
    private readonly namespace: string,
    private readonly name: string,
  ) {
    this.description = `Secret ${namespace}/${name}`;
    this.#path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${encodeURIComponent(name)}`;
  }

  async load(): Promise<VersionedRecord | undefined> {
    let secret: unknown;
    try {
      secret = await this.client.request('GET', this.#path);
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 404) return undefined;
      throw err;
    }
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
    for (const [k, v] of Object.entries(encodeRecord(record)))
      if (v !== '') data[k] = Buffer.from(v).toString('base64');
    // PUT with the resourceVersion read: 409 Conflict when anyone wrote in between.
    const body = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: this.name,
        namespace: this.namespace,
        resourceVersion: version,
        labels: { 'app.kubernetes.io/managed-by': 'skein', 'app.kubernetes.io/component': 'ca' },
      },
      type: 'Opaque',
      data,
    };
    try {
      await this.client.request('PUT', this.#path, { body });
      return true;
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 409) return false;
      throw err;
    }
  }
}
