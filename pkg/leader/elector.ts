// Leader election with a coordination.k8s.io/v1 Lease, with client-go's semantics
// (k8s.io/client-go/tools/leaderelection): a candidate takes the Lease when it is
// free or its holder has not renewed it for leaseDuration *as observed locally*
// (never by comparing the record's renewTime with our clock, so clock skew between
// replicas does not matter); the leader renews every retryPeriod and stops acting
// as leader once it has not renewed for renewDeadline, which is shorter than
// leaseDuration, so a partitioned leader steps down before anyone else may take
// over. On graceful shutdown the leader releases the Lease (holder cleared,
// duration 1 s), so a successor takes over within one retry period.
//
// Only the singleton work follows leadership (caBundle upkeep, Events, status,
// Secret collection); every replica serves xDS and admissions.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from '../logger/logger.js';
import { KubeApiError, type KubeClient } from '../registry/kube/client.js';

export interface ElectorOptions {
  client: KubeClient;
  namespace: string;
  /** The Lease's name. */
  name: string;
  /** Unique per replica; default `<POD_NAME or hostname>_<uuid>` (client-go's choice). */
  identity?: string;
  /** How long a non-renewed Lease keeps others out (default 15 s, client-go's default). */
  leaseDurationMs?: number;
  /** How long the leader keeps acting without a successful renewal (default 10 s). */
  renewDeadlineMs?: number;
  /** Between attempts to acquire or renew (default 2 s; jittered ×1.2 while acquiring). */
  retryPeriodMs?: number;
  logger: Logger;
  /** Called when this replica becomes leader. */
  onStartedLeading?: () => void;
  /** Called when it stops (lost the Lease, could not renew, or released it). */
  onStoppedLeading?: (why: string) => void;
}

/** The Lease spec fields the election reads and writes. */
interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

interface LeaseObject {
  metadata: { name: string; namespace?: string; resourceVersion?: string };
  spec?: LeaseSpec;
}

/** Kubernetes MicroTime: RFC 3339 with microseconds. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

function sameRecord(a: LeaseSpec | undefined, b: LeaseSpec | undefined): boolean {
  return (
    a?.holderIdentity === b?.holderIdentity &&
    a?.renewTime === b?.renewTime &&
    a?.acquireTime === b?.acquireTime &&
    a?.leaseTransitions === b?.leaseTransitions &&
    a?.leaseDurationSeconds === b?.leaseDurationSeconds
  );
}

/**
 * One replica's candidacy. `start()` campaigns until `stop()`; `isLeader` says
 * whether singleton work may run right now.
 */
export class LeaseElector {
  readonly identity: string;
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly path: string;
  private observed: LeaseSpec | undefined;
  /** Local monotonic time (ms) when `observed` last changed. */
  private observedAt = 0;
  /** Local monotonic time of the start of our last successful acquire or renew. */
  private renewedAt = 0;
  private leading = false;
  private stopped = true;
  private timer: NodeJS.Timeout | undefined;
  private watchdog: NodeJS.Timeout | undefined;
  private attempt: Promise<void> = Promise.resolve();

  constructor(private readonly o: ElectorOptions) {
    this.identity = o.identity ?? `${process.env['POD_NAME'] || hostname()}_${randomUUID()}`;
    this.leaseDurationMs = o.leaseDurationMs ?? 15_000;
    this.renewDeadlineMs = o.renewDeadlineMs ?? 10_000;
    this.retryPeriodMs = o.retryPeriodMs ?? 2_000;
    // client-go's validation: the leader must give up before the Lease can be taken over.
    if (!(this.renewDeadlineMs < this.leaseDurationMs))
      throw new Error('leader election: the renew deadline must be shorter than the lease duration');
    if (!(this.retryPeriodMs * 1.2 < this.renewDeadlineMs))
      throw new Error(
        'leader election: the retry period (×1.2 jitter) must be shorter than the renew deadline',
      );
    this.path = `/apis/coordination.k8s.io/v1/namespaces/${o.namespace}/leases/${o.name}`;
  }

  get isLeader(): boolean {
    return this.leading;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(0);
  }

  /** Stops campaigning; a leader releases the Lease first so a successor need not wait it out. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearTimeout(this.timer);
    await this.attempt;
    if (this.leading) {
      await this.release().catch((err: unknown) =>
        this.o.logger.warn({ err: String(err), lease: this.o.name }, 'could not release the leader Lease'),
      );
      this.stepDown('released on shutdown');
    }
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.attempt = this.tick();
    }, ms);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    const startedAt = performance.now();
    let ok = false;
    try {
      ok = await this.tryAcquireOrRenew(startedAt);
    } catch (err) {
      this.o.logger.debug({ err: String(err), lease: this.o.name }, 'leader election: attempt failed');
    }
    if (this.stopped) return;
    if (ok && !this.leading) this.startLeading();
    // Acquiring is jittered so candidates do not all try at once (client-go: JitterFactor 1.2).
    const next = this.leading ? this.retryPeriodMs : this.retryPeriodMs * (1 + Math.random() * 0.2);
    this.schedule(next);
  }

  /** client-go's tryAcquireOrRenew: true when we hold the Lease after this call. */
  private async tryAcquireOrRenew(startedAt: number): Promise<boolean> {
    const now = Date.now();
    const spec = (prior?: LeaseSpec): LeaseSpec => {
      const ours = prior?.holderIdentity === this.identity;
      return {
        holderIdentity: this.identity,
        leaseDurationSeconds: Math.ceil(this.leaseDurationMs / 1000),
        acquireTime: ours && prior?.acquireTime ? prior.acquireTime : microTime(now),
        renewTime: microTime(now),
        leaseTransitions: ours ? (prior?.leaseTransitions ?? 0) : (prior?.leaseTransitions ?? -1) + 1,
      };
    };
    let current: LeaseObject;
    try {
      current = (await this.o.client.request('GET', this.path)) as LeaseObject;
    } catch (err) {
      if (!(err instanceof KubeApiError && err.status === 404)) throw err;
      const created = spec();
      await this.o.client.request(
        'POST',
        `/apis/coordination.k8s.io/v1/namespaces/${this.o.namespace}/leases`,
        {
          body: {
            apiVersion: 'coordination.k8s.io/v1',
            kind: 'Lease',
            metadata: { name: this.o.name, namespace: this.o.namespace },
            spec: created,
          },
        },
      );
      this.observe(created);
      this.renewed(startedAt);
      return true;
    }
    const record = current.spec ?? {};
    if (!sameRecord(record, this.observed)) this.observe(record);
    const holder = record.holderIdentity ?? '';
    const heldByOther = holder !== '' && holder !== this.identity;
    // Expiry as observed here: the holder's renewals are seen as record changes.
    const durationMs = (record.leaseDurationSeconds ?? 0) * 1000;
    if (heldByOther && this.observedAt + durationMs > performance.now()) return false;
    const next = spec(record);
    try {
      await this.o.client.request('PUT', this.path, {
        body: { ...current, metadata: { ...current.metadata }, spec: next },
      });
    } catch (err) {
      // Someone else wrote first (resourceVersion conflict): not ours this round.
      if (err instanceof KubeApiError && err.status === 409) return false;
      throw err;
    }
    this.observe(next);
    this.renewed(startedAt);
    return true;
  }

  private observe(record: LeaseSpec): void {
    this.observed = record;
    this.observedAt = performance.now();
  }

  /**
   * A successful write that began at `startedAt`: others see it no earlier, so their
   * deadline is at least startedAt + leaseDuration; ours is startedAt + renewDeadline.
   */
  private renewed(startedAt: number): void {
    this.renewedAt = startedAt;
    if (this.leading) this.armWatchdog();
  }

  private armWatchdog(): void {
    clearTimeout(this.watchdog);
    const left = this.renewedAt + this.renewDeadlineMs - performance.now();
    this.watchdog = setTimeout(() => {
      if (!this.leading) return;
      // Timers may fire a fraction of a millisecond early by this clock: look again then.
      if (performance.now() - this.renewedAt < this.renewDeadlineMs) this.armWatchdog();
      else this.stepDown(`not renewed for ${this.renewDeadlineMs} ms`);
    }, Math.max(0, left) + 1);
    this.watchdog.unref();
  }

  private startLeading(): void {
    this.leading = true;
    this.armWatchdog();
    this.o.logger.info({ lease: this.o.name, identity: this.identity }, 'became leader');
    this.o.onStartedLeading?.();
  }

  private stepDown(why: string): void {
    if (!this.leading) return;
    this.leading = false;
    clearTimeout(this.watchdog);
    this.o.logger.warn({ lease: this.o.name, identity: this.identity, why }, 'stopped leading');
    this.o.onStoppedLeading?.(why);
  }

  /** client-go's ReleaseOnCancel: the holder cleared and a 1 s duration, our resourceVersion. */
  private async release(): Promise<void> {
    const current = (await this.o.client.request('GET', this.path)) as LeaseObject;
    if (current.spec?.holderIdentity !== this.identity) return;
    const now = microTime(Date.now());
    await this.o.client.request('PUT', this.path, {
      body: {
        ...current,
        spec: {
          ...current.spec,
          holderIdentity: '',
          leaseDurationSeconds: 1,
          renewTime: now,
          acquireTime: now,
        },
      },
    });
  }
}
