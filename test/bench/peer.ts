// `make bench-peer`: the same topology and the same proxy fleet against Open Service
// Mesh's osm-controller (osm-peer.ts) and against skein in Kubernetes mode, one after
// the other in one run, on one real API server both read the same objects from.

import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { DEFAULT_CA_SECRET } from '../../pkg/controller/options.js';
import { KubeClient } from '../../pkg/registry/kube/client.js';
import { DEFAULT_CONTROLLERS, TestCluster } from '../support/cluster.js';
import { applyCrdFiles, applyCrds } from '../support/kube.js';
import { freePorts, sleep } from '../support/processes.js';
import { ChangeDriver } from './changes.js';
import { ControllerProcess } from './controller.js';
import { Fleet } from './fleet.js';
import type { FleetTransportKind } from './fleet-transport.js';
import { applyTopology, exportCaSecret, kubeChangeSink, waitForEndpoints } from './kube-topology.js';
import { type LoopbackThroughput, measureLoopbackTls } from './loopback.js';
import {
  type ChangeKindResult,
  type ChangeSample,
  type CrashableController,
  type IdleResult,
  type InitialResult,
  measureChanges,
  measureIdle,
  measureInitial,
  measureStorm,
  type StormResult,
} from './measure.js';
import {
  OSM_ADS_SERVER_NAME,
  OSM_CA_SECRET,
  OSM_FLAGS,
  OSM_LABELS,
  OSM_NAMESPACE,
  OSM_PORTS,
  OsmProcess,
  osmCrdFiles,
  osmObjects,
  osmVersion,
  waitForOsmCa,
} from './osm-peer.js';
import { nowMs } from './protocol.js';
import { type Machine, machine } from './report.js';
import { round } from './stats.js';
import { BENCH_MESH, planTopology, type Topology } from './topology.js';

const MB = 1024 * 1024;
// OSM coalesces proxy updates in a 2 s sliding window of at most 10 s
// (pkg/messaging/broker.go) and then recomputes every proxy: on a loaded machine its
// first push can come 6 s or more after the write. A change that pushed nothing waits
// this long before counting as "no push", for both controllers (skein always pushes
// within a second, so it never waits the full time).
const NO_ACK_MIN_MS = 20_000;
/** skein's control-plane namespace (its MeshConfig and CA Secret); kube-topology.ts creates it. */
const SKEIN_NAMESPACE = 'skein-system';

export interface PeerBenchOptions {
  proxies: number;
  services: number;
  mode: 'smi' | 'permissive';
  /** Repetitions of each change kind per controller. */
  changes: number;
  workers: number;
  /** The fleet's client per proxy (fleet-transport.ts), the same for both controllers. */
  fleetTransport: FleetTransportKind;
  quietMs: number;
  idleMs: number;
  /** skein runs under `node --cpu-prof`, its profile written here when it stops cleanly. */
  cpuProfDir?: string;
  timeoutS: number;
  skipStorm: boolean;
  /** Which controllers, in order (default osm, then skein). */
  only?: ('osm' | 'skein')[];
}

export interface PeerRun {
  name: 'osm' | 'skein';
  version: string;
  flags: string[];
  startupMs: number;
  /** RSS with the topology loaded, before any proxy connected. */
  baselineRssMB: number;
  convergedRssMB: number;
  rssPerProxyKB: number;
  initial: InitialResult;
  idle: IdleResult;
  changes: Record<string, ChangeKindResult>;
  /** Every change measured, in order (which one pushed nothing, for instance). */
  changeSamples: ChangeSample[];
  storm?: StormResult;
  /** 1-, 5- and 15-minute load averages when the run started and ended. */
  load: { start: number[]; end: number[] };
  warnings: number;
  warningSamples: string[];
}

export interface PeerBenchResult {
  machine: Machine;
  options: PeerBenchOptions;
  topology: { proxies: number; services: number; namespaces: number; trafficSplits: number };
  runs: PeerRun[];
  /** Loopback TLS 1.3 throughput, measured before the cluster starts: the bound of every time (§4). */
  loopback: LoopbackThroughput;
  totalS: number;
}

function progress(text: string): void {
  if (process.env['SKEIN_BENCH_QUIET'] !== '1') process.stderr.write(`[bench-peer] ${text}\n`);
}

/** What both controllers offer the run: figures from /proc, a crash for the storm, a stop. */
interface PeerController extends CrashableController {
  stop(): Promise<void>;
}

interface PeerSetup {
  name: PeerRun['name'];
  version: string;
  flags: string[];
  start(): Promise<PeerController>;
  /** Writes the root the fleet issues client certificates from into `dir` (ca.crt, ca.key). */
  exportCa(dir: string): Promise<void>;
  address: string;
  serverName?: string;
  warnings(c: PeerController): string[];
}

async function runOne(
  setup: PeerSetup,
  topo: Topology,
  driver: ChangeDriver,
  o: PeerBenchOptions,
  root: string,
): Promise<PeerRun> {
  const load0 = loadavg();
  const t0 = nowMs();
  let controller = await setup.start();
  const startupMs = nowMs() - t0;
  let fleet: Fleet | undefined;
  try {
    // Settled after its start-up burst, the topology loaded, no proxy yet.
    await sleep(2000);
    const baselineRss = controller.rss();
    progress(`${setup.name} ready in ${Math.round(startupMs)} ms, RSS ${round(baselineRss / MB)} MB`);
    const caDir = path.join(root, `${setup.name}-ca`);
    await setup.exportCa(caDir);
    fleet = (
      await Fleet.start({
        workers: o.workers,
        proxies: topo.proxies.map((p) => ({ index: p.index, cn: p.cn, spiffe: p.spiffe })),
        address: setup.address,
        caDir,
        ...(setup.serverName ? { serverName: setup.serverName } : {}),
        delta: false,
        minimalNode: false,
        transport: o.fleetTransport,
      })
    ).fleet;
    const initial = await measureInitial(fleet, controller, o.timeoutS * 1000);
    if (initial.incomplete > 0) {
      const missing = await fleet.diagnose();
      progress(
        `${setup.name}: ${initial.incomplete} proxies incomplete, e.g. ${JSON.stringify(missing.slice(0, 3))}`,
      );
    }
    progress(`${setup.name}: initial convergence ${Math.round(initial.convergenceMs)} ms; idle window`);
    const idle = await measureIdle(fleet, controller, o.idleMs);
    const convergedRss = controller.rss();
    progress(`${setup.name}: ${o.changes} x 5 changes`);
    const changes = await measureChanges(fleet, controller, driver, o.changes, o.quietMs, NO_ACK_MIN_MS);
    let storm: StormResult | undefined;
    if (!o.skipStorm) {
      progress(`${setup.name}: reconnect storm (SIGKILL and restart)`);
      const old = controller;
      const s = await measureStorm(fleet, controller, o.timeoutS * 1000, () => setup.start());
      controller = s.controller;
      storm = s.result;
      await old.stop();
    }
    const warnings = setup.warnings(controller);
    return {
      name: setup.name,
      version: setup.version,
      flags: setup.flags,
      startupMs: round(startupMs),
      baselineRssMB: round(baselineRss / MB),
      convergedRssMB: round(convergedRss / MB),
      rssPerProxyKB: round((convergedRss - baselineRss) / 1024 / topo.proxies.length),
      initial,
      idle,
      changes: changes.byKind,
      changeSamples: changes.samples,
      ...(storm ? { storm } : {}),
      load: { start: load0.map((x) => round(x, 2)), end: loadavg().map((x) => round(x, 2)) },
      warnings: warnings.length,
      warningSamples: [...new Set(warnings)].slice(0, 5),
    };
  } finally {
    await fleet?.stop();
    await controller.stop();
  }
}

export async function runPeerBench(o: PeerBenchOptions): Promise<PeerBenchResult> {
  const started = nowMs();
  const root = await mkdtemp(path.join(tmpdir(), 'skein-bench-peer-'));
  progress('measuring loopback TLS throughput');
  const loopback = await measureLoopbackTls();
  // OSM watches core/v1 Endpoints: the Endpoints controller runs beside the EndpointSlice one.
  progress('starting the test cluster (etcd, kube-apiserver, kube-controller-manager)');
  const cluster = await TestCluster.start({ controllers: [...DEFAULT_CONTROLLERS, 'endpoints-controller'] });
  try {
    const kc = cluster.kubeConfig();
    const api = new KubeClient({ kubeConfig: kc });
    const only = o.only ?? ['osm', 'skein'];
    await applyCrds(kc);
    if (only.includes('osm')) await applyCrdFiles(kc, await osmCrdFiles());
    const topo = planTopology(
      { proxies: o.proxies, services: o.services, permissive: o.mode === 'permissive' },
      root,
    );
    progress(`applying ${topo.proxies.length} pods, ${topo.services.length} services to the API server`);
    // OSM's MeshConfig needs its CRDs, applied only when OSM runs.
    await applyTopology(
      api,
      topo,
      OSM_LABELS,
      only.includes('osm') ? osmObjects(o.mode === 'permissive') : [],
    );
    await waitForEndpoints(api, topo, 120_000);
    const driver = new ChangeDriver(topo, kubeChangeSink(api, OSM_LABELS));
    const [adsPort, httpPort] = await freePorts(2);
    if (adsPort === undefined || httpPort === undefined) throw new Error('no free ports');
    if (adsPort === OSM_PORTS.ads || httpPort === OSM_PORTS.http)
      throw new Error('free port clashes with OSM');
    const skeinLaunch = {
      kube: { kubeconfigPath: cluster.kubeconfigPath, meshName: BENCH_MESH, namespace: SKEIN_NAMESPACE },
      stateDir: path.join(root, 'skein-state'),
      adsPort,
      httpPort,
      ...(o.cpuProfDir ? { cpuProfDir: path.resolve(o.cpuProfDir) } : {}),
    };
    const setups: Record<PeerRun['name'], PeerSetup> = {
      osm: {
        name: 'osm',
        version: osmVersion(),
        flags: [...OSM_FLAGS],
        start: async () => {
          const p = await OsmProcess.start(cluster);
          await waitForOsmCa(api);
          return p;
        },
        exportCa: (dir) =>
          exportCaSecret(
            api,
            { namespace: OSM_NAMESPACE, name: OSM_CA_SECRET, certKey: 'ca.crt', keyKey: 'private.key' },
            dir,
          ),
        address: `127.0.0.1:${OSM_PORTS.ads}`,
        serverName: OSM_ADS_SERVER_NAME,
        warnings: (c) => (c instanceof OsmProcess ? c.problems() : []),
      },
      skein: {
        name: 'skein',
        version: 'this branch',
        flags: [
          '--kubeconfig',
          '…',
          '--mesh-name',
          BENCH_MESH,
          '--namespace',
          SKEIN_NAMESPACE,
          '--log-level',
          'warn',
        ],
        start: () => ControllerProcess.start(skeinLaunch, 60_000),
        exportCa: (dir) =>
          exportCaSecret(
            api,
            { namespace: SKEIN_NAMESPACE, name: DEFAULT_CA_SECRET, certKey: 'ca.crt', keyKey: 'ca.key' },
            dir,
          ),
        address: `127.0.0.1:${adsPort}`,
        warnings: (c) => (c instanceof ControllerProcess ? c.problems().map((l) => String(l['msg'])) : []),
      },
    };
    const runs: PeerRun[] = [];
    for (const name of only) runs.push(await runOne(setups[name], topo, driver, o, root));
    return {
      machine: machine(),
      options: o,
      topology: {
        proxies: topo.proxies.length,
        services: topo.services.length,
        namespaces: topo.namespaces.length,
        trafficSplits: topo.services.filter((s) => s.split).length,
      },
      runs,
      loopback,
      totalS: round((nowMs() - started) / 1000),
    };
  } finally {
    await cluster.stop();
    await rm(root, { recursive: true, force: true });
  }
}
