#!/usr/bin/env node
// The controller's memory before the first proxy (issue 17, docs/performance.md "Memory
// before the first proxy"): for each topology size, start the real controller (local
// mode on the bench's manifests, or Kubernetes mode against a real API server holding the
// same objects), wait for /readyz plus a settle time as the bench does, and read RSS, its
// split by mapping (/proc/<pid>/smaps), CPU to ready, and the V8 heap before and after a
// full GC (hook.ts). Several builds or Node flag sets can be compared in one run, taking
// turns so that load from other work falls on each alike.
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { CONTROLLER_NODE_FLAGS } from '../../pkg/controller/node-flags.js';
import { LABEL_PROXY_UUID } from '../../pkg/mesh/constants.js';
import { KubeClient } from '../../pkg/registry/kube/client.js';
import { ControllerProcess } from '../bench/controller.js';
import { applyTopology, waitForEndpoints } from '../bench/kube-topology.js';
import { BENCH_MESH, planTopology, type Topology, writeTopology } from '../bench/topology.js';
import { DEFAULT_CONTROLLERS, TestCluster } from '../support/cluster.js';
import { applyCrds } from '../support/kube.js';
import { freePorts, sleep } from '../support/processes.js';
import { residentOf } from './smaps.js';

const USAGE = `memory probe — the controller's RSS before any proxy connects

Usage: node dist/test/memory/probe.js [flags]

  --proxies N,N,...     topology sizes (default 16,500,2000; services N/2)
  --mode local|kube     local manifests, or a real API server (default local)
  --variant SPEC        a build and Node flags to measure, repeatable; SPEC is
                        name=<label>[,dist=<dir>][,flags=<node flags separated by spaces>]
                        (default flags: the shipped ones, pkg/controller/node-flags.ts)
                        [,env=<NAME=value separated by spaces>]
                        (default: this build, no flags)
  --repeat R            runs of each variant per size, taking turns (default 2)
  --settle-ms MS        wait after /readyz before reading (default 1000 local, 2000 kube)
  --json FILE           also write every sample as JSON
`;

const here = path.dirname(fileURLToPath(import.meta.url));
const HOOK = path.join(here, 'hook.js');
const MB = 1024 * 1024;

interface Variant {
  name: string;
  dist?: string;
  /** Node flags; the shipped CONTROLLER_NODE_FLAGS unless the spec says `flags=`. */
  flags: readonly string[];
  env: Record<string, string>;
}

export interface Sample {
  variant: string;
  mode: 'local' | 'kube';
  proxies: number;
  readyMs: number;
  cpuToReadyS: number;
  rssMB: number;
  rssAfterGcMB: number;
  nodeBinaryMB: number;
  otherFilesMB: number;
  anonymousMB: number;
  heapCommittedMB: number;
  heapUsedMB: number;
  heapLiveAfterGcMB: number;
  heapCommittedAfterGcMB: number;
  newSpaceCommittedMB: number;
  /** Memory V8 accounts outside its heap (Buffers, ArrayBuffers), after the GC. */
  externalMB: number;
  /** 1-minute load average when read. */
  load1: number;
}

function parseVariant(spec: string): Variant {
  const v: Variant = { name: '', flags: CONTROLLER_NODE_FLAGS, env: {} };
  for (const part of spec.split(/,(?=name=|dist=|flags=|env=)/)) {
    const eq = part.indexOf('=');
    const key = part.slice(0, eq);
    const value = part.slice(eq + 1);
    if (key === 'name') v.name = value;
    else if (key === 'dist') v.dist = path.resolve(value);
    else if (key === 'flags') v.flags = value.split(' ').filter((f) => f !== '');
    else if (key === 'env')
      for (const pair of value.split(' ').filter((p) => p.includes('=')))
        v.env[pair.slice(0, pair.indexOf('='))] = pair.slice(pair.indexOf('=') + 1);
    else throw new Error(`--variant: unknown key in ${JSON.stringify(spec)}`);
  }
  if (!v.name) throw new Error(`--variant: ${JSON.stringify(spec)} has no name=`);
  return v;
}

const r1 = (x: number) => Math.round(x * 10) / 10;

async function measureOnce(
  variant: Variant,
  mode: 'local' | 'kube',
  topo: Topology,
  source:
    | { manifestsDir: string }
    | { kube: { kubeconfigPath: string; meshName: string; namespace: string } },
  settleMs: number,
): Promise<Sample> {
  const root = await mkdtemp(path.join(tmpdir(), 'skein-memory-'));
  const statsFile = path.join(root, 'heap.json');
  const [adsPort, httpPort] = await freePorts(2);
  if (adsPort === undefined || httpPort === undefined) throw new Error('no free ports');
  const t0 = Date.now();
  const c = await ControllerProcess.start(
    {
      ...source,
      stateDir: path.join(root, 'state'),
      adsPort,
      httpPort,
      nodeArgs: [...variant.flags, '--import', HOOK],
      ...(variant.dist ? { dist: variant.dist } : {}),
      env: { ...variant.env, SKEIN_MEMORY_PROBE_OUT: statsFile },
    },
    120_000,
  );
  try {
    const readyMs = Date.now() - t0;
    const cpuToReadyS = c.cpu();
    await sleep(settleMs);
    const rss = c.rss();
    const parts = residentOf(c.pid, process.execPath);
    process.kill(c.pid, 'SIGUSR2');
    let heap: { before: HeapFigures; after: HeapFigures } | undefined;
    for (let i = 0; i < 600 && !heap; i++) {
      await sleep(100);
      try {
        heap = JSON.parse(readFileSync(statsFile, 'utf8'));
      } catch {
        // not written yet
      }
    }
    if (!heap) throw new Error('the memory hook wrote nothing (was --import honoured?)');
    // V8 unmaps freed pages from a background task: give it a moment.
    await sleep(500);
    const rssAfterGc = c.rss();
    return {
      variant: variant.name,
      mode,
      proxies: topo.proxies.length,
      readyMs,
      cpuToReadyS: Math.round(cpuToReadyS * 100) / 100,
      rssMB: r1(rss / MB),
      rssAfterGcMB: r1(rssAfterGc / MB),
      nodeBinaryMB: r1(parts?.nodeBinaryMB ?? Number.NaN),
      otherFilesMB: r1(parts?.otherFilesMB ?? Number.NaN),
      anonymousMB: r1(parts?.anonymousMB ?? Number.NaN),
      heapCommittedMB: r1(heap.before.heapTotalMB),
      heapUsedMB: r1(heap.before.heapUsedMB),
      heapLiveAfterGcMB: r1(heap.after.heapUsedMB),
      heapCommittedAfterGcMB: r1(heap.after.heapTotalMB),
      externalMB: r1(heap.after.externalMB),
      newSpaceCommittedMB: r1(heap.before.spaces['new_space']?.committedMB ?? Number.NaN),
      load1: r1(loadavg()[0] ?? 0),
    };
  } finally {
    await c.stop();
    await rm(root, { recursive: true, force: true });
  }
}

interface HeapFigures {
  externalMB: number;
  heapTotalMB: number;
  heapUsedMB: number;
  spaces: Record<string, { committedMB: number }>;
}

const COLUMNS: [keyof Sample, string][] = [
  ['variant', 'variant'],
  ['proxies', 'proxies'],
  ['rssMB', 'RSS'],
  ['rssAfterGcMB', 'RSS after GC'],
  ['nodeBinaryMB', 'node binary'],
  ['otherFilesMB', 'other files'],
  ['anonymousMB', 'anon'],
  ['heapCommittedMB', 'heap committed'],
  ['heapUsedMB', 'heap used'],
  ['heapLiveAfterGcMB', 'live after GC'],
  ['heapCommittedAfterGcMB', 'committed after GC'],
  ['newSpaceCommittedMB', 'new space'],
  ['externalMB', 'external'],
  ['cpuToReadyS', 'CPU to ready (s)'],
  ['readyMs', 'ready (ms)'],
  ['load1', 'load'],
];

function row(cells: (string | number)[]): string {
  return `| ${cells.join(' | ')} |`;
}

async function main(argv: string[]): Promise<number> {
  const { values: v } = parseArgs({
    args: argv,
    strict: true,
    options: {
      proxies: { type: 'string' },
      mode: { type: 'string' },
      variant: { type: 'string', multiple: true },
      repeat: { type: 'string' },
      'settle-ms': { type: 'string' },
      json: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (v.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const mode = v.mode ?? 'local';
  if (mode !== 'local' && mode !== 'kube') throw new Error(`--mode: ${mode} is not local or kube`);
  const sizes = (v.proxies ?? '16,500,2000').split(',').map(Number);
  const variants = (v.variant ?? ['name=this build']).map(parseVariant);
  const repeat = Number(v.repeat ?? 2);
  const settleMs = Number(v['settle-ms'] ?? (mode === 'kube' ? 2000 : 1000));
  const samples: Sample[] = [];
  process.stdout.write(`${row(COLUMNS.map(([, h]) => h))}\n${row(COLUMNS.map(() => '---'))}\n`);
  const record = (s: Sample) => {
    samples.push(s);
    process.stdout.write(`${row(COLUMNS.map(([k]) => s[k]))}\n`);
  };
  for (const proxies of sizes) {
    const opts = { proxies, services: Math.max(1, Math.floor(proxies / 2)), permissive: false };
    const root = await mkdtemp(path.join(tmpdir(), 'skein-memory-topo-'));
    let cluster: TestCluster | undefined;
    try {
      if (mode === 'local') {
        const topo = await writeTopology(opts, path.join(root, 'manifests'));
        for (let i = 0; i < repeat; i++)
          for (const variant of variants)
            record(await measureOnce(variant, mode, topo, { manifestsDir: topo.dir }, settleMs));
      } else {
        cluster = await TestCluster.start({ controllers: [...DEFAULT_CONTROLLERS, 'endpoints-controller'] });
        const kc = cluster.kubeConfig();
        const api = new KubeClient({ kubeConfig: kc });
        await applyCrds(kc);
        const topo = planTopology(opts, root);
        await applyTopology(api, topo, { namespace: {}, proxyUuid: LABEL_PROXY_UUID });
        await waitForEndpoints(api, topo, 300_000);
        const kube = {
          kubeconfigPath: cluster.kubeconfigPath,
          meshName: BENCH_MESH,
          namespace: 'skein-system',
        };
        for (let i = 0; i < repeat; i++)
          for (const variant of variants) record(await measureOnce(variant, mode, topo, { kube }, settleMs));
      }
    } finally {
      await cluster?.stop();
      await rm(root, { recursive: true, force: true });
    }
  }
  if (v.json) {
    const { writeFile } = await import('node:fs/promises');
    await writeFile(v.json, `${JSON.stringify(samples, null, 2)}\n`);
  }
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(
      `memory probe: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(1);
  },
);
