import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import type { FleetTransportKind } from './fleet-transport.js';

export interface BenchOptions {
  proxies: number;
  services: number;
  mode: 'smi' | 'permissive';
  changes: number;
  workers: number;
  /** The fleet's client per proxy (fleet-transport.ts). */
  fleetTransport: FleetTransportKind;
  json?: string;
  minPushInterval?: string;
  /** Quiet time that ends a change measurement, in ms. */
  quietMs: number;
  /** Idle window after convergence, in ms. */
  idleMs: number;
  cpuProfDir?: string;
  /** Node flags for the controller process instead of the shipped ones (heap sizes, to compare). */
  controllerNodeArgs?: string[];
  /** Skip the SIGKILL/restart phase (needed for a CPU profile of the first controller). */
  skipStorm: boolean;
  /** Skip the idle window around the one-minute ticker. */
  skipTick: boolean;
  keep: boolean;
  /** Proxies use Delta ADS (DeltaAggregatedResources) instead of SotW. */
  delta?: boolean;
  /** Proxies send node id and cluster only, not a real Envoy's Node (for comparison with older runs). */
  minimalNode?: boolean;
  /** How long initial convergence and the storm may take before the run goes on without them, in s. */
  timeoutS: number;
  /** Time endpoint changes without and with a hostile stream (10,000 EDS names of 200 characters, repeated). */
  hostile?: boolean;
  /** The first N services' accounts each get an Egress (an HTTP host on 80, an HTTPS host on 443). */
  egressPolicies?: number;
  /** The first N services each get an IngressBackend admitting 10.0.0.0/8 over http on their target port. */
  ingressBackends?: number;
  /** Controller replicas sharing the CA and the manifests; > 1 measures a failover instead of the storm. */
  replicas?: number;
  /** Services get a clusterIP, as the API server assigns one (outbound chains then match it). */
  clusterIPs?: boolean;
}

export const BENCH_USAGE = `skein benchmark — a controller and N real mTLS ADS clients on this machine

Usage: node dist/test/bench/main.js [flags]   (or: make bench BENCH_ARGS="...")

  --proxies N              sidecar proxies = pods (default 500)
  --services S             services, 2+ pods each (default N/2)
  --mode smi|permissive    MeshConfig traffic mode (default smi)
  --changes K              repetitions of each change kind (default 10)
  --workers W              proxy-fleet processes (default: one per core)
  --fleet-transport T      h2: each proxy a bare HTTP/2 client, as lean as an Envoy's ADS
                           connection (default); grpc-js: grpc-js's full client per proxy
  --json FILE              also write the results as JSON
  --min-push-interval DUR  passed to the controller (default: its own, 100ms)
  --quiet-ms MS            fleet (and controller CPU) silence that ends a change measurement (default 300)
  --idle-ms MS             idle window after convergence (default 5000)
  --controller-node-args=A Node flags for the controller instead of the shipped ones
                           (pkg/controller/node-flags.ts), space-separated; "=" then empty for none
  --cpu-prof DIR           run the controller and the fleet workers under node --cpu-prof, profiles in DIR
  --skip-storm             skip the kill/restart phase (a SIGKILLed controller writes no profile)
  --skip-tick              skip the idle window around the controller's one-minute resync ticker
  --delta                  proxies speak Delta ADS (DeltaAggregatedResources) instead of SotW
  --minimal-node           the first request of a stream carries node id and cluster only, instead
                           of Envoy 1.40's whole Node (~61 KB, test/bench/fixtures) as by default
  --hostile                time endpoint changes without, then with, one extra mTLS stream that
                           subscribes to 10,000 EDS names of 200 characters again and again
  --egress-policies N      the first N services' accounts (at most S) each get an Egress allowing
                           one HTTP host on port 80 and one HTTPS host on 443 (default 0)
  --ingress-backends N     the first N services (at most S) each get an IngressBackend admitting
                           10.0.0.0/8 over http on their target port (default 0)
  --replicas N             run N controllers sharing the CA and the manifests; each proxy connects
                           to a replica drawn at random (fixed per proxy), the others in a random
                           order when it is lost; instead of the storm,
                           replica 0 is SIGKILLed (not restarted) and its proxies' move to the
                           survivors is timed (default 1)
  --cluster-ips            give every Service a clusterIP (10.96.0.0/16), as Kubernetes does; by
                           default the local-mode Services have none, so each port's outbound
                           chain is matched on the port alone (headless)
  --keep                   keep the temporary manifests and state directory
  --timeout-s S            wait at most S s for initial convergence and for the storm (default 120)
  -h, --help
`;

export function positiveInt(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`--${name}: ${JSON.stringify(text)} is not a positive integer`);
  return n;
}

/** The flags `make bench` and `make bench-peer` share: size, mode and the measured phases. */
export const COMMON_BENCH_FLAGS = {
  proxies: { type: 'string' },
  services: { type: 'string' },
  mode: { type: 'string' },
  changes: { type: 'string' },
  workers: { type: 'string' },
  'fleet-transport': { type: 'string' },
  json: { type: 'string' },
  'quiet-ms': { type: 'string' },
  'idle-ms': { type: 'string' },
  'skip-storm': { type: 'boolean' },
  'timeout-s': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

type CommonValues = {
  [K in keyof typeof COMMON_BENCH_FLAGS]?: (typeof COMMON_BENCH_FLAGS)[K]['type'] extends 'boolean'
    ? boolean
    : string;
};

export type CommonBenchOptions = Pick<
  BenchOptions,
  | 'proxies'
  | 'services'
  | 'mode'
  | 'changes'
  | 'workers'
  | 'fleetTransport'
  | 'quietMs'
  | 'idleMs'
  | 'skipStorm'
  | 'timeoutS'
>;

/** The shared flags' values, checked, with the defaults that differ between the two given. */
export function commonBenchOptions(
  v: CommonValues,
  defaults: { proxies: number; timeoutS: number },
): CommonBenchOptions {
  const proxies = positiveInt('proxies', v.proxies, defaults.proxies);
  const services = positiveInt('services', v.services, Math.max(1, Math.floor(proxies / 2)));
  if (proxies < 2 * services) throw new Error(`--services ${services}: every service needs 2 pods (2S <= N)`);
  const mode = v.mode ?? 'smi';
  if (mode !== 'smi' && mode !== 'permissive') throw new Error(`--mode: ${mode} is not smi or permissive`);
  const fleetTransport = v['fleet-transport'] ?? 'h2';
  if (fleetTransport !== 'h2' && fleetTransport !== 'grpc-js')
    throw new Error(`--fleet-transport: ${fleetTransport} is not h2 or grpc-js`);
  return {
    proxies,
    services,
    mode,
    changes: positiveInt('changes', v.changes, 10),
    // One per core: more processes than cores only duplicate per-process costs (each worker's
    // decode cache, JIT, GC) on the cores the controller needs.
    workers: positiveInt('workers', v.workers, availableParallelism()),
    fleetTransport,
    quietMs: positiveInt('quiet-ms', v['quiet-ms'], 300),
    idleMs: positiveInt('idle-ms', v['idle-ms'], 5000),
    skipStorm: v['skip-storm'] ?? false,
    timeoutS: positiveInt('timeout-s', v['timeout-s'], defaults.timeoutS),
  };
}

export function parseBenchArgs(argv: string[]): BenchOptions | 'help' {
  const { values: v } = parseArgs({
    args: argv,
    strict: true,
    options: {
      ...COMMON_BENCH_FLAGS,
      'min-push-interval': { type: 'string' },
      'cpu-prof': { type: 'string' },
      'controller-node-args': { type: 'string' },
      'skip-tick': { type: 'boolean' },
      keep: { type: 'boolean' },
      delta: { type: 'boolean' },
      'minimal-node': { type: 'boolean' },
      hostile: { type: 'boolean' },
      'egress-policies': { type: 'string' },
      'ingress-backends': { type: 'string' },
      replicas: { type: 'string' },
      'cluster-ips': { type: 'boolean' },
    },
  });
  if (v.help) return 'help';
  const common = commonBenchOptions(v, { proxies: 500, timeoutS: 120 });
  const services = common.services;
  const opts: BenchOptions = {
    ...common,
    skipTick: v['skip-tick'] ?? false,
    keep: v.keep ?? false,
  };
  if (v.delta) opts.delta = true;
  if (v['minimal-node']) opts.minimalNode = true;
  if (v.hostile) opts.hostile = true;
  if (v['cluster-ips']) opts.clusterIPs = true;
  // 0 (the default) is allowed: the same run without the objects.
  for (const [flag, key] of [
    ['egress-policies', 'egressPolicies'],
    ['ingress-backends', 'ingressBackends'],
  ] as const) {
    const text = v[flag];
    if (text === undefined) continue;
    const n = Number(text);
    if (!Number.isInteger(n) || n < 0 || n > services)
      throw new Error(
        `--${flag}: ${JSON.stringify(text)} is not an integer from 0 to the ${services} services`,
      );
    if (n > 0) opts[key] = n;
  }
  const replicas = positiveInt('replicas', v.replicas, 1);
  if (replicas > 1) opts.replicas = replicas;
  if (v.json !== undefined) opts.json = v.json;
  if (v['min-push-interval'] !== undefined) opts.minPushInterval = v['min-push-interval'];
  if (v['cpu-prof'] !== undefined) opts.cpuProfDir = v['cpu-prof'];
  const nodeArgs = v['controller-node-args']?.split(' ').filter((a) => a !== '');
  if (nodeArgs) opts.controllerNodeArgs = nodeArgs;
  return opts;
}
