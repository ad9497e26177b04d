#!/usr/bin/env node
// `make bench-peer`: OSM v1.2.4 and skein, same topology and fleet, one run (peer.ts).
import { writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { positiveInt } from './args.js';
import { type PeerBenchOptions, runPeerBench } from './peer.js';
import { formatPeerReport } from './peer-report.js';

export const PEER_USAGE = `skein vs OSM — the same topology and proxy fleet against osm-controller
(test/osm, \`make osm-bin\`) and skein in Kubernetes mode, on one real API server

Usage: node dist/test/bench/peer-main.js [flags]   (or: make bench-peer BENCH_ARGS="...")

  --proxies N          sidecar proxies = pods (default 400)
  --services S         services, 2+ pods each (default N/2)
  --mode smi|permissive  traffic mode of both MeshConfigs (default smi)
  --changes K          repetitions of each change kind per controller (default 10)
  --workers W          proxy-fleet processes (default: one per core)
  --quiet-ms MS        silence that ends a change measurement (default 300)
  --idle-ms MS         idle window after convergence (default 5000)
  --timeout-s S        wait at most S s for initial convergence and the storm (default 180)
  --skip-storm         skip the SIGKILL/restart phase
  --only osm|skein     run one controller only
  --json FILE          also write the results as JSON
  -h, --help
`;

export function parsePeerArgs(argv: string[]): (PeerBenchOptions & { json?: string }) | 'help' {
  const { values: v } = parseArgs({
    args: argv,
    strict: true,
    options: {
      proxies: { type: 'string' },
      services: { type: 'string' },
      mode: { type: 'string' },
      changes: { type: 'string' },
      workers: { type: 'string' },
      'quiet-ms': { type: 'string' },
      'idle-ms': { type: 'string' },
      'timeout-s': { type: 'string' },
      'skip-storm': { type: 'boolean' },
      only: { type: 'string' },
      json: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (v.help) return 'help';
  const proxies = positiveInt('proxies', v.proxies, 400);
  const services = positiveInt('services', v.services, Math.max(1, Math.floor(proxies / 2)));
  if (proxies < 2 * services) throw new Error(`--services ${services}: every service needs 2 pods (2S <= N)`);
  const mode = v.mode ?? 'smi';
  if (mode !== 'smi' && mode !== 'permissive') throw new Error(`--mode: ${mode} is not smi or permissive`);
  const only = v.only;
  if (only !== undefined && only !== 'osm' && only !== 'skein')
    throw new Error(`--only: ${only} is not osm or skein`);
  return {
    proxies,
    services,
    mode,
    changes: positiveInt('changes', v.changes, 10),
    workers: positiveInt('workers', v.workers, availableParallelism()),
    quietMs: positiveInt('quiet-ms', v['quiet-ms'], 300),
    idleMs: positiveInt('idle-ms', v['idle-ms'], 5000),
    timeoutS: positiveInt('timeout-s', v['timeout-s'], 180),
    skipStorm: v['skip-storm'] ?? false,
    ...(only ? { only: [only] } : {}),
    ...(v.json ? { json: v.json } : {}),
  };
}

async function main(argv: string[]): Promise<number> {
  let opts: ReturnType<typeof parsePeerArgs>;
  try {
    opts = parsePeerArgs(argv);
  } catch (err) {
    process.stderr.write(`bench-peer: ${err instanceof Error ? err.message : String(err)}\n\n${PEER_USAGE}`);
    return 2;
  }
  if (opts === 'help') {
    process.stdout.write(PEER_USAGE);
    return 0;
  }
  const result = await runPeerBench(opts);
  process.stdout.write(`${formatPeerReport(result)}\n`);
  if (opts.json) await writeFile(opts.json, `${JSON.stringify(result, null, 2)}\n`);
  return result.runs.some((r) => r.initial.incomplete > 0 || (r.storm?.incomplete ?? 0) > 0) ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`bench-peer: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
