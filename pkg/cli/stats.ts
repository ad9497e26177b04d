// `skein proxy get stats`: the controller's /debug/stats (per-edge figures the
// sidecars stream to it, pkg/stats) read back field by field and shown as tables.
import { CliError } from './errors.js';
import { record, str } from './kube.js';
import { formatTable } from './table.js';

export interface StatsRow {
  /** Destination service `<ns>/<name>`, and for edges the source identity. */
  destination: string;
  source?: string;
  rps: number;
  successRate?: number;
  p50Ms?: number;
  p99Ms?: number;
  requests: number;
  errors: number;
  total: { requests: number; responses: number; errors: number };
}

export interface StatsPage {
  windowSeconds: number;
  /** One proxy's page: its identity. */
  identity?: string;
  rows: StatsRow[];
}

function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

function rowOf(raw: unknown, destinationKey: 'service' | 'destination'): StatsRow {
  const r = record(raw);
  const t = record(r['total']);
  const row: StatsRow = {
    destination: str(r[destinationKey]) ?? '?',
    rps: num(r['rps']) ?? 0,
    requests: num(r['requests']) ?? 0,
    errors: num(r['errors']) ?? 0,
    total: {
      requests: num(t['requests']) ?? 0,
      responses: num(t['responses']) ?? 0,
      errors: num(t['errors']) ?? 0,
    },
  };
  const source = str(r['source']);
  if (source !== undefined) row.source = source;
  for (const k of ['successRate', 'p50Ms', 'p99Ms'] as const) {
    const v = num(r[k]);
    if (v !== undefined) row[k] = v;
  }
  return row;
}

/** `/debug/stats` (every edge) or `/debug/stats?proxy=` (one proxy's upstreams). */
export function parseStats(body: unknown): StatsPage {
  const b = record(body);
  const windowSeconds = num(b['windowSeconds']);
  if (windowSeconds === undefined) throw new CliError('/debug/stats did not answer a stats page');
  if (Array.isArray(b['edges']))
    return { windowSeconds, rows: b['edges'].map((e) => rowOf(e, 'destination')) };
  const identity = str(b['identity']);
  const upstreams = Array.isArray(b['upstreams']) ? b['upstreams'] : [];
  return {
    windowSeconds,
    ...(identity !== undefined ? { identity } : {}),
    rows: upstreams.map((u) => rowOf(u, 'service')),
  };
}

const ms = (v: number | undefined) => (v === undefined ? '-' : `${v < 10 ? v.toFixed(2) : v.toFixed(1)}ms`);
const pct = (v: number | undefined) => (v === undefined ? '-' : `${(v * 100).toFixed(1)}%`);

/** The table: rate, success and latency over the window, then totals since the controller heard of the pair. */
export function statsText(page: StatsPage, label: string): string {
  const edges = page.rows.some((r) => r.source !== undefined);
  const head = page.identity ? `PROXY   ${label} (${page.identity})\n` : '';
  if (page.rows.length === 0)
    return `${head}no requests reported in the last ${page.windowSeconds} s (HTTP and gRPC upstreams of Envoy sidecars only)\n`;
  const rows = page.rows.map((r) => [
    ...(edges ? [r.source ?? ''] : []),
    r.destination,
    r.rps.toFixed(2),
    pct(r.successRate),
    ms(r.p50Ms),
    ms(r.p99Ms),
    String(r.requests),
    String(r.errors),
    `${r.total.requests} / ${r.total.errors}`,
  ]);
  return `${head}${formatTable(
    [
      ...(edges ? ['SOURCE'] : []),
      'DESTINATION',
      'RPS',
      'SUCCESS',
      'P50',
      'P99',
      `REQUESTS ${page.windowSeconds}s`,
      '5XX',
      'TOTAL REQUESTS / 5XX',
    ],
    rows,
  )}`;
}
