// Latency histograms as skein keeps them: per-bucket counts (not cumulative)
// over fixed upper bounds, and quantiles read from them the way Prometheus'
// histogram_quantile does (linear within the bucket).
import type { Bucket } from './wire.js';

export interface Counts {
  /** Upper bounds, ascending; one count per bound plus one for above the last. */
  bounds: readonly number[];
  counts: number[];
}

/**
 * The observations between two cumulative snapshots of one histogram, per
 * bucket. Without a comparable `prev` (none, other bounds) or with a count that
 * went down (the sender restarted its histogram), `cur` is all there is.
 */
export function bucketDelta(
  prev: { count: number; buckets: readonly Bucket[] } | undefined,
  cur: { count: number; buckets: readonly Bucket[] },
): Counts {
  const bounds = cur.buckets.map((b) => b.upperBound);
  const usable =
    prev !== undefined &&
    prev.buckets.length === cur.buckets.length &&
    prev.buckets.every(
      (b, i) => b.upperBound === bounds[i] && b.cumulativeCount <= (cur.buckets[i]?.cumulativeCount ?? 0),
    ) &&
    prev.count <= cur.count;
  const cumulative = (i: number): number =>
    i < cur.buckets.length
      ? (cur.buckets[i]?.cumulativeCount ?? 0) - (usable ? (prev.buckets[i]?.cumulativeCount ?? 0) : 0)
      : cur.count - (usable ? prev.count : 0);
  const counts: number[] = [];
  let below = 0;
  for (let i = 0; i <= cur.buckets.length; i++) {
    const c = Math.max(below, cumulative(i));
    counts.push(c - below);
    below = c;
  }
  return { bounds, counts };
}

/** Adds `b` into `a` when their bounds agree (else `a` is unchanged); returns `a`. */
export function addCounts(a: Counts, b: Counts): Counts {
  if (a.bounds.length !== b.bounds.length || a.bounds.some((x, i) => x !== b.bounds[i])) return a;
  for (let i = 0; i < a.counts.length; i++) a.counts[i] = (a.counts[i] ?? 0) + (b.counts[i] ?? 0);
  return a;
}

/**
 * The q-quantile (0 < q < 1) of the observations: linear interpolation in the
 * bucket it falls in, from the previous bound (0 for the first). In the
 * open-ended top bucket the answer is the last bound. Undefined with no
 * observations.
 */
export function quantile(h: Counts, q: number): number | undefined {
  const total = h.counts.reduce((s, c) => s + c, 0);
  if (total === 0) return undefined;
  const rank = q * total;
  let seen = 0;
  for (let i = 0; i < h.counts.length; i++) {
    const c = h.counts[i] ?? 0;
    if (c > 0 && seen + c >= rank) {
      const upper = h.bounds[i];
      const lower = i === 0 ? 0 : (h.bounds[i - 1] ?? 0);
      if (upper === undefined) return lower;
      return lower + (upper - lower) * ((rank - seen) / c);
    }
    seen += c;
  }
  return h.bounds[h.bounds.length - 1];
}
