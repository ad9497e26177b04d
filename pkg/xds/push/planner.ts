// Decides, per change, which proxy streams to push: only those whose group
// read something the change altered (DependencyTracker), whose group itself
// changed (the pod or the services it backs), or whose group was never
// generated. Every other stream gets nothing and costs nothing but a group
// membership check. Replaces the per-stream repeater fan-out, where every
// stream regenerated (or looked up) its whole configuration on every change.
import type { AnnouncementBus } from '../../announcements/bus.js';
import { Coalescer } from '../../announcements/coalescer.js';
import type { Announcement } from '../../announcements/types.js';
import type { MeshView } from '../../catalog/types.js';
import type { GenerationContext } from '../../envoy/types.js';
import type { Logger } from '../../logger/logger.js';
import { DEFAULT_MIN_PUSH_INTERVAL_MS } from '../../mesh/constants.js';
import type { ProxyIdentity } from '../../mesh/identity.js';
import type { DependencyTracker } from '../cache/deps.js';

/** A proxy's configuration group at one view; implementations may carry what they need to answer cheaply next time. */
export interface Membership {
  readonly groupKey: string;
}

export interface PushPlannerOptions<M extends Membership> {
  /** Must be the tracker of the generation cache the streams use. */
  tracker: DependencyTracker;
  /** The current state, as streams will generate from it. */
  context(): GenerationContext;
  /**
   * The proxy's group at `mesh`. Returning `previous` itself says "same
   * group, nothing to recompute"; a new object with the same key is fine too.
   */
  membership(identity: ProxyIdentity, mesh: MeshView, previous: M | undefined): M;
  /** Keeps the cached sets the check found unaffected across the change (GenerationCache.carryOver). */
  carryOver(
    ctx: GenerationContext,
    unaffected: (groupKey: string, typeUrl: string, subscription: string) => boolean,
  ): void;
  /** At most one round per interval (default 100 ms); nothing is ever dropped (Coalescer). */
  minIntervalMs?: number;
  logger: Logger;
  now?: () => number;
  /** Announcements folded into an already pending round (metrics; see CoalescerOptions). */
  onCoalesced?: (count: number) => void;
}

/** A stream's push trigger; `changedAt` is when the earliest change behind it happened. */
export type PushTrigger = (changedAt: number) => void;

interface Target<M extends Membership> {
  readonly id: string;
  readonly identity: ProxyIdentity;
  readonly push: PushTrigger;
  membership: M;
}

/** What one round did, for tests and the debug log. */
export interface RoundStats {
  readonly streams: number;
  readonly groups: number;
  readonly affectedGroups: number;
  readonly pushed: number;
  /** Questions asked again to find the affected groups. */
  readonly asked: number;
  /** A resync (ticker) or settings change pushed every stream. */
  readonly sweep: boolean;
}

/**
 * The announcement bus's consumer for targeted pushes. Announcements are
 * coalesced into rounds; a round checks the recorded dependencies against the
 * current state once, carries the cached configuration of unaffected groups
 * over, and pushes only the streams that may have to change.
 *
 * When in doubt it pushes: a group without a record, a group dirtied by a
 * stream that regenerated between rounds, and on the one-minute ticker and
 * MeshConfig changes every stream (a push that finds its configuration
 * unchanged sends nothing, so a sweep is a cheap safety net, not a resend).
 */
export class PushPlanner<M extends Membership = Membership> {
  private readonly targets = new Map<string, Target<M>>();
  private readonly groups = new Map<string, Set<Target<M>>>();
  private readonly coalescer: Coalescer;
  private unsubscribe: (() => void) | undefined;
  private readonly log: Logger;
  /** The last round's figures. */
  last: RoundStats | undefined;
  rounds = 0;

  constructor(
    bus: AnnouncementBus,
    private readonly opts: PushPlannerOptions<M>,
  ) {
    this.log = opts.logger;
    this.coalescer = new Coalescer(
      opts.minIntervalMs ?? DEFAULT_MIN_PUSH_INTERVAL_MS,
      (batch) => this.round(batch),
      {
        logger: opts.logger,
        ...(opts.now ? { now: opts.now } : {}),
        ...(opts.onCoalesced ? { onCoalesced: opts.onCoalesced } : {}),
      },
    );
    this.unsubscribe = bus.subscribe((a) => this.coalescer.push(a));
  }

  /**
   * Adds a connected stream. Registering an id again replaces the previous
   * registration; the returned function removes exactly this one.
   */
  register(id: string, identity: ProxyIdentity, push: PushTrigger): () => void {
    this.remove(id);
    const membership = this.opts.membership(identity, this.opts.context().mesh, undefined);
    const target: Target<M> = { id, identity, push, membership };
    this.targets.set(id, target);
    this.join(target);
    return () => {
      if (this.targets.get(id) === target) this.remove(id);
    };
  }

  get size(): number {
    return this.targets.size;
  }

  get minInterval(): number {
    return this.coalescer.minInterval;
  }

  setMinInterval(ms: number): void {
    this.coalescer.setMinInterval(ms);
  }

  /** Runs the pending round now (tests). */
  flush(): void {
    this.coalescer.flush();
  }

  close(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    this.coalescer.close();
    this.targets.clear();
    this.groups.clear();
  }

  private round(batch: Announcement[]): void {
    const started = performance.now();
    const ctx = this.opts.context();
    const changedAt = batch.reduce((min, a) => Math.min(min, a.at), Number.POSITIVE_INFINITY);
    const sweep = batch.some((a) => a.kind === 'ticker' || a.kind === 'config');
    const due = new Set<Target<M>>();
    // A proxy whose pod or backed services changed is in another group now.
    for (const t of this.targets.values()) {
      const m = this.opts.membership(t.identity, ctx.mesh, t.membership);
      if (m === t.membership) continue;
      if (m.groupKey !== t.membership.groupKey) {
        this.leave(t);
        t.membership = m;
        this.join(t);
        due.add(t);
      } else t.membership = m;
    }
    const tracker = this.opts.tracker;
    const { affected, asked } = tracker.check(ctx, (g) => this.groups.has(g));
    let affectedGroups = 0;
    for (const [group, members] of this.groups) {
      // Never generated (or forgotten): nothing says what it depends on.
      if (!affected.has(group) && tracker.has(group)) continue;
      affectedGroups++;
      for (const t of members) due.add(t);
    }
    // Per entry: an affected group regenerates only the sets that read a changed answer.
    this.opts.carryOver(ctx, (g, typeUrl, sub) => tracker.carries(g, typeUrl, sub));
    const pushed = sweep ? [...this.targets.values()] : [...due];
    for (const t of pushed) {
      try {
        t.push(changedAt);
      } catch (err) {
        this.log.error({ err, stream: t.id }, 'push failed');
      }
    }
    this.rounds++;
    this.last = {
      streams: this.targets.size,
      groups: this.groups.size,
      affectedGroups,
      pushed: pushed.length,
      asked,
      sweep,
    };
    this.log.debug(
      { ...this.last, announcements: batch.length, ms: Math.round(performance.now() - started) },
      'push round',
    );
  }

  private remove(id: string): void {
    const t = this.targets.get(id);
    if (t === undefined) return;
    this.targets.delete(id);
    this.leave(t);
  }

  private join(t: Target<M>): void {
    const key = t.membership.groupKey;
    let members = this.groups.get(key);
    if (members === undefined) {
      members = new Set();
      this.groups.set(key, members);
    }
    members.add(t);
  }

  private leave(t: Target<M>): void {
    const key = t.membership.groupKey;
    const members = this.groups.get(key);
    members?.delete(t);
    if (members?.size === 0) this.groups.delete(key);
  }
}
