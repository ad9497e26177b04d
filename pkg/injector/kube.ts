// The webhook's two Kubernetes dependencies: creating the per-pod bootstrap
// Secret and reading the pod's Namespace. Kept apart from webhook.ts so the
// webhook stays testable with fakes and this file stays small.
import type { Namespace } from '../model/objects.js';
import { KubeApiError } from '../registry/kube/client.js';
import type { BootstrapCredentialWriter } from './bootstrap-rotation.js';
import type { NamespaceLike, SecretManifest } from './mutate.js';
import type { NamespaceReader, SecretWriter } from './webhook.js';

/** The part of KubeClient the adapters need. */
export interface KubeRequester {
  request(method: string, path: string, options?: { body?: unknown; contentType?: string }): Promise<unknown>;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function stringMap(v: unknown): Record<string, string> | undefined {
  if (!isRecord(v)) return undefined;
  const out: Record<string, string> = {};
  for (const [k, val] of Object.entries(v)) if (typeof val === 'string') out[k] = val;
  return out;
}

/** Creates bootstrap Secrets through the API. */
export class KubeSecretWriter implements SecretWriter {
  constructor(private readonly client: KubeRequester) {}

  async create(secret: SecretManifest): Promise<void> {
    const ns = encodeURIComponent(secret.metadata.namespace);
    try {
      await this.client.request('POST', `/api/v1/namespaces/${ns}/secrets`, { body: secret });
    } catch (err) {
      // A retried admission (the API server retries on timeouts) may find its own Secret: the pod
      // then mounts exactly that one, so AlreadyExists is success, not a refusal.
      if (err instanceof KubeApiError && err.status === 409) return;
      throw err;
    }
  }
}

/**
 * Replaces keys of an existing bootstrap Secret by a JSON merge patch: the API
 * answers 404 for a Secret the garbage collector already deleted instead of
 * creating it again (RBAC `patch secrets`, narrowed by the chart's admission
 * policy to `skein-bootstrap-*` and its own Secrets).
 */
export class KubeBootstrapCredentialWriter implements BootstrapCredentialWriter {
  constructor(private readonly client: KubeRequester) {}

  async replace(namespace: string, name: string, data: Record<string, string>): Promise<void> {
    const encoded: Record<string, string> = {};
    for (const [k, v] of Object.entries(data)) encoded[k] = Buffer.from(v).toString('base64');
    await this.client.request(
      'PATCH',
      `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${encodeURIComponent(name)}`,
      { body: { data: encoded }, contentType: 'application/merge-patch+json' },
    );
  }
}

/**
 * Reads namespaces from the registry's store when it has them (monitored
 * namespaces, kept current by the watch: no API call per admission), else
 * from the API: an unmonitored namespace is not in the store, and a freshly
 * labelled one may not be there yet.
 */
export class StoreOrApiNamespaceReader implements NamespaceReader {
  constructor(
    private readonly fromStore: (name: string) => Namespace | undefined,
    private readonly client: KubeRequester,
  ) {}

  async get(name: string): Promise<NamespaceLike | undefined> {
    const cached = this.fromStore(name);
    if (cached) return cached;
    let ns: unknown;
    try {
      ns = await this.client.request('GET', `/api/v1/namespaces/${encodeURIComponent(name)}`);
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 404) return undefined;
      throw err;
    }
    const meta = isRecord(ns) ? ns['metadata'] : undefined;
    if (!isRecord(meta) || typeof meta['name'] !== 'string')
      throw new Error(`namespace ${name}: no metadata`);
    const labels = stringMap(meta['labels']);
    const annotations = stringMap(meta['annotations']);
    return {
      metadata: {
        name: meta['name'],
        ...(labels ? { labels } : {}),
        ...(annotations ? { annotations } : {}),
      },
    };
  }
}
