// One benchmark run: topology, controller, fleet, measured phases, result.
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePorts, sleep } from '../support/processes.js';
import type { BenchOptions } from './args.js';
import { ChangeDriver } from './changes.js';
import { ControllerGroup, ControllerProcess } from './controller.js';
import { Fleet } from './fleet.js';
import { measureHostile } from './hostile.js';
import { measureLoopbackTls } from './loopback.js';
import {
  measureChanges,
  measureFailover,
  measureIdle,
  measureInitial,
  measureStorm,
  measureTick,
} from './measure.js';
import { nowMs, replicaOf } from './protocol.js';
import { type BenchResult, machine } from './report.js';
import { round } from './stats.js';
import { writeTopology } from './topology.js';

const MB = 1024 * 1024;

function progress(text: string): void {
  if (process.env['SKEIN_BENCH_QUIET'] !== '1') process.stderr.write(`[bench] ${text}\n`);
}

export async function runBench(o: BenchOptions): Promise<BenchResult> {
  const started = nowMs();
  const root = await mkdtemp(path.join(tmpdir(), 'skein-bench-'));
  const dir = path.join(root, 'manifests');
  const stateDir = path.join(root, 'state');
  let controller: ControllerProcess | undefined;
  /** Replicas 1..n-1 with --replicas (replica 0 is `controller`). */
  const others: ControllerProcess[] = [];
  let fleet: Fleet | undefined;
  try {
    const topo = await writeTopology(
      {
        proxies: o.proxies,
        services: o.services,
        permissive: o.mode === 'permissive',
        egressPolicies: o.egressPolicies ?? 0,
        ingressBackends: o.ingressBackends ?? 0,
        clusterIPs: o.clusterIPs ?? false,
      },
      dir,
    );
    progress(`topology in ${dir}: ${topo.proxies.length} proxies, ${topo.services.length} services`);
    // Once per run, before the controller starts: the bound every figure is read against.
    const loopback = await measureLoopbackTls();
    progress(`loopback TLS 1.3: ${round(loopback.mbPerS)} MB/s (best of ${loopback.roundsMbPerS.length})`);
    const [adsPort, httpPort] = await freePorts(2);
    if (adsPort === undefined || httpPort === undefined) throw new Error('no free ports');
    const tSpawn = nowMs();
    controller = await ControllerProcess.start({
      manifestsDir: dir,
      stateDir,
      adsPort,
      httpPort,
      ...(o.minPushInterval ? { minPushInterval: o.minPushInterval } : {}),
      ...(o.cpuProfDir ? { cpuProfDir: path.resolve(o.cpuProfDir) } : {}),
      ...(o.controllerNodeArgs ? { nodeArgs: o.controllerNodeArgs } : {}),
    });
    const startupMs = nowMs() - tSpawn;
    const replicas = o.replicas ?? 1;
    if (replicas > 1) {
      // The others share replica 0's CA (as replicas share the CA Secret in Kubernetes) and the
      // manifests; each keeps its own state directory for the files it writes.
      const ports = await freePorts(2 * (replicas - 1));
      const launches = Array.from({ length: replicas - 1 }, (_, i) => ({
        manifestsDir: dir,
        stateDir: path.join(root, `state-${i + 1}`),
        adsPort: ports[2 * i] ?? 0,
        httpPort: ports[2 * i + 1] ?? 0,
        ...(o.minPushInterval ? { minPushInterval: o.minPushInterval } : {}),
        ...(o.cpuProfDir ? { cpuProfDir: path.resolve(o.cpuProfDir) } : {}),
      }));
      for (const l of launches)
        await cp(path.join(stateDir, 'ca'), path.join(l.stateDir, 'ca'), { recursive: true });
      others.push(...(await Promise.all(launches.map((l) => ControllerProcess.start(l)))));
    }
    const all = new ControllerGroup([controller, ...others]);
    const measured = replicas > 1 ? all : controller;
    await sleep(1000);
    const baselineRss = all.rss();
    const idleCpu0 = all.cpu();
    progress(
      `controller ready in ${Math.round(startupMs)} ms, RSS ${round(baselineRss / MB)} MB; issuing proxy certs`,
    );

    const started2 = await Fleet.start({
      workers: o.workers,
      proxies: topo.proxies.map((p) => ({ index: p.index, cn: p.cn, spiffe: p.spiffe })),
      address: `127.0.0.1:${adsPort}`,
      ...(others.length > 0
        ? { replicas: [controller, ...others].map((c) => `127.0.0.1:${c.launch.adsPort}`) }
        : {}),
      caDir: path.join(stateDir, 'ca'),
      delta: o.delta ?? false,
      minimalNode: o.minimalNode ?? false,
      transport: o.fleetTransport,
      ...(o.cpuProfDir ? { cpuProfDir: path.resolve(o.cpuProfDir) } : {}),
    });
    fleet = started2.fleet;
    const idleCpuBeforeFleet = all.cpu() - idleCpu0;
    progress(`${fleet.size} certificates issued in ${Math.round(started2.certMs)} ms; connecting`);

    const initial = await measureInitial(fleet, measured, o.timeoutS * 1000);
    if (initial.incomplete > 0) {
      const missing = await fleet.diagnose();
      progress(`${initial.incomplete} proxies incomplete, e.g. ${JSON.stringify(missing.slice(0, 3))}`);
    }
    progress(`initial convergence ${Math.round(initial.convergenceMs)} ms; idle window`);
    const idle = await measureIdle(fleet, measured, o.idleMs);
    const convergedRss = all.rss();

    progress(`${o.changes} x 5 changes`);
    const driver = new ChangeDriver(topo);
    const changes = await measureChanges(fleet, measured, driver, o.changes, o.quietMs);

    let hostile: BenchResult['hostile'];
    const victim = topo.proxies[0];
    if (o.hostile && victim) {
      progress('endpoint changes without, then with, a hostile stream');
      hostile = await measureHostile(fleet, driver, {
        address: `127.0.0.1:${adsPort}`,
        caDir: path.join(stateDir, 'ca'),
        // A compromised pod: a real proxy's identity, its own sidecar still connected.
        cn: victim.cn,
        spiffe: victim.spiffe,
        delta: o.delta ?? false,
        changes: Math.max(5, o.changes),
        quietMs: o.quietMs,
        firstK: o.changes,
      });
    }

    let tick: BenchResult['tick'];
    if (!o.skipTick) {
      progress('idle window around the one-minute resync ticker');
      tick = await measureTick(fleet, controller);
    }
    let storm: BenchResult['storm'];
    let failover: BenchResult['failover'];
    if (others.length > 0 && !o.skipStorm) {
      const n = others.length + 1;
      progress(`failover: SIGKILL of replica 0 of ${n}; its proxies move to the others`);
      const held = new Set(topo.proxies.filter((p) => replicaOf(p.index, n) === 0).map((p) => p.index));
      failover = await measureFailover(fleet, controller, others, held, o.timeoutS * 1000);
    } else if (!o.skipStorm) {
      progress('reconnect storm: SIGKILL and restart');
      const launch = controller.launch;
      const s = await measureStorm(fleet, controller, o.timeoutS * 1000, () =>
        ControllerProcess.start(launch),
      );
      controller = s.controller;
      storm = s.result;
    }
    const warnings = all.problems();
    const fleetStats = await fleet.stop();
    fleet = undefined;
    return {
      machine: machine(),
      options: o,
      topology: {
        proxies: topo.proxies.length,
        services: topo.services.length,
        backendServices: 2 * topo.services.filter((s) => s.split).length,
        namespaces: topo.namespaces.length,
        trafficSplits: topo.services.filter((s) => s.split).length,
        sourcesPerService: topo.services[0]?.sources.length ?? 0,
        egressPolicies: o.egressPolicies ?? 0,
        ingressBackends: o.ingressBackends ?? 0,
      },
      controller: {
        startupMs: round(startupMs),
        baselineRssMB: round(baselineRss / MB),
        convergedRssMB: round(convergedRss / MB),
        rssPerProxyKB: round((convergedRss - baselineRss) / 1024 / topo.proxies.length),
        idleCpuBeforeFleetS: idleCpuBeforeFleet,
        warnings: warnings.length,
        warningSamples: [...new Set(warnings.map((w) => String(w['msg'])))].slice(0, 5),
      },
      fleet: {
        certIssueMs: round(started2.certMs),
        workers: Math.min(o.workers, topo.proxies.length),
        decodedResources: fleetStats.decoded,
        responses: fleetStats.responses,
      },
      loopback,
      initial,
      idle,
      changes: changes.byKind,
      changeSamples: changes.samples,
      ...(tick ? { tick } : {}),
      ...(hostile ? { hostile } : {}),
      ...(storm ? { storm } : {}),
      ...(failover ? { failover } : {}),
      totalS: (nowMs() - started) / 1000,
    };
  } finally {
    await fleet?.stop();
    await controller?.stop();
    await Promise.all(others.map((c) => c.stop()));
    if (!o.keep) await rm(root, { recursive: true, force: true });
    else progress(`kept ${root}`);
  }
}
