// The demo's table: one row per caller and outcome (a backend that answered,
// or a status code), with counts and shares over the recent window and in
// total. parseRow reads a row back, so the smoke test and the format agree.
import { callsIn, DENIED_CODES, type Tally } from './stats.js';

export type Outcome = 'ok' | 'denied' | 'error';

export interface Row {
  caller: string;
  outcome: Outcome;
  /** Backend name for `ok`, gRPC status name otherwise. */
  key: string;
  recent: number;
  /** Share of the caller's calls in the window, 0..1. */
  recentShare: number;
  total: number;
  totalShare: number;
}

/** Rows for one caller: answering backends first, then denials, then other errors. */
export function rowsFor(caller: string, recent: Tally, total: Tally): Row[] {
  const recentCalls = callsIn(recent);
  const totalCalls = callsIn(total);
  const share = (n: number, of: number) => (of > 0 ? n / of : 0);
  const row = (outcome: Outcome, key: string, r: number, t: number): Row => ({
    caller,
    outcome,
    key,
    recent: r,
    recentShare: share(r, recentCalls),
    total: t,
    totalShare: share(t, totalCalls),
  });
  const rows: Row[] = [];
  for (const key of Object.keys(total.ok).sort())
    rows.push(row('ok', key, recent.ok[key] ?? 0, total.ok[key] ?? 0));
  const codes = Object.keys(total.errors).sort();
  for (const code of codes.filter((c) => DENIED_CODES.has(c)))
    rows.push(row('denied', code, recent.errors[code] ?? 0, total.errors[code] ?? 0));
  for (const code of codes.filter((c) => !DENIED_CODES.has(c)))
    rows.push(row('error', code, recent.errors[code] ?? 0, total.errors[code] ?? 0));
  return rows;
}

const W = { caller: 10, outcome: 7, key: 18, count: 7 };

function pct(share: number): string {
  return `${(share * 100).toFixed(1)}%`.padStart(7);
}

export function headerLine(windowSeconds: number): string {
  return [
    'caller'.padEnd(W.caller),
    'result'.padEnd(W.outcome),
    'backend / code'.padEnd(W.key),
    `last ${windowSeconds}s`.padStart(W.count + 8),
    'total'.padStart(W.count + 9),
  ].join(' ');
}

export function formatRow(r: Row): string {
  return [
    r.caller.padEnd(W.caller),
    r.outcome.padEnd(W.outcome),
    r.key.padEnd(W.key),
    String(r.recent).padStart(W.count),
    pct(r.recentShare),
    String(r.total).padStart(W.count + 1),
    pct(r.totalShare),
  ].join(' ');
}

/** A caller that has not finished a call yet. */
export function waitingLine(caller: string): string {
  return `${caller.padEnd(W.caller)} (no calls yet)`;
}

const ROW = /^(\S+)\s+(ok|denied|error)\s+(\S+)\s+(\d+)\s+(\d+(?:\.\d+)?)%\s+(\d+)\s+(\d+(?:\.\d+)?)%\s*$/;

/** Reads a line printed by formatRow; undefined for any other line. */
export function parseRow(line: string): Row | undefined {
  const m = ROW.exec(line);
  if (!m) return undefined;
  const [, caller, outcome, key, recent, recentPct, total, totalPct] = m;
  if (outcome !== 'ok' && outcome !== 'denied' && outcome !== 'error') return undefined;
  if (!caller || !key) return undefined;
  return {
    caller,
    outcome,
    key,
    recent: Number(recent),
    recentShare: Number(recentPct) / 100,
    total: Number(total),
    totalShare: Number(totalPct) / 100,
  };
}
