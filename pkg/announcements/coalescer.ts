import type { Logger } from '../logger/logger.js';
import { defaultLogger } from './log.js';
import type { Announcement } from './types.js';

/** Receives a batch; may return a promise, and then no new batch comes until it settles. */
export type PushFn = (batch: Announcement[]) => void | Promise<void>;

export interface CoalescerOptions {
  logger?: Logger;
  now?: () => number;
  /** Told how many announcements a fired batch folded into its first one (batch size - 1), e.g. for metrics. */
  onCoalesced?: (count: number) => void;
}

/**
 * The repeater's core: rate-limits pushes to at most one per `minIntervalMs`
 * without ever dropping an announcement (OSM's first repeater dropped what
 * arrived inside its throttle window; openservicemesh/osm `pkg/messaging`).
 *
 * - A push when the last fire was at least minInterval ago fires on the next
 *   turn of the event loop (so a synchronous burst still becomes one batch).
 * - Otherwise ONE fire is scheduled at the end of the window and carries
 *   everything that arrived inside it, so the last state is always delivered.
 * - If `fire` returns a promise, the next batch waits until it settles: a slow
 *   receiver accumulates one bigger batch instead of overlapping pushes.
 * - `fire` throwing or rejecting is logged; the coalescer keeps working.
 */
export class Coalescer {
  private pending: Announcement[] = [];
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  private lastFire = Number.NEGATIVE_INFINITY;
  private inFlight = false;
  private closed = false;
  private readonly logger: Logger;
  private readonly now: () => number;
  private readonly onCoalesced: ((count: number) => void) | undefined;

  constructor(
    private minIntervalMs: number,
    private readonly fire: PushFn,
    opts: CoalescerOptions = {},
  ) {
    this.logger = opts.logger ?? defaultLogger();
    this.now = opts.now ?? Date.now;
    this.onCoalesced = opts.onCoalesced;
  }

  get minInterval(): number {
    return this.minIntervalMs;
  }

  /** Announcements waiting for the next fire. */
  get pendingCount(): number {
    return this.pending.length;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  push(a: Announcement): void {
    if (this.closed) return;
    this.pending.push(a);
    this.schedule();
  }

  /**
   * Fires what is pending now, ignoring the interval. While a previous
   * asynchronous fire is still running the batch stays pending and goes out
   * as soon as that settles.
   */
  flush(): void {
    if (this.closed || this.inFlight) return;
    this.cancelTimers();
    this.fireNow();
  }

  /** Changes the window; a scheduled fire moves to the new end of the window. */
  setMinInterval(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`min interval must be >= 0, got ${ms}`);
    this.minIntervalMs = ms;
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
      this.schedule();
    }
  }

  /** Stops all timers and discards what is pending; later pushes are ignored. */
  close(): void {
    this.closed = true;
    this.cancelTimers();
    this.pending = [];
  }

  private schedule(): void {
    if (this.closed || this.inFlight || this.timer || this.immediate || this.pending.length === 0) return;
    const wait = this.lastFire + this.minIntervalMs - this.now();
    if (wait <= 0) {
      this.immediate = setImmediate(() => {
        this.immediate = undefined;
        this.fireNow();
      });
    } else {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.fireNow();
      }, wait);
    }
  }

  private cancelTimers(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.immediate) clearImmediate(this.immediate);
    this.timer = undefined;
    this.immediate = undefined;
  }

  private fireNow(): void {
    if (this.closed || this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    this.lastFire = this.now();
    // Counted when delivered: what close() discards was never folded into a push.
    if (batch.length > 1) this.onCoalesced?.(batch.length - 1);
    let result: unknown;
    try {
      result = this.fire(batch);
    } catch (err) {
      this.logger.error({ err, batchSize: batch.length }, 'push failed');
    }
    if (isPromiseLike(result)) {
      this.inFlight = true;
      result.then(
        () => this.settled(),
        (err: unknown) => {
          this.logger.error({ err, batchSize: batch.length }, 'push failed');
          this.settled();
        },
      );
    } else {
      // Announcements pushed from inside `fire` are waiting for the next window.
      this.schedule();
    }
  }

  private settled(): void {
    this.inFlight = false;
    this.schedule();
  }
}

function isPromiseLike(x: unknown): x is PromiseLike<unknown> {
  return typeof x === 'object' && x !== null && 'then' in x && typeof x.then === 'function';
}
