// Garbage collection of the per-pod bootstrap Secrets the webhook creates.
// The pod's UID is unknown at admission, so the Secret cannot carry an
// ownerReference; and least privilege forbids reading Secrets. What the
// controller may do is list/watch pods (the registry already does) and delete
// Secrets, so it deletes `skein-bootstrap-<uuid>` by name once no pod carrying
// `skein.dev/proxy-uuid=<uuid>` exists any more: when the registry reports such
// a pod gone, and, for Secrets this replica created, once a grace period after
// admission finds no pod at all (a later admission plugin or the storage
// refused it, so the pod never existed).
import { ALWAYS_LEADER, type Leadership } from '../leader/leadership.js';
import type { Logger } from '../logger/logger.js';
import { LABEL_PROXY_UUID } from '../mesh/constants.js';
import type { Pod } from '../model/objects.js';
import { KubeApiError } from '../registry/kube/client.js';
import type { MeshStore, StoreEvent } from '../registry/store.js';
import { bootstrapSecretName } from './constants.js';

/** The two API calls the collector makes (Kubernetes in production, a fake in tests). */
export interface BootstrapSecretApi {
  /** Deletes a Secret by name. Rejects with KubeApiError (404 when already gone). */
  deleteSecret(namespace: string, name: string): Promise<void>;
  /** Whether any pod in the namespace carries `skein.dev/proxy-uuid=<uuid>` (a consistent list, not the cache). */
  podWithProxyUuidExists(namespace: string, proxyUuid: string): Promise<boolean>;
}

/** The part of KubeClient the Kubernetes adapter needs. */
export interface KubeRequestClient {
  request(
    method: string,
    path: string,
    options?: { query?: Record<string, string | number | boolean | undefined>; body?: unknown },
  ): Promise<unknown>;
}

/**
 * BootstrapSecretApi over the API server: DELETE one Secret (RBAC `delete
 * secrets`; nothing reads them) and a label-selected pod list (the registry's
 * `list pods`), limited to one item since only existence matters.
 */
export class KubeBootstrapSecretApi implements BootstrapSecretApi {
  constructor(private readonly client: KubeRequestClient) {}

  async deleteSecret(namespace: string, name: string): Promise<void> {
    // The API answers a DELETE with the deleted object; it is dropped unread.
    await this.client.request(
      'DELETE',
      `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${encodeURIComponent(name)}`,
    );
  }

  async podWithProxyUuidExists(namespace: string, proxyUuid: string): Promise<boolean> {
    // No resourceVersion: a consistent read, so a pod created a moment ago is seen.
    const list = await this.client.request(
      'GET',
      `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`,
      {
        query: { labelSelector: `${LABEL_PROXY_UUID}=${proxyUuid}`, limit: 1 },
      },
    );
    const items = typeof list === 'object' && list !== null && 'items' in list ? list.items : undefined;
    if (!Array.isArray(items)) throw new Error(`pod list in ${namespace}: no items`);
    return items.length > 0;
  }
}

// What the webhook puts in the label (crypto.randomUUID); anything else on a pod was written
// by someone else and names no Secret of ours.
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export interface BootstrapSecretGcOptions {
  store: MeshStore;
  api: BootstrapSecretApi;
  logger: Logger;
  /** How long after admission a Secret with no pod is an orphan (default 5 min; admissions time out far sooner). */
  orphanGraceMs?: number;
  /** Attempts per Secret before giving up (default 5). */
  maxAttempts?: number;
  /** First retry delay, doubled per attempt up to 60 s (default 1 s). */
  retryBaseMs?: number;
  /** Secrets handled at once (default 4); the rest wait in a queue. */
  concurrency?: number;
  /**
   * Pod deletions are seen by every replica; only the leader collects them. A follower
   * keeps the last ones (up to `followerBacklog`) and hands them to the queue when it
   * becomes leader (leadershipGained), so a deletion the old leader had not finished
   * is still collected. Secrets of this replica's own admissions are collected here
   * whatever the leadership: no other replica knows them. Default: always leader.
   */
  leadership?: Leadership;
  /** Pod deletions a follower remembers (default 10,000; oldest forgotten first). */
  followerBacklog?: number;
}

interface Job {
  namespace: string;
  proxyUuid: string;
  /** Why: shown in logs. */
  cause: string;
  attempt: number;
  /** A pod deletion every replica saw (leader's work), not this replica's own admission. */
  shared: boolean;
}

export const DEFAULT_ORPHAN_GRACE_MS = 5 * 60_000;

/**
 * Deletes a bootstrap Secret once no pod carrying its proxy UUID exists.
 * Never throws: a failure is logged, retried with backoff, then given up.
 */
export class BootstrapSecretGc {
  readonly #o: Required<Omit<BootstrapSecretGcOptions, 'store' | 'api' | 'logger' | 'leadership'>>;
  readonly #leadership: Leadership;
  /** A follower's pod deletions, `<ns>/<uuid>` → job, oldest first. */
  readonly #backlog = new Map<string, Job>();
  readonly #log: Logger;
  readonly #queue: Job[] = [];
  /** `<ns>/<uuid>` queued, running or waiting to retry: one job per Secret. */
  readonly #pending = new Set<string>();
  readonly #timers = new Set<NodeJS.Timeout>();
  readonly #running = new Set<Promise<void>>();
  #stopped = false;
  readonly #onChange = (e: StoreEvent) => this.#storeChanged(e);

  constructor(private readonly opts: BootstrapSecretGcOptions) {
    this.#o = {
      orphanGraceMs: opts.orphanGraceMs ?? DEFAULT_ORPHAN_GRACE_MS,
      maxAttempts: opts.maxAttempts ?? 5,
      retryBaseMs: opts.retryBaseMs ?? 1000,
      concurrency: opts.concurrency ?? 4,
      followerBacklog: opts.followerBacklog ?? 10_000,
    };
    this.#leadership = opts.leadership ?? ALWAYS_LEADER;
    this.#log = opts.logger.child({ component: 'bootstrap-secret-gc' });
  }

  start(): void {
    this.opts.store.on('change', this.#onChange);
  }

  /** The webhook created this Secret: collect it if no pod carries its UUID after the grace period. */
  created(namespace: string, proxyUuid: string): void {
    if (this.#stopped) return;
    this.#later(this.#o.orphanGraceMs, () =>
      this.#enqueue({
        namespace,
        proxyUuid,
        cause: 'admission without a stored pod',
        attempt: 1,
        shared: false,
      }),
    );
  }

  /** Stops listening, drops queued work and waits for calls in flight. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.opts.store.off('change', this.#onChange);
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    this.#queue.length = 0;
    await Promise.all(this.#running);
  }

  /** This replica became leader: the pod deletions it saw as a follower are collected now. */
  leadershipGained(): void {
    const jobs = [...this.#backlog.values()];
    this.#backlog.clear();
    for (const job of jobs) this.#enqueue(job);
  }

  /** Pod deletions remembered as a follower (tests and debugging). */
  get backlog(): number {
    return this.#backlog.size;
  }

  /** Secrets queued, running or waiting to retry (for tests and debugging). */
  get pending(): number {
    return this.#pending.size;
  }

  #storeChanged(e: StoreEvent): void {
    if (e.type !== 'deleted' || e.object.kind !== 'Pod') return;
    this.podDeleted(e.object);
  }

  /**
   * A pod carrying a proxy UUID is gone: collect its Secret. The store reports
   * the pods of monitored namespaces; others (the ingress gateway's, in the
   * control-plane namespace) come from their own watch.
   */
  podDeleted(pod: Pod): void {
    const proxyUuid = pod.metadata.labels?.[LABEL_PROXY_UUID];
    const namespace = pod.metadata.namespace;
    if (proxyUuid === undefined || namespace === undefined) return;
    // A store deletion is not always a pod deletion (its namespace left the mesh, an update made
    // it invalid): the job asks the API whether a pod still carries the UUID before deleting.
    this.#enqueue({ namespace, proxyUuid, cause: `pod ${pod.metadata.name} gone`, attempt: 1, shared: true });
  }

  #enqueue(job: Job): void {
    if (this.#stopped) return;
    if (!UUID.test(job.proxyUuid)) {
      this.#log.debug({ namespace: job.namespace, proxyUuid: job.proxyUuid }, 'not a proxy UUID; no Secret');
      return;
    }
    const id = `${job.namespace}/${job.proxyUuid}`;
    if (job.shared && !this.#leadership.isLeader) {
      this.#remember(id, job);
      return;
    }
    if (this.#pending.has(id)) return;
    this.#pending.add(id);
    this.#queue.push(job);
    this.#pump();
  }

  #pump(): void {
    while (!this.#stopped && this.#running.size < this.#o.concurrency) {
      const job = this.#queue.shift();
      if (!job) return;
      const run: Promise<void> = this.#run(job).finally(() => {
        this.#running.delete(run);
        this.#pump();
      });
      this.#running.add(run);
    }
  }

  #remember(id: string, job: Job): void {
    this.#backlog.delete(id);
    this.#backlog.set(id, job);
    while (this.#backlog.size > this.#o.followerBacklog) {
      const oldest = this.#backlog.keys().next().value;
      if (oldest === undefined) break;
      this.#backlog.delete(oldest);
    }
  }

  async #run(job: Job): Promise<void> {
    const id = `${job.namespace}/${job.proxyUuid}`;
    if (job.shared && !this.#leadership.isLeader) {
      // Leadership lost while it waited: the next leader collects it (it saw the deletion too).
      this.#pending.delete(id);
      this.#remember(id, job);
      return;
    }
    const name = bootstrapSecretName(job.proxyUuid);
    const fields = { namespace: job.namespace, secret: name, cause: job.cause, attempt: job.attempt };
    try {
      if (await this.opts.api.podWithProxyUuidExists(job.namespace, job.proxyUuid)) {
        this.#log.debug(fields, 'a pod still carries this proxy UUID; bootstrap Secret kept');
      } else {
        try {
          await this.opts.api.deleteSecret(job.namespace, name);
          this.#log.info(fields, 'bootstrap Secret deleted');
        } catch (err) {
          if (!(err instanceof KubeApiError && err.status === 404)) throw err;
          this.#log.debug(fields, 'bootstrap Secret already gone');
        }
      }
      this.#pending.delete(id);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      if (this.#stopped || job.attempt >= this.#o.maxAttempts) {
        this.#pending.delete(id);
        if (!this.#stopped)
          this.#log.warn({ ...fields, err: message }, 'bootstrap Secret not deleted; giving up');
        return;
      }
      const delay = Math.min(this.#o.retryBaseMs * 2 ** (job.attempt - 1), 60_000);
      this.#log.warn(
        { ...fields, err: message, retryInMs: delay },
        'bootstrap Secret not deleted; will retry',
      );
      // Still pending: a new event for the same Secret meanwhile is folded into this retry.
      this.#later(delay, () => {
        this.#queue.push({ ...job, attempt: job.attempt + 1 });
        this.#pump();
      });
    }
  }

  #later(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this.#timers.delete(t);
      fn();
    }, ms);
    // Pending collection never keeps the process alive.
    t.unref();
    this.#timers.add(t);
  }
}
