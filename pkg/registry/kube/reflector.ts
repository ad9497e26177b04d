import type { Logger } from '../../logger/logger.js';
import { Backoff, type BackoffOptions } from './backoff.js';
import { KubeApiError, type KubeClient } from './client.js';

export type RawObject = Record<string, unknown>;

/** Receives the changes of a reflector's cache, synchronously and in order. */
export interface ReflectorHandler<T> {
  /** An object appeared or changed; `old` is the previous cached value. */
  upsert(key: string, value: T, old: T | undefined): void;
  delete(key: string, old: T): void;
}

export interface ReflectorOptions<T> {
  /** For logs, e.g. `Pod`. */
  name: string;
  client: Pick<KubeClient, 'request' | 'watch'>;
  /** The collection path, e.g. `/api/v1/pods` (cluster-wide) or `/apis/g/v/namespaces/ns/things`. */
  path: string;
  /** Selectors sent with every list and watch (e.g. `fieldSelector: 'type=kubernetes.io/tls'`). */
  query?: Readonly<Record<string, string>>;
  /** Turns an API object into what the cache keeps; must not throw. */
  decode: (raw: RawObject) => T;
  handler: ReflectorHandler<T>;
  logger: Logger;
  /** Items per list page (`limit`), default 500 like client-go. */
  pageSize?: number;
  /** Server-side watch timeout, drawn uniformly from [min, max] seconds (default 300–600). */
  watchTimeoutSeconds?: readonly [number, number];
  /** A watch with no event or bookmark for this long is presumed dead (default 5 min). */
  idleTimeoutMs?: number;
  backoff?: BackoffOptions;
  /** A watch ending sooner than this without delivering anything counts as a failure (default 1 s). */
  minWatchMs?: number;
  /** Told each time the list+watch starts over, and why (e.g. for metrics); must not throw. */
  onRestart?: (reason: WatchRestartReason) => void;
}

/**
 * Why a reflector starts over: the server ended the watch at its timeout
 * (routine), the watched version expired (410 Gone: full relist), the watch
 * went silent, or a list or watch failed (retried after backoff).
 */
export type WatchRestartReason = 'timeout' | 'expired' | 'idle' | 'error';

/** Counters, for tests and debugging. */
export interface ReflectorStats {
  /** Completed full lists (the first one included). */
  lists: number;
  /** Watch requests sent. */
  watches: number;
  /** Relists caused by 410 Gone. */
  expired: number;
  /** Watches ended because they went silent. */
  idle: number;
  /** Failed lists and watches. */
  errors: number;
}

class IdleWatch extends Error {
  override name = 'IdleWatch';
}
class Stopped extends Error {
  override name = 'Stopped';
}
/** The server ended a watch with an ERROR event (other than 410): relist to be safe. */
class WatchStatusError extends Error {
  override name = 'WatchStatusError';
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function metaOf(raw: RawObject): { key: string; resourceVersion: string | undefined } | undefined {
  const m = raw['metadata'];
  if (!isRecord(m) || typeof m['name'] !== 'string') return undefined;
  const ns = typeof m['namespace'] === 'string' && m['namespace'] !== '' ? m['namespace'] : undefined;
  return {
    key: ns ? `${ns}/${m['name']}` : m['name'],
    resourceVersion: typeof m['resourceVersion'] === 'string' ? m['resourceVersion'] : undefined,
  };
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function isGone(err: unknown): boolean {
  return err instanceof KubeApiError && err.status === 410;
}

/**
 * List-then-watch for one resource type, kept alive for good, with a full
 * client-side cache of decoded objects. Written here rather than using
 * client-node's informer, which stops for good on any error but 410.
 *
 * - The first list pages with `limit`/`continue`; the watch starts from the
 *   list's resourceVersion with bookmarks and a jittered `timeoutSeconds`.
 * - 410 Gone (HTTP status or a watch ERROR event) → full relist; the cache is
 *   replaced so nothing stale survives (objects missing from the new list are
 *   deleted, like MeshStore.replaceAll).
 * - Any other failure → re-watch from the last seen resourceVersion after an
 *   exponential, jittered backoff (capped at 30 s); a watch the server resumes
 *   from that version replays every change in between, so nothing is lost.
 * - A watch that delivers neither event nor bookmark for `idleTimeoutMs` is
 *   aborted and re-opened (half-open TCP connections never error on their own).
 */
export class Reflector<T> {
  readonly name: string;
  readonly stats: ReflectorStats = { lists: 0, watches: 0, expired: 0, idle: 0, errors: 0 };
  private readonly opts: ReflectorOptions<T>;
  private readonly log: Logger;
  private readonly backoff: Backoff;
  private readonly items = new Map<string, { value: T; resourceVersion: string | undefined }>();
  private resourceVersion: string | undefined;
  private abort = new AbortController();
  private loop: Promise<void> | undefined;
  private stopped = true;
  private isSynced = false;
  private syncWaiters: { resolve: () => void; reject: (err: unknown) => void }[] = [];

  constructor(options: ReflectorOptions<T>) {
    this.opts = options;
    this.name = options.name;
    this.log = options.logger.child({ resource: options.name });
    this.backoff = new Backoff(options.backoff);
  }

  /** True once the first list completed; stays true across relists. */
  get synced(): boolean {
    return this.isSynced;
  }

  /** The last resourceVersion seen (list, event or bookmark). */
  get lastResourceVersion(): string | undefined {
    return this.resourceVersion;
  }

  /** The cached objects, by `<namespace>/<name>` (or `<name>`). */
  get cache(): ReadonlyMap<string, T> {
    return new Map([...this.items].map(([k, v]) => [k, v.value]));
  }

  get size(): number {
    return this.items.size;
  }

  values(): IterableIterator<T> {
    return (function* (items) {
      for (const v of items.values()) yield v.value;
    })(this.items);
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.abort = new AbortController();
    this.loop = this.run();
  }

  /** Resolves after the first list; rejects if the reflector is stopped before. */
  whenSynced(): Promise<void> {
    if (this.isSynced) return Promise.resolve();
    return new Promise((resolve, reject) => this.syncWaiters.push({ resolve, reject }));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort(new Stopped('reflector stopped'));
    for (const w of this.syncWaiters.splice(0)) w.reject(new Error(`${this.name}: stopped before sync`));
    await this.loop;
    this.loop = undefined;
  }

  private async run(): Promise<void> {
    let needList = true;
    while (!this.stopped) {
      try {
        if (needList) {
          await this.list();
          needList = false;
        }
        await this.watchOnce();
        if (!this.stopped) this.opts.onRestart?.('timeout');
      } catch (err) {
        if (this.stopped) return;
        this.stats.errors++;
        if (err instanceof IdleWatch) {
          this.stats.idle++;
          this.opts.onRestart?.('idle');
          this.log.warn({ idleMs: this.idleTimeoutMs }, 'watch went silent; reconnecting');
          continue;
        }
        if (isGone(err) && !needList) {
          // The resourceVersion we watched from was compacted away: only a
          // fresh list can tell what changed meanwhile.
          this.stats.expired++;
          this.opts.onRestart?.('expired');
          this.log.info({ resourceVersion: this.resourceVersion }, 'watch expired (410 Gone); relisting');
          needList = true;
          continue;
        }
        this.opts.onRestart?.('error');
        if (err instanceof WatchStatusError) needList = true;
        if (needList && err instanceof KubeApiError && err.status === 404) this.notServed();
        const delay = this.backoff.next();
        this.log.warn(
          { err: errorText(err), retryInMs: Math.round(delay), attempt: this.backoff.attempts },
          needList ? 'list failed' : 'watch failed',
        );
        try {
          await this.sleep(delay);
        } catch {
          return;
        }
      }
    }
  }

  private get idleTimeoutMs(): number {
    return this.opts.idleTimeoutMs ?? 300_000;
  }

  /** Lists every page, then replaces the cache with the result. */
  private async list(): Promise<void> {
    const signal = this.abort.signal;
    const raws: RawObject[] = [];
    let cont: string | undefined;
    let listVersion: string | undefined;
    do {
      const page = await this.opts.client.request('GET', this.opts.path, {
        query: { ...this.opts.query, limit: this.opts.pageSize ?? 500, continue: cont },
        signal,
      });
      if (!isRecord(page) || !isRecord(page['metadata']))
        throw new Error('list answer is not a Kubernetes list');
      const items = page['items'];
      if (items !== null && items !== undefined && !Array.isArray(items))
        throw new Error('list answer has no items array');
      for (const item of items ?? []) if (isRecord(item)) raws.push(item);
      const meta = page['metadata'];
      listVersion = typeof meta['resourceVersion'] === 'string' ? meta['resourceVersion'] : listVersion;
      cont = typeof meta['continue'] === 'string' && meta['continue'] !== '' ? meta['continue'] : undefined;
    } while (cont !== undefined);
    if (this.stopped) throw new Stopped('reflector stopped');
    this.replace(raws);
    this.resourceVersion = listVersion;
    this.stats.lists++;
    this.backoff.reset();
    this.log.debug({ items: raws.length, resourceVersion: listVersion }, 'listed');
    this.markSynced();
  }

  /**
   * The resource is not served (its CRD is not installed, or was removed):
   * there are none of these objects. Counts as synced so one missing CRD does
   * not hold up the whole mesh; the list is retried with backoff meanwhile.
   */
  private notServed(): void {
    if (this.items.size > 0 || !this.isSynced)
      this.log.warn(
        { path: this.opts.path },
        'resource not served (is its CRD installed?); treating as empty',
      );
    this.replace([]);
    this.markSynced();
  }

  private markSynced(): void {
    if (this.isSynced) return;
    this.isSynced = true;
    for (const w of this.syncWaiters.splice(0)) w.resolve();
  }

  private replace(raws: RawObject[]): void {
    const seen = new Set<string>();
    const fresh: RawObject[] = [];
    for (const raw of raws) {
      const meta = metaOf(raw);
      if (!meta) continue;
      seen.add(meta.key);
      fresh.push(raw);
    }
    for (const [key, old] of [...this.items]) {
      if (seen.has(key)) continue;
      this.items.delete(key);
      this.opts.handler.delete(key, old.value);
    }
    for (const raw of fresh) this.put(raw);
  }

  private put(raw: RawObject): void {
    const meta = metaOf(raw);
    if (!meta) return;
    const old = this.items.get(meta.key);
    // Same resourceVersion = same object: skip decoding (relists of big clusters).
    if (old && meta.resourceVersion !== undefined && old.resourceVersion === meta.resourceVersion) return;
    const value = this.opts.decode(raw);
    this.items.set(meta.key, { value, resourceVersion: meta.resourceVersion });
    this.opts.handler.upsert(meta.key, value, old?.value);
  }

  private remove(raw: RawObject): void {
    const meta = metaOf(raw);
    if (!meta) return;
    const old = this.items.get(meta.key);
    if (!old) return;
    this.items.delete(meta.key);
    this.opts.handler.delete(meta.key, old.value);
  }

  private watchTimeout(): number {
    const [min, max] = this.opts.watchTimeoutSeconds ?? [300, 600];
    return Math.round(min + Math.random() * (max - min));
  }

  /** One watch request; resolves when the server ends it, throws on anything else. */
  private async watchOnce(): Promise<void> {
    const watchAbort = new AbortController();
    // AbortSignal.any: aborted when the first of these is (a DOM API, not a TypeScript any).
    const signal = AbortSignal.any([this.abort.signal, watchAbort.signal]);
    let idleTimer: NodeJS.Timeout | undefined;
    const arm = () => {
      clearTimeout(idleTimer);
      idleTimer = setTimeout(
        () => watchAbort.abort(new IdleWatch(`no event for ${this.idleTimeoutMs} ms`)),
        this.idleTimeoutMs,
      );
    };
    const started = Date.now();
    let lines = 0;
    this.stats.watches++;
    arm();
    try {
      await this.opts.client.watch(
        this.opts.path,
        {
          ...this.opts.query,
          resourceVersion: this.resourceVersion,
          allowWatchBookmarks: true,
          timeoutSeconds: this.watchTimeout(),
        },
        {
          signal,
          onLine: (line) => {
            lines++;
            arm();
            this.onWatchEvent(line);
          },
        },
      );
    } catch (err) {
      // Report why we aborted, not the transport's generic abort error.
      if (watchAbort.signal.aborted && !this.abort.signal.aborted) throw watchAbort.signal.reason;
      throw err;
    } finally {
      clearTimeout(idleTimer);
    }
    const lasted = Date.now() - started;
    if (lines === 0 && lasted < (this.opts.minWatchMs ?? 1000))
      throw new Error(`watch ended after ${lasted} ms without any event`);
    this.backoff.reset();
  }

  private onWatchEvent(line: unknown): void {
    if (this.stopped) return;
    if (!isRecord(line) || typeof line['type'] !== 'string' || !isRecord(line['object']))
      throw new Error('malformed watch event');
    const object = line['object'];
    switch (line['type']) {
      case 'ADDED':
      case 'MODIFIED':
        this.put(object);
        break;
      case 'DELETED':
        this.remove(object);
        break;
      case 'BOOKMARK':
        break;
      case 'ERROR': {
        const code = typeof object['code'] === 'number' ? object['code'] : 0;
        const reason = typeof object['reason'] === 'string' ? object['reason'] : undefined;
        const message = typeof object['message'] === 'string' ? object['message'] : 'watch error';
        if (code === 410) throw new KubeApiError(410, reason, message);
        throw new WatchStatusError(`watch ERROR ${code}: ${message}`);
      }
      default:
        throw new Error(`unknown watch event type ${JSON.stringify(line['type'])}`);
    }
    // Bookmarks carry only metadata.resourceVersion; events carry the object's.
    const meta = object['metadata'];
    if (isRecord(meta) && typeof meta['resourceVersion'] === 'string' && meta['resourceVersion'] !== '')
      this.resourceVersion = meta['resourceVersion'];
  }

  private sleep(ms: number): Promise<void> {
    const signal = this.abort.signal;
    return new Promise((resolve, reject) => {
      if (signal.aborted) {
        reject(signal.reason);
        return;
      }
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}
