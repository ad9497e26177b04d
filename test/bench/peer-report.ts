// The peer comparison's table: OSM and skein side by side, with OSM ÷ skein ratios
// (above 1 = skein lower, i.e. better, for every row).
import { CHANGE_KINDS } from './changes.js';
import { boundMs, type LoopbackThroughput } from './loopback.js';
import type { PeerBenchResult, PeerRun } from './peer.js';

interface Row {
  label: string;
  of: (r: PeerRun) => number | undefined;
  digits?: number;
  /**
   * No OSM ÷ skein ratio: a multiple of its own bound says how close each controller came to
   * the bytes it chose to send, and OSM sends ~3,000 times more per change, so the ratio of two
   * multiples compares nothing.
   */
  noRatio?: true;
}

function fmt(x: number | undefined, digits = 0): string {
  return x === undefined || Number.isNaN(x) ? '-' : x.toFixed(digits);
}

/** A time as a multiple of its bound: the bytes it moved, written at loopback TLS speed. */
function multiple(
  ms: number | undefined,
  bytes: number | undefined,
  lb: LoopbackThroughput,
): number | undefined {
  if (ms === undefined || bytes === undefined || !(bytes > 0)) return undefined;
  return ms / boundMs(bytes, lb);
}

function rows(lb: LoopbackThroughput): Row[] {
  const out: Row[] = [
    { label: 'baseline RSS before any proxy (MB)', of: (r) => r.baselineRssMB, digits: 1 },
    { label: 'RSS per proxy (KB)', of: (r) => r.rssPerProxyKB },
    { label: 'initial convergence (ms)', of: (r) => r.initial.convergenceMs },
    { label: 'initial per-proxy p50 (ms)', of: (r) => r.initial.perProxyMs.p50 },
    { label: 'initial controller CPU (s)', of: (r) => r.initial.controllerCpuS, digits: 2 },
    { label: 'initial bytes to the fleet (MB)', of: (r) => r.initial.bytes / 1e6, digits: 1 },
    {
      label: 'initial convergence ÷ its bound (×)',
      of: (r) => multiple(r.initial.convergenceMs, r.initial.bytes, lb),
      noRatio: true,
    },
    { label: 'idle controller CPU (s)', of: (r) => r.idle.controllerCpuS, digits: 2 },
  ];
  for (const kind of CHANGE_KINDS) {
    out.push(
      { label: `${kind} p50 (ms)`, of: (r) => r.changes[kind]?.convergenceMs.p50 },
      { label: `${kind} p99 (ms)`, of: (r) => r.changes[kind]?.convergenceMs.p99 },
      { label: `${kind} CPU per change (s)`, of: (r) => r.changes[kind]?.controllerCpuS.mean, digits: 3 },
      { label: `${kind} proxies pushed`, of: (r) => r.changes[kind]?.proxies.mean },
      {
        label: `${kind} bytes (KB)`,
        of: (r) => (r.changes[kind]?.bytes.mean ?? Number.NaN) / 1e3,
        digits: 1,
      },
      {
        label: `${kind} p50 ÷ its bound (×)`,
        of: (r) => multiple(r.changes[kind]?.convergenceMs.p50, r.changes[kind]?.bytes.mean, lb),
        noRatio: true,
      },
    );
  }
  out.push(
    { label: 'storm: kill → all complete (ms)', of: (r) => r.storm?.fromKillMs },
    { label: 'storm: ready → all complete (ms)', of: (r) => r.storm?.fromReadyMs },
    { label: 'storm: controller CPU (s)', of: (r) => r.storm?.controllerCpuS, digits: 2 },
    {
      label: 'storm: ready → complete ÷ its bound (×)',
      of: (r) => multiple(r.storm?.fromReadyMs, r.storm?.bytes, lb),
      noRatio: true,
    },
  );
  return out;
}

export function formatPeerReport(res: PeerBenchResult): string {
  const osm = res.runs.find((r) => r.name === 'osm');
  const skein = res.runs.find((r) => r.name === 'skein');
  const header = ['', ...res.runs.map((r) => `${r.name} ${r.version}`), 'osm ÷ skein'];
  const body = rows(res.loopback).map((row) => {
    const a = osm ? row.of(osm) : undefined;
    const b = skein ? row.of(skein) : undefined;
    const ratio = !row.noRatio && a !== undefined && b !== undefined && b > 0 ? (a / b).toFixed(1) : '-';
    return [row.label, ...res.runs.map((r) => fmt(row.of(r), row.digits)), ratio];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ');
  const t = res.topology;
  return [
    `bench-peer: ${t.proxies} proxies, ${t.services} services in ${t.namespaces} namespaces, ` +
      `${t.trafficSplits} TrafficSplits, ${res.options.mode} mode, ${res.options.changes} of each change; ` +
      `${res.machine.nproc} × ${res.machine.cpuModel}`,
    line(header),
    widths.map((w) => '-'.repeat(w)).join('  '),
    ...body.map(line),
    '',
    ...res.runs.map(
      (r) =>
        `${r.name}: load ${r.load.start.join(' ')} → ${r.load.end.join(' ')}; incomplete ${r.initial.incomplete}; ` +
        `warnings ${r.warnings}${r.warningSamples.length > 0 ? ` (${r.warningSamples.slice(0, 2).join(' | ').slice(0, 200)})` : ''}`,
    ),
    `÷ its bound: the time over the bytes sent written at loopback TLS speed, ${res.loopback.mbPerS.toFixed(1)} MB/s ` +
      `(${res.loopback.protocol}, best of ${res.loopback.roundsMbPerS.length} rounds of ${res.loopback.bytes / 1048576} MB)`,
    ...res.runs.map((r) => `${r.name} flags: ${r.flags.join(' ')}`),
    `total ${res.totalS} s`,
  ].join('\n');
}
