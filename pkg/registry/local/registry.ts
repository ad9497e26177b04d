import { createHash } from 'node:crypto';
import { type FSWatcher, watch } from 'node:fs';
import path from 'node:path';
import type { Logger } from '../../logger/logger.js';
import { LABEL_MONITORED_BY } from '../../mesh/constants.js';
import { type AnyObject, OBJECT_KINDS, objectKey } from '../../model/objects.js';
import { LAST_VALID_IN_FORCE, type Problem, type ProblemReporter, type Registry } from '../registry.js';
import { MeshStore } from '../store.js';
import { SliceDeriver } from './endpoints.js';
import { type FileStamp, listManifestFiles, readInOrder, restampHinted } from './files.js';
import { type ParsedFile, parseManifests } from './manifests.js';

export interface LocalRegistryOptions {
  /** A directory of manifests (searched recursively), or one manifest file. */
  dir: string;
  store?: MeshStore;
  reporter: ProblemReporter;
  logger: Logger;
  meshName: string;
  /**
   * Rescan interval in ms. Default: 1000 when polling is all there is (no
   * fs.watch, or it failed), 10000 as a safety net behind a working fs.watch
   * (a rescan stats every manifest: ~50 ms of CPU at 2,600 files).
   */
  pollIntervalMs?: number;
  /** Quiet time after a file-system event before rescanning, in ms (default 50). */
  debounceMs?: number;
  /** Use fs.watch (default true); polling alone suits file systems without change events (NFS). */
  watch?: boolean;
}

interface FileState extends FileStamp {
  /** SHA-256 of the text: tells a touched file from an edited one without keeping its text. */
  digest: string;
  parsed: ParsedFile;
}

/** A sync request: which files to re-read even if their mtime and size look unchanged. */
type Hint = Set<string> | 'all';

const POLL_MS = 1000;
const WATCHED_POLL_MS = 10_000;

// A burst of events never postpones a rescan by more than this many debounce periods.
const MAX_DEBOUNCE_FACTOR = 10;

function idOf(o: AnyObject): string {
  return `${o.kind}|${objectKey(o)}`;
}

function label(o: AnyObject): string {
  return `${o.kind} ${objectKey(o)}`;
}

/**
 * LocalRegistry fills a MeshStore from a directory of Kubernetes-style manifests
 * and keeps it current as files change, applying only the difference. It plays
 * the EndpointSlice controller too: slices are derived from Pods and Services.
 */
export class LocalRegistry implements Registry {
  readonly store: MeshStore;
  private readonly dir: string;
  private readonly reporter: ProblemReporter;
  private readonly logger: Logger;
  private readonly meshName: string;
  /** Keeps derived slices across syncs: only Services whose pods changed are derived again. */
  private readonly slices = new SliceDeriver();
  private readonly pollIntervalMs: number | undefined;
  private readonly debounceMs: number;
  private readonly useFsWatch: boolean;

  private readonly files = new Map<string, FileState>();
  /** What this registry last put into the store, by `<kind>|<key>`. */
  private applied = new Map<string, AnyObject>();
  /** The file each object of `applied` came from (derived EndpointSlices have none). */
  private appliedOwner = new Map<string, string>();
  /** The problems last reported per file (JSON), so unchanged ones are not repeated. */
  private readonly reported = new Map<string, string>();
  /** Files that could not be read, with the error last reported (retried on every scan). */
  private readonly unreadable = new Map<string, string>();

  private watcher: FSWatcher | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  /** The next scan walks the whole tree (a poll), instead of stat-ing fs.watch's hints alone. */
  private walkNext = false;
  private debounceTimer: NodeJS.Timeout | undefined;
  private debounceStarted = 0;
  private pending: Hint | undefined;
  private pendingScan = false;
  private running: Promise<void> | undefined;
  private stopped = false;
  private isSynced = false;

  constructor(options: LocalRegistryOptions) {
    this.dir = path.normalize(options.dir);
    this.store = options.store ?? new MeshStore();
    this.reporter = options.reporter;
    this.logger = options.logger.child({ component: 'local-registry' });
    this.meshName = options.meshName;
    this.pollIntervalMs = options.pollIntervalMs;
    this.debounceMs = options.debounceMs ?? 50;
    this.useFsWatch = options.watch ?? true;
  }

  get synced(): boolean {
    return this.isSynced;
  }

  /** Loads every manifest, then watches; rejects when the directory cannot be read. */
  async start(): Promise<void> {
    this.stopped = false;
    // The initial load runs outside the watcher's error handling: a missing
    // directory must fail startup, not just log.
    await this.syncOnce('all');
    if (this.useFsWatch) this.startWatching();
    this.schedulePoll();
    this.isSynced = true;
    this.logMonitoredNamespaces();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.isSynced = false;
    this.watcher?.close();
    this.watcher = undefined;
    clearTimeout(this.pollTimer);
    clearTimeout(this.debounceTimer);
    this.pollTimer = undefined;
    this.debounceTimer = undefined;
    this.pending = undefined;
    this.pendingScan = false;
    await this.running;
  }

  /** Re-reads every file now (e.g. on SIGHUP); resolves when the store reflects them. */
  async refresh(): Promise<void> {
    this.requestSync('all');
    while (this.running) await this.running;
  }

  /** The next rescan: often when polling is the only source of changes, rarely behind a working fs.watch. */
  private schedulePoll(): void {
    if (this.stopped) return;
    const every = this.pollIntervalMs ?? (this.watcher ? WATCHED_POLL_MS : POLL_MS);
    this.pollTimer = setTimeout(() => {
      this.walkNext = true;
      this.requestSync(undefined);
      this.schedulePoll();
    }, every);
    // Polling alone should not keep a process alive.
    this.pollTimer.unref();
  }

  private startWatching(): void {
    try {
      this.watcher = watch(this.dir, { recursive: true }, (_event, filename) => {
        this.onFsEvent(filename === null ? undefined : path.join(this.dir, filename.toString()));
      });
      this.watcher.on('error', (err) => {
        this.logger.warn({ err }, 'file watch failed; relying on polling');
        this.watcher?.close();
        this.watcher = undefined;
        // Events may have been lost: rescan now, then poll at the polling-only pace.
        clearTimeout(this.pollTimer);
        this.walkNext = true;
        this.requestSync(undefined);
        this.schedulePoll();
      });
    } catch (err) {
      // E.g. the inotify watch limit: polling still sees every change, just later.
      this.logger.warn({ err }, 'cannot watch directory; relying on polling');
    }
  }

  private onFsEvent(file: string | undefined): void {
    if (this.stopped) return;
    // Watching a single file reports its base name only: re-read everything (it is one file).
    const single = this.files.size === 1 && this.files.has(this.dir);
    this.mergePending(file === undefined || single ? 'all' : new Set([file]));
    const now = Date.now();
    if (this.debounceTimer === undefined) this.debounceStarted = now;
    clearTimeout(this.debounceTimer);
    const waited = now - this.debounceStarted;
    const delay = waited >= this.debounceMs * MAX_DEBOUNCE_FACTOR ? 0 : this.debounceMs;
    this.debounceTimer = setTimeout(() => {
      this.debounceTimer = undefined;
      this.requestSync(undefined);
    }, delay);
  }

  // Records hints only: a scan starts when the debounce (or a poll) says so.
  private mergePending(hint: Hint): void {
    if (this.pending === 'all' || hint === 'all') this.pending = 'all';
    else this.pending = new Set([...(this.pending ?? []), ...hint]);
  }

  /** Queues a scan; one runs at a time, requests arriving meanwhile are coalesced into the next. */
  private requestSync(hint: Hint | undefined): void {
    if (this.stopped) return;
    if (hint) this.mergePending(hint);
    this.pendingScan = true;
    if (this.running) return;
    this.running = this.drain().finally(() => {
      this.running = undefined;
    });
  }

  private async drain(): Promise<void> {
    while (this.pendingScan && !this.stopped) {
      const hint = this.pending ?? new Set<string>();
      const walk = this.walkNext;
      this.pending = undefined;
      this.pendingScan = false;
      this.walkNext = false;
      try {
        await this.syncOnce(hint, walk);
      } catch (err) {
        // Never out of the watcher: keep the last good state and try again on the next poll.
        this.logger.error({ err, dir: this.dir }, 'cannot read manifests; keeping the last state');
      }
    }
  }

  /**
   * Reads what changed on disk, then applies the difference to the store.
   * Without `walk`, fs.watch's hints alone are stat-ed when they name manifest
   * files; the tree is walked otherwise (polls, 'all', directories).
   */
  private async syncOnce(hint: Hint, walk = true): Promise<void> {
    const hinted =
      !walk && hint !== 'all' && hint.size > 0 && !(this.files.size === 1 && this.files.has(this.dir))
        ? await restampHinted(this.dir, this.files, hint)
        : undefined;
    const stamps = hinted ?? (await listManifestFiles(this.dir));
    const reparsed = new Set<string>();
    let changed = false;
    const suspects: string[] = [];
    for (const [file, stamp] of stamps) {
      const old = this.files.get(file);
      const suspect =
        !old || old.mtimeMs !== stamp.mtimeMs || old.size !== stamp.size || hint === 'all' || hint.has(file);
      if (suspect) suspects.push(file);
    }
    // Before the first load completes nothing is served from this registry yet: read at full speed.
    for await (const read of readInOrder(suspects, { blocking: !this.isSynced })) {
      const file = read.file;
      const stamp = stamps.get(file);
      if (!stamp) continue;
      const old = this.files.get(file);
      if ('error' in read) {
        const err = read.error;
        if (err instanceof Error && 'code' in err && err.code === 'ENOENT') {
          stamps.delete(file);
          continue;
        }
        // Keep the file's last good objects (errors like EMFILE pass); report each new error once.
        const reason = `cannot read: ${err instanceof Error ? err.message : String(err)}`;
        if (this.unreadable.get(file) !== reason) this.reporter.report({ source: file, reason });
        this.unreadable.set(file, reason);
        continue;
      }
      const text = read.text;
      if (this.unreadable.delete(file) && !this.reported.has(file)) this.reporter.resolved?.(file);
      const digest = createHash('sha256').update(text).digest('base64');
      if (old && old.digest === digest) {
        this.files.set(file, { ...old, ...stamp });
        continue;
      }
      this.files.set(file, { ...stamp, digest, parsed: parseManifests(file, text) });
      reparsed.add(file);
      changed = true;
    }
    for (const file of [...this.files.keys()]) {
      if (!stamps.has(file)) {
        this.files.delete(file);
        changed = true;
      }
    }
    // Only a walk sees every file: an unreadable one a hint did not name is still there.
    if (!hinted)
      for (const file of [...this.unreadable.keys()]) if (!stamps.has(file)) this.unreadable.delete(file);
    if (changed) this.apply(reparsed);
  }

  /** Recomputes the desired objects from all files and writes only the differences. */
  private apply(reparsed: ReadonlySet<string>): void {
    const desired = new Map<string, AnyObject>();
    const owner = new Map<string, string>();
    const problems = new Map<string, Problem[]>();
    const sorted = [...this.files.keys()].sort();
    for (const file of sorted) {
      const state = this.files.get(file);
      if (!state) continue;
      const list = [...state.parsed.problems];
      for (const o of state.parsed.objects) {
        const id = idOf(o);
        const first = owner.get(id);
        if (first !== undefined) {
          list.push({
            source: file,
            kind: o.kind,
            namespace: o.metadata.namespace,
            name: o.metadata.name,
            reason: `duplicate of ${label(o)} in ${first}; the first one is used`,
          });
          continue;
        }
        desired.set(id, o);
        owner.set(id, file);
      }
      if (list.length > 0) problems.set(file, list);
    }
    for (const [file, list] of problems) this.keepLastValid(file, list, desired, owner);
    this.appliedOwner = owner;
    const services = [...desired.values()].filter((o) => o.kind === 'Service');
    const pods = [...desired.values()].filter((o) => o.kind === 'Pod');
    for (const slice of this.slices.derive(services, pods)) {
      const id = idOf(slice);
      // An explicit EndpointSlice manifest of the same name wins over the derived one.
      if (desired.has(id)) {
        this.logger.debug({ slice: objectKey(slice) }, 'explicit EndpointSlice replaces the derived one');
        continue;
      }
      desired.set(id, slice);
    }
    this.reportProblems(problems, reparsed);
    this.writeDifference(desired);
  }

  /**
   * An invalid edit must not remove what was working (as Kubernetes controllers
   * keep their last observed good state): an object a problem names keeps the
   * version this file last supplied, and a document that cannot be read at all
   * (a YAML syntax error: which objects it held is unknown) keeps every object
   * the file supplied before and supplies no more. Deleting the object from the
   * file, or the file, still deletes it. Rewrites the problems' reasons to say so.
   */
  private keepLastValid(
    file: string,
    list: Problem[],
    desired: Map<string, AnyObject>,
    owner: Map<string, string>,
  ): void {
    const keep = (id: string): boolean => {
      const last = this.applied.get(id);
      if (last === undefined || this.appliedOwner.get(id) !== file || desired.has(id)) return false;
      desired.set(id, last);
      owner.set(id, file);
      return true;
    };
    let unreadable = false;
    for (const [i, p] of list.entries()) {
      if (p.kind === undefined || p.name === undefined) {
        unreadable = true;
        continue;
      }
      const key = p.namespace ? `${p.namespace}/${p.name}` : p.name;
      if (keep(`${p.kind}|${key}`)) list[i] = { ...p, reason: p.reason + LAST_VALID_IN_FORCE };
    }
    if (!unreadable) return;
    const kept: string[] = [];
    for (const [id, f] of this.appliedOwner) if (f === file && keep(id)) kept.push(id.replace('|', ' '));
    if (kept.length === 0) return;
    for (const [i, p] of list.entries())
      if (p.kind === undefined || p.name === undefined)
        list[i] = {
          ...p,
          reason: `${p.reason}; the last valid versions of ${kept.join(', ')} stay in force`,
        };
  }

  private writeDifference(desired: Map<string, AnyObject>): void {
    // Kinds in dependency order (namespaces and services before what refers to
    // them); additions and updates before deletions, so a renamed file never
    // makes its objects blink out.
    const byKind = [...desired.values()].sort(
      (a, b) => OBJECT_KINDS.indexOf(a.kind) - OBJECT_KINDS.indexOf(b.kind),
    );
    for (const o of byKind) {
      if (this.applied.get(idOf(o)) !== o) this.store.upsert(o);
    }
    for (const [id, o] of this.applied) {
      if (!desired.has(id)) this.store.delete(o.kind, objectKey(o));
    }
    this.applied = desired;
  }

  private reportProblems(current: Map<string, Problem[]>, reparsed: ReadonlySet<string>): void {
    for (const file of [...this.reported.keys()]) {
      if (!current.has(file)) {
        this.reported.delete(file);
        this.reporter.resolved?.(file);
      }
    }
    for (const [file, list] of current) {
      const json = JSON.stringify(list);
      // Repeat a file's problems after every edit of it, else only when they changed.
      if (this.reported.get(file) === json && !reparsed.has(file)) continue;
      for (const p of list) this.reporter.report(p);
      this.reported.set(file, json);
    }
  }

  private logMonitoredNamespaces(): void {
    const monitored = this.store
      .list('Namespace')
      .filter((ns) => ns.metadata.labels?.[LABEL_MONITORED_BY] === this.meshName)
      .map((ns) => ns.metadata.name);
    const files = this.files.size;
    if (monitored.length === 0)
      this.logger.warn(
        { dir: this.dir, files, label: `${LABEL_MONITORED_BY}=${this.meshName}` },
        'no Namespace manifest carries the monitored-by label of this mesh: nothing is meshed',
      );
    else this.logger.info({ dir: this.dir, files, namespaces: monitored }, 'manifests loaded');
  }
}
