#!/usr/bin/env node
// `make bench-peer`: OSM v1.2.4 and skein, same topology and fleet, one run (peer.ts).
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { COMMON_BENCH_FLAGS, commonBenchOptions } from './args.js';
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
  --fleet-transport T  h2 (default) or grpc-js: each proxy's client, as for make bench
  --quiet-ms MS        silence that ends a change measurement (default 300)
  --idle-ms MS         idle window after convergence (default 5000)
  --timeout-s S        wait at most S s for initial convergence and the storm (default 180)
  --skip-storm         skip the SIGKILL/restart phase
  --only osm|skein     run one controller only
  --cpu-prof DIR       run skein under node --cpu-prof, its profile in DIR (use with --skip-storm:
                       a SIGKILLed controller writes none)
  --json FILE          also write the results as JSON
  -h, --help
`;

export function parsePeerArgs(argv: string[]): (PeerBenchOptions & { json?: string }) | 'help' {
  const { values: v } = parseArgs({
    args: argv,
    strict: true,
    options: { ...COMMON_BENCH_FLAGS, only: { type: 'string' }, 'cpu-prof': { type: 'string' } },
  });
  if (v.help) return 'help';
  const only = v.only;
  if (only !== undefined && only !== 'osm' && only !== 'skein')
    throw new Error(`--only: ${only} is not osm or skein`);
  return {
    ...commonBenchOptions(v, { proxies: 400, timeoutS: 180 }),
    ...(only ? { only: [only] } : {}),
    ...(v.json ? { json: v.json } : {}),
    ...(v['cpu-prof'] ? { cpuProfDir: v['cpu-prof'] } : {}),
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
