// The convergence oracle's driver: a seeded random sequence of changes against
// a live controller with connected clients, then a repair step, then a fresh
// controller on the final state; every client's holdings must (eventually)
// equal what the fresh controller gives the same identity. See
// docs/design.md, "The convergence oracle".
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { proxyCommonName } from '../../pkg/mesh/identity.js';
import { proxyCredentials } from '../support/envoy-like.js';
import { Prng } from '../support/prng.js';
import { type JsonLineProcess, sleep } from '../support/processes.js';
import { type ClientSpec, type Dial, OracleClient } from './clients.js';
import { differences } from './compare.js';
import {
  describeStep,
  initialObjects,
  type KubeObj,
  PODS,
  podIp,
  podUuid,
  randomSteps,
  type Step,
  type Universe,
  WorldState,
} from './world.js';

/** What a running controller offers clients. */
export interface Endpoint {
  adsPort: number;
  insecurePort: number;
  /** Holds `ca/` (the CA both controllers share). */
  stateDir: string;
  process: JsonLineProcess;
}

/** One registry's way of holding objects and running controllers on them. */
export interface Backend {
  readonly universe: Universe;
  /** Writes the initial objects and starts the live controller. */
  setup(initial: readonly KubeObj[]): Promise<Endpoint>;
  /** `refused`: the API server said no (nothing changed); `deleted`: the object went instead. */
  apply(obj: KubeObj): Promise<'applied' | 'refused' | 'deleted'>;
  /** Local only: the object's file becomes unparseable. */
  breakYaml(obj: KubeObj): Promise<void>;
  remove(obj: KubeObj): Promise<void>;
  /** Stops the live controller and starts it again on the same ports and state. */
  restart(): Promise<Endpoint>;
  /** A second controller, started now on the final state, sharing the live one's CA. */
  startFresh(): Promise<Endpoint>;
  stop(): Promise<void>;
}

export interface OracleOptions {
  seed: number;
  steps: number;
  /** How long the holdings may take to converge after the last change. */
  convergeMs: number;
}

export interface OracleResult {
  steps: number;
  restarts: number;
  reconnects: number;
  responses: number;
  ms: number;
}

/**
 * The seed and step count from the environment (SKEIN_ORACLE_SEED, a number or
 * `random`; SKEIN_ORACLE_STEPS), or these defaults. The short run in `make test`
 * keeps one seed, so CI checks the same sequence every time; the long run
 * (SKEIN_ORACLE_LONG=1, `make oracle`) explores a new random seed each time.
 */
export function oracleSettings(defaultSteps: number, defaultSeed: number): { seed: number; steps: number } {
  const seedEnv = process.env['SKEIN_ORACLE_SEED'];
  const stepsEnv = process.env['SKEIN_ORACLE_STEPS'];
  const long = process.env['SKEIN_ORACLE_LONG'] === '1';
  const random = seedEnv === 'random' || (long && !seedEnv);
  return {
    seed: random ? Math.floor(Math.random() * 2 ** 31) : seedEnv ? Number(seedEnv) : defaultSeed,
    steps: stepsEnv ? Number(stepsEnv) : long ? 3000 : defaultSteps,
  };
}

/** The connected proxies: both protocols, both kinds, mTLS and plaintext, named and wildcard. */
export function clientSpecs(u: Universe): ClientSpec[] {
  const [a = '', b = '', c = ''] = u.namespaces;
  const targets = u.namespaces.flatMap((ns) =>
    ['web', 'api', 'web-v2'].flatMap((svc) => [
      `${svc}.${ns}.svc.cluster.local:80`,
      `${svc}.${ns}.svc.cluster.local:14001`,
    ]),
  );
  const serverListeners = (ns: string, pod: string) =>
    [0, 1].flatMap((v) =>
      [8080, 14001].map(
        (port) => `grpc/server?xds.resource.listening_address=${podIp(u, ns, pod, v)}:${port}`,
      ),
    );
  const spec = (
    label: string,
    protocol: 'sotw' | 'delta',
    kind: 'sidecar' | 'grpc',
    namespace: string,
    pod: string,
    insecure: boolean,
  ): ClientSpec => ({
    label,
    protocol,
    kind,
    namespace,
    serviceAccount: PODS[pod] ?? 'default',
    uuid: podUuid(u, namespace, pod),
    insecure,
    ...(kind === 'grpc' ? { listeners: [...targets, ...serverListeners(namespace, pod)] } : {}),
  });
  return [
    spec(`sidecar SotW mTLS ${a}/web-1`, 'sotw', 'sidecar', a, 'web-1', false),
    spec(`sidecar Delta mTLS ${b}/api-1`, 'delta', 'sidecar', b, 'api-1', false),
    spec(`sidecar Delta plaintext ${c}/client-1`, 'delta', 'sidecar', c, 'client-1', true),
    spec(`proxyless SotW plaintext ${a}/client-1`, 'sotw', 'grpc', a, 'client-1', true),
    spec(`proxyless Delta mTLS ${c}/web-2`, 'delta', 'grpc', c, 'web-2', false),
  ];
}

async function dialer(spec: ClientSpec, endpoint: () => Endpoint): Promise<() => Dial> {
  const identity = {
    uuid: spec.uuid,
    kind: spec.kind,
    namespace: spec.namespace,
    serviceAccount: spec.serviceAccount,
  };
  const nodeId = proxyCommonName({ ...identity, trustDomain: 'cluster.local' });
  if (spec.insecure) {
    const credentials = grpc.credentials.createInsecure();
    return () => ({ address: `127.0.0.1:${endpoint().insecurePort}`, credentials, nodeId });
  }
  // Issued once: both controllers (and every restart) share the CA.
  const { credentials } = await proxyCredentials(endpoint().stateDir, identity);
  return () => ({ address: `localhost:${endpoint().adsPort}`, credentials, nodeId });
}

export class OracleFailure extends Error {}

/**
 * Runs one seeded sequence against `backend`. Throws OracleFailure with the
 * seed, the differences and the steps when the live controller's proxies do
 * not converge on what a fresh controller serves.
 */
export async function runOracle(backend: Backend, o: OracleOptions): Promise<OracleResult> {
  const started = Date.now();
  const u = backend.universe;
  const r = new Prng(o.seed);
  const initial = initialObjects(u, r);
  const steps = randomSteps(u, r, o.steps);
  const done: string[] = [];
  const world = new WorldState(initial);
  let live = await backend.setup(initial);
  const specs = clientSpecs(u);
  const clients = await Promise.all(specs.map(async (s) => new OracleClient(s, await dialer(s, () => live))));
  const fresh: OracleClient[] = [];
  let restarts = 0;
  const fail = (what: string): OracleFailure => {
    const file = path.join(tmpdir(), `skein-oracle-${o.seed}.steps.txt`);
    writeFileSync(file, `${done.join('\n')}\n`);
    const tail =
      done.length > 60 ? [`… ${done.length - 60} earlier steps in ${file}`, ...done.slice(-60)] : done;
    return new OracleFailure(
      `convergence oracle failed (seed ${o.seed}, ${o.steps} steps; rerun with SKEIN_ORACLE_SEED=${o.seed} SKEIN_ORACLE_STEPS=${o.steps}):\n${what}\nsteps:\n${tail.join('\n')}`,
    );
  };

  const run = async (s: Step): Promise<void> => {
    done.push(describeStep(s));
    switch (s.op) {
      case 'apply': {
        const outcome = await backend.apply(s.obj);
        world.record(s, outcome === 'applied');
        if (outcome === 'deleted') world.record({ op: 'delete', obj: s.obj }, true);
        if (outcome !== 'applied') done.push(`  → ${outcome}`);
        return;
      }
      case 'break':
        await backend.breakYaml(s.obj);
        world.record(s, true);
        return;
      case 'delete':
        await backend.remove(s.obj);
        world.record(s, true);
        return;
      case 'burst':
        for (const b of s.steps) await run(b);
        return;
      case 'restart':
        live = await backend.restart();
        restarts++;
        return;
      case 'pause':
        await sleep(s.ms);
        return;
    }
  };

  try {
    for (const c of clients) c.start();
    for (const s of steps) await run(s);
    for (const s of world.repair()) await run(s);
    done.push('— repaired; fresh controller started —');
    const freshEndpoint = await backend.startFresh();
    for (const s of specs) fresh.push(new OracleClient(s, await dialer(s, () => freshEndpoint)));
    for (const c of fresh) c.start();
    const deadline = Date.now() + o.convergeMs;
    let last: string[] = [];
    for (;;) {
      await sleep(500);
      last = clients.flatMap((c, i) => {
        const f = fresh[i];
        if (!f) return [];
        if (!c.ready() || !f.ready())
          return [`${c.spec.label}: not in sync yet (${c.describe()} | fresh ${f.describe()})`];
        return differences(c.snapshot(), f.snapshot()).map((d) => `${c.spec.label}: ${d}`);
      });
      if (last.length === 0) {
        // Equal once; equal again a while later, so a push still on its way cannot hide a difference.
        await sleep(1000);
        const again = clients.flatMap((c, i) => differences(c.snapshot(), fresh[i]?.snapshot() ?? new Map()));
        if (again.length === 0) break;
        last = again;
      }
      if (Date.now() > deadline) {
        const about = [...clients.map((c) => c.describe()), ...fresh.map((c) => `fresh ${c.describe()}`)];
        throw fail(
          `${last.slice(0, 40).join('\n')}\n${last.length > 40 ? `… ${last.length - 40} more\n` : ''}${about.join('\n')}`,
        );
      }
    }
    // Equal, and whole: every name a client was given to follow is served (Envoy would
    // otherwise wait for it, warming).
    const dangling = fresh.flatMap((c) => c.danglingReferences().map((p) => `${c.spec.label}: ${p}`));
    if (dangling.length > 0)
      throw fail(`the converged configuration has dangling references:\n${dangling.join('\n')}`);
    // Sanity: the sequence did what it claims (clients reconnected across the restarts, and held something).
    const held = clients.reduce((n, c) => n + [...c.snapshot().values()].reduce((m, t) => m + t.size, 0), 0);
    if (held === 0) throw fail('no client holds any resource: the comparison would be vacuous');
    if (restarts > 0 && clients.some((c) => c.streams < 2))
      throw fail(
        `a client never reconnected after ${restarts} restarts: ${clients.map((c) => c.describe()).join('; ')}`,
      );
    return {
      steps: o.steps,
      restarts,
      reconnects: clients.reduce((n, c) => n + c.streams - 1, 0),
      responses: clients.reduce((n, c) => n + c.responses, 0),
      ms: Date.now() - started,
    };
  } finally {
    await Promise.all([...clients, ...fresh].map((c) => c.stop()));
    await backend.stop();
  }
}
