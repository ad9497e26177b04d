// A rolling window of one (proxy, upstream) pair's figures: a fixed ring of
// time slots, so memory per pair is constant however much traffic it sees.
import { addCounts, type Counts, quantile } from './histogram.js';

/** What one metrics message adds. */
export interface Delta {
  requests: number;
  /** By class: index 0 = 1xx … 4 = 5xx. */
  responses: readonly number[];
  latency?: Counts;
}

/** A window's (or several windows') sums, before they are turned into rates. */
export interface WindowSums {
  requests: number;
  responses: number[];
  latency?: Counts;
  /** How much time the sums cover (ms): the window, or less for a pair younger than it. */
  coveredMs: number;
}

export interface WindowSummary {
  seconds: number;
  requests: number;
  /** Requests per second over `seconds`. */
  rps: number;
  /** Completed responses and, of them, 5xx. */
  responses: number;
  errors: number;
  /** Non-5xx share of the completed responses, 0–1; absent without responses. */
  successRate?: number;
  p50Ms?: number;
  p99Ms?: number;
}

interface Slot {
  epoch: number;
  requests: number;
  responses: number[];
  latency?: Counts;
}

/**
 * How long before its first message a sidecar's counters started counting:
 * Envoy's default stats flush interval, which the bootstrap keeps.
 */
export const ENVOY_FLUSH_MS = 5_000;

export class RollingWindow {
  private readonly slots: (Slot | undefined)[];
  private readonly firstSeenMs: number;
  lastSeenMs: number;
  /** Since the pair was first seen (for `skein proxy get stats` and tests: exact, not windowed). */
  readonly totals = { requests: 0, responses: 0, errors: 0 };

  constructor(
    private readonly slotMs: number,
    slotCount: number,
    nowMs: number,
  ) {
    this.slots = new Array<Slot | undefined>(slotCount).fill(undefined);
    this.firstSeenMs = nowMs;
    this.lastSeenMs = nowMs;
  }

  get windowMs(): number {
    return this.slotMs * this.slots.length;
  }

  add(nowMs: number, d: Delta): void {
    this.lastSeenMs = nowMs;
    const epoch = Math.floor(nowMs / this.slotMs);
    const i = epoch % this.slots.length;
    let slot = this.slots[i];
    if (slot === undefined || slot.epoch !== epoch) {
      slot = { epoch, requests: 0, responses: [0, 0, 0, 0, 0] };
      this.slots[i] = slot;
    }
    slot.requests += d.requests;
    for (let k = 0; k < 5; k++) slot.responses[k] = (slot.responses[k] ?? 0) + (d.responses[k] ?? 0);
    if (d.latency) {
      slot.latency = slot.latency
        ? addCounts(slot.latency, d.latency)
        : { bounds: d.latency.bounds, counts: [...d.latency.counts] };
    }
    const completed = d.responses.reduce((s, c) => s + c, 0);
    this.totals.requests += d.requests;
    this.totals.responses += completed;
    this.totals.errors += d.responses[4] ?? 0;
  }

  /** The sums of the slots still inside the window at `nowMs`. */
  sums(nowMs: number): WindowSums {
    const oldest = Math.floor(nowMs / this.slotMs) - this.slots.length + 1;
    const out: WindowSums = {
      requests: 0,
      responses: [0, 0, 0, 0, 0],
      coveredMs: Math.min(this.windowMs, nowMs - this.firstSeenMs + ENVOY_FLUSH_MS),
    };
    for (const s of this.slots) if (s !== undefined && s.epoch >= oldest) addSums(out, s);
    return out;
  }
}

/** Adds `b` into `a` (the latency of the first with one sets the bounds). */
export function addSums(a: Omit<WindowSums, 'coveredMs'>, b: Omit<WindowSums, 'coveredMs'>): void {
  a.requests += b.requests;
  for (let k = 0; k < 5; k++) a.responses[k] = (a.responses[k] ?? 0) + (b.responses[k] ?? 0);
  if (b.latency)
    a.latency = a.latency
      ? addCounts(a.latency, b.latency)
      : { bounds: b.latency.bounds, counts: [...b.latency.counts] };
}

/** Rates, success and latency quantiles of some sums. */
export function summarize(s: WindowSums): WindowSummary {
  const seconds = Math.max(s.coveredMs, 1) / 1000;
  const responses = s.responses.reduce((sum, c) => sum + c, 0);
  const errors = s.responses[4] ?? 0;
  const p50 = s.latency && quantile(s.latency, 0.5);
  const p99 = s.latency && quantile(s.latency, 0.99);
  return {
    seconds: Math.round(seconds * 10) / 10,
    requests: s.requests,
    rps: s.requests / seconds,
    responses,
    errors,
    ...(responses > 0 ? { successRate: (responses - errors) / responses } : {}),
    ...(p50 !== undefined ? { p50Ms: p50 } : {}),
    ...(p99 !== undefined ? { p99Ms: p99 } : {}),
  };
}
