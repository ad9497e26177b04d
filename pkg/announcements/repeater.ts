import type { Logger } from '../logger/logger.js';
import { DEFAULT_MIN_PUSH_INTERVAL_MS } from '../mesh/constants.js';
import type { AnnouncementBus } from './bus.js';
import { Coalescer, type CoalescerOptions, type PushFn } from './coalescer.js';
import { defaultLogger } from './log.js';

export interface RepeaterOptions {
  /** Minimum interval between two pushes to one target (default 100 ms). */
  minIntervalMs?: number;
  logger?: Logger;
  now?: () => number;
  /** Announcements folded into an already pending push, per target (see CoalescerOptions). */
  onCoalesced?: (count: number) => void;
}

/**
 * Fans the announcement stream out to targets (typically one per proxy
 * stream), each behind its own Coalescer: one slow proxy never holds back the
 * others, and each gets at most one push per window carrying every change.
 */
export class Repeater {
  private readonly targets = new Map<string, Coalescer>();
  private minIntervalMs: number;
  private readonly logger: Logger;
  private readonly now: (() => number) | undefined;
  private readonly onCoalesced: ((count: number) => void) | undefined;
  private unsubscribe: (() => void) | undefined;

  constructor(bus: AnnouncementBus, opts: RepeaterOptions = {}) {
    this.minIntervalMs = opts.minIntervalMs ?? DEFAULT_MIN_PUSH_INTERVAL_MS;
    this.logger = opts.logger ?? defaultLogger();
    this.now = opts.now;
    this.onCoalesced = opts.onCoalesced;
    this.unsubscribe = bus.subscribe((a) => {
      for (const c of this.targets.values()) c.push(a);
    });
  }

  /**
   * Adds a target. Registering an id again replaces (and closes) the previous
   * target. The returned function removes exactly this registration.
   */
  register(id: string, onPush: PushFn): () => void {
    this.targets.get(id)?.close();
    const opts: CoalescerOptions = { logger: this.logger };
    if (this.now) opts.now = this.now;
    if (this.onCoalesced) opts.onCoalesced = this.onCoalesced;
    const c = new Coalescer(this.minIntervalMs, onPush, opts);
    this.targets.set(id, c);
    return () => {
      if (this.targets.get(id) !== c) return;
      c.close();
      this.targets.delete(id);
    };
  }

  unregister(id: string): void {
    this.targets.get(id)?.close();
    this.targets.delete(id);
  }

  get size(): number {
    return this.targets.size;
  }

  get minInterval(): number {
    return this.minIntervalMs;
  }

  /** Changes the window of every target, including the ones registered later. */
  setMinInterval(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`min interval must be >= 0, got ${ms}`);
    this.minIntervalMs = ms;
    for (const c of this.targets.values()) c.setMinInterval(ms);
  }

  /** Stops listening and closes every target's timers. */
  close(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    for (const c of this.targets.values()) c.close();
    this.targets.clear();
  }
}
