import type { Logger } from '../../logger/logger.js';
import { LABEL_MONITORED_BY } from '../../mesh/constants.js';
import { type AnyObject, OBJECT_KINDS, type ObjectKind } from '../../model/objects.js';
import { TokenBucket } from '../../ratelimit/token-bucket.js';
import { LAST_VALID_IN_FORCE, type ProblemReporter, type Registry } from '../registry.js';
import { MeshStore } from '../store.js';
import { validateManifest } from '../validate.js';
import type { BackoffOptions } from './backoff.js';
import { KubeClient } from './client.js';
import type { KubeConfig } from './kubeconfig.js';
import { type RawObject, Reflector, type ReflectorStats, type WatchRestartReason } from './reflector.js';
import { STATUS_KINDS, type StatusObject, storedAccepted } from './status.js';
import { type WatchedType, watchedTypes } from './types.js';

export interface KubeRegistryOptions {
  kubeConfig: KubeConfig;
  meshName: string;
  /** Where the MeshConfig lives; the only namespace whose MeshConfigs are read. */
  controlPlaneNamespace: string;
  store?: MeshStore;
  reporter: ProblemReporter;
  logger: Logger;
  /** Client-side rate limit of API requests, like client-go's defaults (5 QPS, burst 10). */
  qps?: number;
  burst?: number;
  /** A watch with no event or bookmark for this long is re-opened (default 5 min). */
  watchIdleTimeoutMs?: number;
  /** Server-side watch timeout range in seconds (default 300–600, jittered per watch). */
  watchTimeoutSeconds?: readonly [number, number];
  /** Items per list page (default 500). */
  pageSize?: number;
  /** Reconnect backoff (default 0.5 s doubling to 30 s, jittered). */
  backoff?: BackoffOptions;
  /** Per-request timeout in ms (default 30 s). */
  requestTimeoutMs?: number;
  /** Told when a type's list+watch starts over (`type` is the kind, e.g. `Pod`), e.g. for metrics. */
  onWatchRestart?: (type: string, reason: WatchRestartReason) => void;
}

/** What the cache keeps of one API object: the validated model object, or why it is unusable. */
interface Entry {
  kind: ObjectKind;
  namespace: string | undefined;
  name: string;
  apiVersion: string;
  uid: string | undefined;
  resourceVersion: string | undefined;
  /** metadata.generation: what a status condition's observedGeneration refers to. */
  generation: number;
  /** The Accepted condition stored now (kinds whose status skein writes). */
  accepted?: StatusObject['accepted'];
  object?: AnyObject;
  problem?: string;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** The ProblemReporter source of one API object. */
export function kubeSource(kind: string, namespace: string | undefined, name: string): string {
  return `kubernetes:${kind}/${namespace ? `${namespace}/` : ''}${name}`;
}

/**
 * KubeRegistry fills a MeshStore from the Kubernetes API: one resilient
 * list+watch per resource type (see reflector.ts), a full client-side cache
 * per type, and a MeshStore holding only what the mesh may see — objects in
 * namespaces labelled `skein.dev/monitored-by=<mesh>`, those Namespaces, and
 * the MeshConfig of the control-plane namespace. A namespace gaining the label
 * brings its cached objects into the store; losing it (or being deleted)
 * takes them out, so its services leave every proxy's config.
 *
 * Objects that fail skein's schemas or semantic checks are reported (once per
 * object version) and kept out of the store; only monitored namespaces'
 * objects are reported — others are none of skein's business.
 */
export class KubeRegistry implements Registry {
  readonly store: MeshStore;
  private readonly log: Logger;
  private readonly meshName: string;
  private readonly reporter: ProblemReporter;
  private readonly reflectors = new Map<ObjectKind, Reflector<Entry>>();
  private readonly types: readonly WatchedType[];
  /** Monitored namespace names, from the Namespace cache. */
  private readonly monitored = new Set<string>();
  /** What was last reported per object (`kind|key` → `uid|rv|reason`), to report each version once. */
  private readonly reported = new Map<string, string>();
  private running = false;

  constructor(options: KubeRegistryOptions) {
    this.store = options.store ?? new MeshStore();
    this.log = options.logger.child({ component: 'kube-registry' });
    this.meshName = options.meshName;
    this.reporter = options.reporter;
    const client = new KubeClient({
      kubeConfig: options.kubeConfig,
      limiter: new TokenBucket(options.qps ?? 5, options.burst ?? 10),
      ...(options.requestTimeoutMs !== undefined ? { requestTimeoutMs: options.requestTimeoutMs } : {}),
    });
    const common = {
      client,
      logger: this.log,
      ...(options.watchIdleTimeoutMs !== undefined ? { idleTimeoutMs: options.watchIdleTimeoutMs } : {}),
      ...(options.watchTimeoutSeconds ? { watchTimeoutSeconds: options.watchTimeoutSeconds } : {}),
      ...(options.pageSize !== undefined ? { pageSize: options.pageSize } : {}),
      ...(options.backoff ? { backoff: options.backoff } : {}),
    };
    const onWatchRestart = options.onWatchRestart;
    const restarts = (kind: string) =>
      onWatchRestart ? { onRestart: (reason: WatchRestartReason) => onWatchRestart(kind, reason) } : {};
    this.types = watchedTypes(options.controlPlaneNamespace);
    for (const type of this.types) {
      this.reflectors.set(
        type.kind,
        new Reflector<Entry>({
          ...common,
          name: type.kind,
          path: type.path,
          ...restarts(type.kind),
          decode: (raw) => decode(type, raw),
          handler: {
            upsert: (key, entry, old) => this.onUpsert(key, entry, old),
            delete: (key, old) => this.onDelete(key, old),
          },
        }),
      );
    }
  }

  get synced(): boolean {
    return this.running && [...this.allReflectors()].every((r) => r.synced);
  }

  /** Starts every list+watch; resolves once each type has completed its first list. */
  async start(): Promise<void> {
    this.running = true;
    for (const r of this.allReflectors()) r.start();
    await Promise.all([...this.allReflectors()].map((r) => r.whenSynced()));
    this.log.info(
      { namespaces: [...this.monitored].sort(), label: `${LABEL_MONITORED_BY}=${this.meshName}` },
      this.monitored.size === 0
        ? 'initial sync complete; no namespace carries the monitored-by label of this mesh'
        : 'initial sync complete',
    );
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all([...this.allReflectors()].map((r) => r.stop()));
  }

  /**
   * The objects whose status.conditions skein writes (status.ts): every SMI
   * object in a monitored namespace and the MeshConfig, valid or not, as the
   * cache has them now.
   */
  *statusObjects(): Iterable<StatusObject> {
    for (const type of this.types) {
      if (!STATUS_KINDS.includes(type.kind)) continue;
      const r = this.reflectors.get(type.kind);
      if (!r) continue;
      const plural = type.path.slice(type.path.lastIndexOf('/') + 1);
      for (const e of r.values()) {
        if (e.namespace === undefined || !this.inScope(e)) continue;
        const o: StatusObject = {
          kind: e.kind,
          apiVersion: e.apiVersion,
          plural,
          namespace: e.namespace,
          name: e.name,
          generation: e.generation,
        };
        if (e.accepted) o.accepted = e.accepted;
        yield o;
      }
    }
  }

  /** Per-type watch counters (lists, watches, 410 relists, idle restarts, errors). */
  stats(): Record<string, ReflectorStats> {
    const out: Record<string, ReflectorStats> = {};
    for (const r of this.allReflectors()) out[r.name] = { ...r.stats };
    return out;
  }

  private *allReflectors(): Generator<Reflector<Entry>> {
    yield* this.reflectors.values();
  }

  // ---- cache → store ---------------------------------------------------------

  private isMonitoredNamespace(e: Entry): boolean {
    return e.object?.metadata.labels?.[LABEL_MONITORED_BY] === this.meshName;
  }

  /** Whether skein looks at this object at all (report it, store it when valid). */
  private inScope(e: Entry): boolean {
    if (e.kind === 'MeshConfig') return true;
    if (e.kind === 'Namespace') return this.isMonitoredNamespace(e);
    return e.namespace !== undefined && this.monitored.has(e.namespace);
  }

  private onUpsert(key: string, entry: Entry, old: Entry | undefined): void {
    if (entry.kind === 'Namespace') {
      this.onNamespace(entry, old);
      return;
    }
    this.apply(key, entry);
  }

  private onDelete(key: string, old: Entry): void {
    if (old.kind === 'Namespace' && this.monitored.has(old.name)) {
      this.leave(old.name);
      return;
    }
    this.store.delete(old.kind, key);
    this.forget(old);
  }

  /** Writes one cached object's effect on the store: in when in scope and valid, else out. */
  private apply(key: string, e: Entry): void {
    if (!this.inScope(e)) {
      this.store.delete(e.kind, key);
      this.forget(e);
      return;
    }
    if (e.object) {
      this.store.upsert(e.object);
      this.forget(e);
      return;
    }
    // An invalid update keeps the last valid version in force (as controllers
    // keep their last observed good state): removing it would turn a typo in a
    // TrafficSplit into traffic spread over every backend, or take a pod's
    // endpoints away. The problem is reported until a valid version or a
    // deletion resolves it.
    const inForce = this.store.get(e.kind, key) !== undefined;
    this.reportProblem(e, inForce);
  }

  private onNamespace(entry: Entry, old: Entry | undefined): void {
    const name = entry.name;
    const now = this.isMonitoredNamespace(entry);
    const was = this.monitored.has(name);
    if (now && entry.object) {
      this.monitored.add(name);
      this.store.upsert(entry.object);
      if (!was) this.join(name);
    } else if (was) {
      this.leave(name);
    }
    if (!now && entry.problem && old?.problem !== entry.problem)
      this.log.debug({ namespace: name, reason: entry.problem }, 'namespace not usable');
  }

  /** A namespace joined: bring in its cached objects, in dependency order. */
  private join(ns: string): void {
    let count = 0;
    for (const kind of OBJECT_KINDS) {
      const r = this.reflectors.get(kind);
      if (!r || kind === 'Namespace') continue;
      for (const [key, e] of r.cache) {
        if (e.namespace !== ns) continue;
        this.apply(key, e);
        count++;
      }
    }
    this.log.info({ namespace: ns, objects: count }, 'namespace joined the mesh');
  }

  /** A namespace left (label removed or namespace deleted): take its objects out. */
  private leave(ns: string): void {
    this.monitored.delete(ns);
    let count = 0;
    for (const kind of [...OBJECT_KINDS].reverse()) {
      if (kind === 'Namespace' || kind === 'MeshConfig') continue;
      for (const key of this.store.keys(kind)) {
        if (!key.startsWith(`${ns}/`)) continue;
        this.store.delete(kind, key);
        count++;
      }
    }
    this.store.delete('Namespace', ns);
    for (const r of this.reflectors.values())
      for (const e of r.values()) if (e.namespace === ns && e.kind !== 'MeshConfig') this.forget(e);
    this.log.info({ namespace: ns, objects: count }, 'namespace left the mesh');
  }

  // ---- problems ---------------------------------------------------------------

  private reportProblem(e: Entry, lastValidInForce: boolean): void {
    const id = `${e.kind}|${e.namespace ?? ''}/${e.name}`;
    const stamp = `${e.uid ?? ''}|${e.resourceVersion ?? ''}|${e.problem ?? ''}|${lastValidInForce}`;
    if (this.reported.get(id) === stamp) return;
    this.reported.set(id, stamp);
    this.reporter.report({
      source: kubeSource(e.kind, e.namespace, e.name),
      kind: e.kind,
      ...(e.namespace !== undefined ? { namespace: e.namespace } : {}),
      name: e.name,
      reason: `${e.problem ?? 'invalid'}${lastValidInForce ? LAST_VALID_IN_FORCE : ''}`,
      apiVersion: e.apiVersion,
      ...(e.uid !== undefined ? { uid: e.uid } : {}),
      code: 'InvalidObject',
    });
  }

  private forget(e: Entry): void {
    const id = `${e.kind}|${e.namespace ?? ''}/${e.name}`;
    if (!this.reported.delete(id)) return;
    this.reporter.resolved?.(kubeSource(e.kind, e.namespace, e.name));
  }
}

/** Validates one API object into a cache entry (never throws). */
function decode(type: WatchedType, raw: RawObject): Entry {
  const meta = isRecord(raw['metadata']) ? raw['metadata'] : {};
  const entry: Entry = {
    kind: type.kind,
    namespace: str(meta['namespace']),
    name: str(meta['name']) ?? '',
    // List items of built-in kinds carry no apiVersion/kind; watch events do.
    apiVersion: type.apiVersion,
    uid: str(meta['uid']),
    resourceVersion: str(meta['resourceVersion']),
    generation: typeof meta['generation'] === 'number' ? meta['generation'] : 0,
  };
  if (STATUS_KINDS.includes(type.kind)) {
    const accepted = storedAccepted(raw['status']);
    if (accepted) entry.accepted = accepted;
  }
  const result = validateManifest(
    { ...raw, apiVersion: type.apiVersion, kind: type.kind },
    { unknownFields: 'prune' },
  );
  if (result.ok) {
    entry.object = result.object;
    // skein's own status writes (status.ts) are not news for the mesh: the store
    // holds what policy reads, so a status-only update leaves it unchanged.
    if (STATUS_KINDS.includes(type.kind) && 'status' in result.object) {
      const { status: _status, ...rest } = result.object as AnyObject & { status?: unknown };
      entry.object = rest as AnyObject;
    }
  } else entry.problem = result.reason;
  return entry;
}
