// Go-style durations ("90s", "1h30m", "250ms"), as Kubernetes users write them in
// MeshConfig and flags.
const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};
const PART = /([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)/gy;

/** Parses a Go-style duration to milliseconds; throws a descriptive Error when malformed. */
export function parseDuration(text: string): number {
  const s = text.trim();
  if (s === '0') return 0;
  if (s === '') throw new Error('empty duration');
  PART.lastIndex = 0;
  let total = 0;
  let pos = 0;
  for (let m = PART.exec(s); m; m = PART.exec(s)) {
    total += Number(m[1]) * (UNIT_MS[m[2] ?? ''] ?? Number.NaN);
    pos = PART.lastIndex;
  }
  if (pos !== s.length || Number.isNaN(total))
    throw new Error(`invalid duration ${JSON.stringify(text)} (expected e.g. "90s", "1h30m", "250ms")`);
  return total;
}

export function formatDuration(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}
