export interface Summary {
  n: number;
  p50: number;
  p99: number;
  max: number;
  mean: number;
}

/** Nearest-rank percentile (p in 0..100) of unsorted values; NaN for none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] ?? Number.NaN;
}

export function summarize(values: readonly number[]): Summary {
  const n = values.length;
  return {
    n,
    p50: percentile(values, 50),
    p99: percentile(values, 99),
    max: n === 0 ? Number.NaN : Math.max(...values),
    mean: n === 0 ? Number.NaN : values.reduce((a, b) => a + b, 0) / n,
  };
}

/** Rounds for reports (JSON keeps a few decimals, not float noise). */
export function round(x: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
