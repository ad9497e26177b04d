// The benchmark's results: one JSON document, and a table for humans.
import { cpus, totalmem } from 'node:os';
import type { BenchOptions } from './args.js';
import { NODE_FIXTURE_VERSION } from './envoy-node.js';
import type { HostileResult } from './hostile.js';
import { boundMs, type LoopbackThroughput } from './loopback.js';
import type {
  ChangeKindResult,
  ChangeSample,
  FailoverResult,
  IdleResult,
  InitialResult,
  StormResult,
  TickResult,
} from './measure.js';
import { TYPE_CODES } from './protocol.js';
import { round, type Summary } from './stats.js';

export interface Machine {
  nproc: number;
  cpuModel: string;
  memTotalMB: number;
  node: string;
  platform: string;
}

export function machine(): Machine {
  return {
    nproc: cpus().length,
    cpuModel: cpus()[0]?.model ?? 'unknown',
    memTotalMB: Math.round(totalmem() / (1024 * 1024)),
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
  };
}

export interface BenchResult {
  machine: Machine;
  options: BenchOptions;
  topology: {
    proxies: number;
    services: number;
    backendServices: number;
    namespaces: number;
    trafficSplits: number;
    sourcesPerService: number;
    /** Egress and IngressBackend objects in the topology (--egress-policies, --ingress-backends). */
    egressPolicies: number;
    ingressBackends: number;
  };
  controller: {
    startupMs: number;
    baselineRssMB: number;
    convergedRssMB: number;
    rssPerProxyKB: number;
    idleCpuBeforeFleetS: number;
    warnings: number;
    warningSamples: string[];
  };
  fleet: { certIssueMs: number; workers: number; decodedResources: number; responses: number };
  /** Loopback TLS throughput measured in this run: the physical bound beside each figure. */
  loopback: LoopbackThroughput;
  initial: InitialResult;
  idle: IdleResult;
  changes: Record<string, ChangeKindResult>;
  changeSamples: ChangeSample[];
  tick?: TickResult;
  hostile?: HostileResult;
  storm?: StormResult;
  failover?: FailoverResult;
  totalS: number;
}

function ms(x: number): string {
  return Number.isNaN(x) ? '-' : `${Math.round(x)}`;
}

function pad(cells: string[], widths: number[]): string {
  return cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ');
}

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  return [
    pad(header, widths),
    widths.map((w) => '-'.repeat(w)).join('  '),
    ...rows.map((r) => pad(r, widths)),
  ].join('\n');
}

/** `ms` as a multiple of the time `bytes` take at loopback speed. */
function times(msTaken: number, bytes: number, t: LoopbackThroughput): string {
  const b = boundMs(bytes, t);
  const x = msTaken / b;
  return b > 0 && Number.isFinite(x) ? `${round(x, x >= 100 ? 0 : 1)}x` : '-';
}

function triple(s: Summary): string[] {
  return [ms(s.p50), ms(s.p99), ms(s.max)];
}

export function formatReport(r: BenchResult): string {
  const o = r.options;
  const t = r.topology;
  const lines: string[] = [];
  lines.push(
    `skein benchmark: ${t.proxies} proxies, ${t.services} services (+${t.backendServices} split backends) in ${t.namespaces} namespaces, ` +
      `${t.egressPolicies > 0 ? `${t.egressPolicies} Egress, ` : ''}${t.ingressBackends > 0 ? `${t.ingressBackends} IngressBackend, ` : ''}` +
      `mode ${o.mode}, ${o.delta ? 'Delta' : 'SotW'} ADS, ${o.minimalNode ? 'two-field' : `Envoy ${NODE_FIXTURE_VERSION}`} node, ${o.workers} fleet workers (${o.fleetTransport} clients), ${o.changes} changes per kind`,
  );
  lines.push(
    `machine: ${r.machine.nproc} cores (${r.machine.cpuModel}), ${r.machine.memTotalMB} MB, node ${r.machine.node}`,
  );
  lines.push('');
  const c = r.controller;
  const i = r.initial;
  lines.push(
    table(
      ['controller', 'value'],
      [
        ['startup to /readyz (ms)', ms(c.startupMs)],
        ['RSS before fleet (MB)', `${c.baselineRssMB}`],
        ['RSS after convergence (MB)', `${c.convergedRssMB}`],
        ['RSS per connected proxy (KB)', `${c.rssPerProxyKB}`],
        ['initial convergence (ms)', ms(i.convergenceMs)],
        ['  per proxy p50 / p99 (ms)', `${ms(i.perProxyMs.p50)} / ${ms(i.perProxyMs.p99)}`],
        ['  controller CPU (s)', `${round(i.controllerCpuS, 2)}`],
        ['  fleet workers CPU (s)', `${round(i.workerCpuS, 2)}`],
        ['  responses / MB sent', `${i.responses} / ${round(i.bytes / 1048576, 1)}`],
        [
          '  KB per proxy by type',
          TYPE_CODES.map(
            (t) => `${t} ${round(i.bytesByType[t] / 1024 / Math.max(1, r.options.proxies), 1)}`,
          ).join(' '),
        ],
        ['  proxies incomplete', `${i.incomplete}`],
        ['loopback TLS 1.3 (MB/s, best of rounds)', `${round(r.loopback.mbPerS)}`],
        ['  bytes sent at that speed (ms)', ms(boundMs(i.bytes, r.loopback))],
        ['  initial convergence / that bound', times(i.convergenceMs, i.bytes, r.loopback)],
        [`idle ${r.idle.windowS} s: controller CPU (s)`, `${round(r.idle.controllerCpuS, 2)}`],
        [`idle ${r.idle.windowS} s: pushes`, `${r.idle.pushes}`],
        ['controller warnings logged', `${c.warnings}`],
      ],
    ),
  );
  lines.push('');
  lines.push(
    table(
      [
        'change',
        'n',
        'p50 ms',
        'p99 ms',
        'max ms',
        'content p50',
        'content max',
        'proxies',
        'KB sent',
        'bound ms',
        'p50/bound',
        'CPU ms',
        'no push',
      ],
      Object.entries(r.changes).map(([kind, k]) => [
        kind,
        `${k.convergenceMs.n}`,
        ...triple(k.convergenceMs),
        k.contentMs ? ms(k.contentMs.p50) : '',
        k.contentMs ? ms(k.contentMs.max) : '',
        `${round(k.proxies.mean, 1)}`,
        `${round(k.bytes.mean / 1024, 1)}`,
        `${round(boundMs(k.bytes.mean, r.loopback), 2)}`,
        times(k.convergenceMs.p50, k.bytes.mean, r.loopback),
        `${Math.round(k.controllerCpuS.mean * 1000)}`,
        `${k.noPush}`,
      ]),
    ),
  );
  lines.push(
    '(p50/p99/max: manifest write -> last ACK of the burst, burst ends after ' +
      `${o.quietMs} ms of fleet silence; content: write -> last proxy whose EDS shows the pod IP change; ` +
      'proxies/KB/CPU: mean per change; bound: the KB sent, written to the proxies that got them, ' +
      'at the loopback TLS speed above)',
  );
  if (r.hostile) {
    const h = r.hostile;
    lines.push('');
    lines.push(
      table(
        [
          `endpoint change, other proxies (hostile: ${h.names} names x ${h.nameLength} chars)`,
          'n',
          'p50 ms',
          'p99 ms',
          'max ms',
          'no push',
        ],
        [
          ['without hostile stream', `${h.quietMs.n}`, ...triple(h.quietMs), `${h.quietNoPush}`],
          [
            'with hostile stream',
            `${h.underAttackMs.n}`,
            ...triple(h.underAttackMs),
            `${h.underAttackNoPush}`,
          ],
        ],
      ),
    );
    const ends = Object.entries(h.hostile.statuses)
      .map(([s, n]) => `${n}x ${s}`)
      .join('; ');
    lines.push(
      `hostile client: ${h.hostile.streams} streams, ${h.hostile.requests} requests, ` +
        `${h.hostile.responses} responses; ended: ${ends || 'never'}`,
    );
  }
  if (r.tick) {
    lines.push('');
    lines.push(
      `resync ticker at ${r.tick.tickAtS} s uptime (${r.tick.windowS} s window around it): ` +
        `controller CPU ${round(r.tick.controllerCpuS, 2)} s, pushes ${r.tick.pushes}`,
    );
  }
  if (r.storm) {
    const s = r.storm;
    lines.push('');
    lines.push(
      table(
        ['reconnect storm (SIGKILL + restart)', 'value'],
        [
          ['restart to /readyz (ms)', ms(s.restartMs)],
          ['kill -> all complete (ms)', ms(s.fromKillMs)],
          ['ready -> all complete (ms)', ms(s.fromReadyMs)],
          [
            '  per proxy from kill p50 / p99 (ms)',
            `${ms(s.perProxyFromKillMs.p50)} / ${ms(s.perProxyFromKillMs.p99)}`,
          ],
          ['  restarted controller CPU (s)', `${round(s.controllerCpuS, 2)}`],
          ['  fleet workers CPU meanwhile (s)', `${round(s.workerCpuS, 2)}`],
          ['  RSS after (MB)', `${s.rssAfterMB}`],
          [
            '  MB sent / at loopback speed (ms)',
            `${round(s.bytes / 1048576, 1)} / ${ms(boundMs(s.bytes, r.loopback))}`,
          ],
          ['  ready -> all complete / that bound', times(s.fromReadyMs, s.bytes, r.loopback)],
          ['  proxies incomplete', `${s.incomplete}`],
        ],
      ),
    );
  }
  if (r.failover) {
    const f = r.failover;
    lines.push('');
    lines.push(
      table(
        [`failover (SIGKILL of 1 of ${f.replicas} replicas, not restarted)`, 'value'],
        [
          ['proxies it held, moved to the survivors', `${f.moved}`],
          ['kill -> all of them complete (ms)', ms(f.fromKillMs)],
          [
            '  per proxy from kill p50 / p99 (ms)',
            `${ms(f.perProxyFromKillMs.p50)} / ${ms(f.perProxyFromKillMs.p99)}`,
          ],
          ['  survivors CPU (s)', `${round(f.survivorsCpuS, 2)}`],
          ['  fleet workers CPU meanwhile (s)', `${round(f.workerCpuS, 2)}`],
          [
            '  MB sent / at loopback speed (ms)',
            `${round(f.bytes / 1048576, 1)} / ${ms(boundMs(f.bytes, r.loopback))}`,
          ],
          ['  kill -> all complete / that bound', times(f.fromKillMs, f.bytes, r.loopback)],
          ['  stream ends', `${f.streamEnds}`],
          ['  proxies incomplete', `${f.incomplete}`],
        ],
      ),
    );
  }
  lines.push('');
  lines.push(
    `total ${round(r.totalS, 1)} s. The fleet workers share this machine's cores with the controller; ` +
      'change times include the registry file-watch debounce.',
  );
  return lines.join('\n');
}
