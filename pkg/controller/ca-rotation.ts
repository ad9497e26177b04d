// Drives a root CA rotation (pkg/certificate/rotation.ts) from the persisted
// record. Every replica re-reads the record each check and follows it (its CA
// swaps bundle and issuer as the stages move); only the leader begins a
// requested rotation and advances a stage, and only on evidence. After a
// restart the record says which stage runs, and the evidence is gathered
// again from scratch (Secrets and files rewritten once more is harmless).
// With several replicas every replica publishes its own evidence each check
// and the leader advances only when every live replica's report holds the
// stage too (replica-evidence.ts): each replica serves, and issues leaves
// for, only the proxies connected to it.
import { BuiltinCA } from '../certificate/builtin.js';
import { type CARecordStore, CAStoreError, type VersionedRecord } from '../certificate/ca-store.js';
import {
  combineEvidence,
  type ReplicaStatus,
  replicaStatus,
  reportOf,
  stageKey,
} from '../certificate/replica-evidence.js';
import type { ReplicaEvidenceBoard } from '../certificate/replica-reports.js';
import type { RotatingCA } from '../certificate/rotating-ca.js';
import {
  advance,
  beginRotation,
  type CARecord,
  pendingCount,
  type RotationStage,
  type RotationStatus,
  readyToAdvance,
  type StageEvidence,
} from '../certificate/rotation.js';
import { ALWAYS_LEADER, type Leadership } from '../leader/leadership.js';
import type { Logger } from '../logger/logger.js';

export interface RotationDriverOptions {
  store: CARecordStore;
  ca: RotatingCA;
  /** Version of the record `ca` was built from. */
  version: string;
  /** What the current stage's consumers hold now (see the controller's rotationEvidence). */
  evidence: (stage: RotationStage) => StageEvidence;
  /** Proxies connected to this replica (its report while no rotation runs). */
  connected?: () => number;
  /** Several replicas: where each publishes its evidence and reads the others' (replica-reports.ts). */
  replicas?: ReplicaEvidenceBoard;
  logger: Logger;
  leadership?: Leadership;
  /** Time for kubelet and file watchers to deliver the last write of a stage (default 90 s). */
  deliveryMs?: number;
  /** Between checks (default 1 s). */
  intervalMs?: number;
  now?: () => number;
}

/** While idle the leader reads the reports this often, to collect those of gone replicas. */
const IDLE_COLLECT_MS = 10_000;

export class RotationDriver {
  readonly #o: RotationDriverOptions;
  readonly #log: Logger;
  readonly #now: () => number;
  #version: string;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #stopped = true;
  #last: { evidence: StageEvidence; reason: string; replicas?: ReplicaStatus[] } | undefined;
  /** Monotonic ms the leader last read the reports while idle (it collects gone ones then). */
  #idleReadAt = Number.NEGATIVE_INFINITY;

  constructor(o: RotationDriverOptions) {
    this.#o = o;
    this.#log = o.logger.child({ component: 'ca-rotation' });
    this.#now = o.now ?? Date.now;
    this.#version = o.version;
  }

  get deliveryMs(): number {
    return this.#o.deliveryMs ?? 90_000;
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#schedule();
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  /** Resolves once no check runs (after stop(): nothing is published any more). */
  async settled(): Promise<void> {
    await this.#running;
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(
      () => void this.check().finally(() => this.#schedule()),
      this.#o.intervalMs ?? 1000,
    );
    this.#timer.unref();
  }

  /** One check: follow the stored record; as leader, begin or advance. Joins a check already running. */
  check(): Promise<void> {
    this.#running ??= this.#check()
      .catch((err: unknown) => this.#log.warn({ err }, 'root rotation check failed; retrying'))
      .finally(() => {
        this.#running = undefined;
      });
    return this.#running;
  }

  async #check(): Promise<void> {
    const stored = await this.#o.store.load();
    if (!stored) return;
    await this.#follow(stored);
    const leading = (this.#o.leadership ?? ALWAYS_LEADER).isLeader;
    const rec = stored.record;
    const stage = rec.rotation?.stage;
    const now = this.#now();
    const own: StageEvidence =
      stage === undefined
        ? { proxies: 0, leaves: 0, files: 0, connected: this.#o.connected?.() ?? 0 }
        : this.#o.evidence(stage);
    const ownVerdict =
      stage === undefined ? { ready: true, reason: '' } : readyToAdvance(own, now, this.deliveryMs);
    const combined = await this.#combine(stageKey(rec), own, ownVerdict, leading, now);
    if (!leading) return;
    if (rec.requested && !rec.rotation) return this.#begin(stored);
    if (stage === undefined) return;
    const evidence = combined.evidence;
    if (!combined.ready) return;
    const next = advance(rec, now);
    if (await this.#save(next, stored.version, `stage ${stage} complete`)) {
      this.#log.info(
        { stage, next: next.rotation?.stage ?? 'done', evidence },
        next.rotation
          ? `root rotation: stage ${stage} complete`
          : 'root rotation complete: the old root is retired',
      );
      this.#last = undefined;
    }
  }

  /**
   * Publishes this replica's evidence and, during a rotation (and on the
   * leader now and then while idle, to collect gone replicas), reads the
   * others': what status(), pending() and the leader's verdict show.
   */
  async #combine(
    key: string,
    own: StageEvidence,
    ownVerdict: { ready: boolean; reason: string },
    leading: boolean,
    now: number,
  ): Promise<{ evidence: StageEvidence; ready: boolean }> {
    const board = this.#o.replicas;
    const rotating = key !== 'idle';
    if (!board) {
      this.#last = rotating ? { evidence: own, reason: ownVerdict.reason } : undefined;
      return { evidence: own, ready: ownVerdict.ready };
    }
    const mine = reportOf(board.replica, key, own, ownVerdict, now);
    await board.publish(mine);
    if (!rotating) {
      this.#last = undefined;
      const at = performance.now();
      if (leading && at - this.#idleReadAt >= IDLE_COLLECT_MS) {
        this.#idleReadAt = at;
        await board.others({ collect: true });
      }
      return { evidence: own, ready: true };
    }
    const others = await board.others({ collect: leading });
    const c = combineEvidence(own, ownVerdict, others, key);
    this.#last = {
      evidence: c.evidence,
      reason: c.reason,
      replicas: [replicaStatus(mine, key, true), ...others.map((r) => replicaStatus(r, key, false))],
    };
    return c;
  }

  async #follow(stored: VersionedRecord): Promise<void> {
    if (stored.version === this.#version) return;
    try {
      await this.#o.ca.apply(stored.record);
      this.#version = stored.version;
    } catch (err) {
      // A root that cannot be used stays out; the CA keeps the last good record.
      throw new CAStoreError(`cannot follow ${this.#o.store.description}: ${(err as Error).message}`);
    }
  }

  /** A requested rotation begins: the user's root (checked) or a new one. */
  async #begin(stored: VersionedRecord): Promise<void> {
    const rec = stored.record;
    let next: CARecord['next'];
    try {
      const root = rec.next
        ? await BuiltinCA.fromPem(rec.next.certPem, rec.next.keyPem)
        : await BuiltinCA.create({ commonName: 'skein-ca' });
      next = { certPem: root.rootCertPem, keyPem: root.rootKeyPem };
      const begun = beginRotation({ active: rec.active }, next, this.#now());
      if (await this.#save(begun, stored.version, 'rotation begun'))
        this.#log.info(
          { byo: rec.next !== undefined },
          'root rotation begun: stage distribute (the new root joins every trust bundle)',
        );
    } catch (err) {
      const reason = `root rotation refused: ${(err as Error).message}`;
      this.#log.error({ store: this.#o.store.description }, reason);
      await this.#save({ active: rec.active, lastError: reason }, stored.version, 'refusal');
    }
  }

  async #save(rec: CARecord, version: string, what: string): Promise<boolean> {
    const saved = await this.#o.store.save(rec, version);
    if (!saved) {
      this.#log.info({ what }, 'CA record changed meanwhile; checking again');
      return false;
    }
    // Follow at once: the next check reads the record back with its new version anyway.
    await this.#o.ca.apply(rec);
    return true;
  }

  status(): RotationStatus {
    const rec = this.#o.ca.record;
    const out: RotationStatus = { stage: rec.rotation?.stage ?? 'idle', roots: this.#o.ca.roots() };
    if (rec.rotation) {
      out.startedAt = new Date(rec.rotation.startedAt).toISOString();
      out.stageSince = new Date(rec.rotation.stageSince).toISOString();
      const last = this.#last ?? { evidence: this.#o.evidence(rec.rotation.stage), reason: '' };
      out.pending = last.evidence;
      if (last.reason !== '') out.waitingFor = last.reason;
      if (this.#last?.replicas) out.replicas = this.#last.replicas;
    }
    if (rec.requested) out.requestedAt = new Date(rec.requested.at).toISOString();
    if (rec.lastError !== undefined) out.lastError = rec.lastError;
    return out;
  }

  /** Consumers still to reach the current stage (0 when idle): `skein_ca_rotation_pending`. */
  pending(): number {
    const stage = this.#o.ca.record.rotation?.stage;
    return stage === undefined ? 0 : pendingCount(this.#last?.evidence ?? this.#o.evidence(stage));
  }
}
