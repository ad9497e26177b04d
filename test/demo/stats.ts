// Per-caller tallies of the workload app's `stats` lines: a sliding window for
// "what is happening now" and totals since the start.

export type Counts = Record<string, number>;

/** One `{"type":"stats","ok":{backend:n},"errors":{code:n}}` report, or a sum of them. */
export interface Tally {
  ok: Counts;
  errors: Counts;
}

/** Status codes that mean "policy said no" rather than "something broke". */
export const DENIED_CODES: ReadonlySet<string> = new Set(['PERMISSION_DENIED', 'UNAUTHENTICATED']);

function isCounts(v: unknown): v is Counts {
  return (
    typeof v === 'object' &&
    v !== null &&
    !Array.isArray(v) &&
    Object.values(v).every((n) => typeof n === 'number' && Number.isFinite(n) && n >= 0)
  );
}

/** The tally in a workload caller's JSON line, if it is a `stats` line. */
export function statsOf(line: Record<string, unknown>): Tally | undefined {
  if (line['type'] !== 'stats') return undefined;
  const ok = line['ok'];
  const errors = line['errors'];
  if (!isCounts(ok) || !isCounts(errors)) return undefined;
  return { ok, errors };
}

export function emptyTally(): Tally {
  return { ok: {}, errors: {} };
}

function addInto(into: Tally, t: Tally): void {
  for (const [k, n] of Object.entries(t.ok)) into.ok[k] = (into.ok[k] ?? 0) + n;
  for (const [k, n] of Object.entries(t.errors)) into.errors[k] = (into.errors[k] ?? 0) + n;
}

export function callsIn(t: Tally): number {
  let n = 0;
  for (const v of Object.values(t.ok)) n += v;
  for (const v of Object.values(t.errors)) n += v;
  return n;
}

export class CallerStats {
  readonly total: Tally = emptyTally();
  private readonly recent: { at: number; tally: Tally }[] = [];

  add(tally: Tally, at: number): void {
    this.recent.push({ at, tally });
    addInto(this.total, tally);
  }

  /** Sum of the reports received in the `ms` before `now`; older ones are dropped. */
  window(now: number, ms: number): Tally {
    while (this.recent.length > 0 && (this.recent[0]?.at ?? now) <= now - ms) this.recent.shift();
    const sum = emptyTally();
    for (const r of this.recent) addInto(sum, r.tally);
    return sum;
  }
}
