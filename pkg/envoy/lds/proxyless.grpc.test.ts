// Proof against the real client library: grpc-js-xds workloads in child
// processes, configured only by the proxyless LDS/RDS/CDS generators (plus the
// shared EDS) through a static ADS server, make real calls over xDS-managed
// mTLS (gRFC A29) with SMI policy enforced by the server's RBAC filter.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { proxylessBootstrap } from '../../bootstrap/proxyless.js';
import { FakeProxylessMesh, proxyIdentity, spiffe, type Workload } from '../testing/fake-proxyless-mesh.js';
import { type CertFiles, writeTestPki } from '../testing/proxyless-certs.js';
import type { CallResult } from '../testing/proxyless-child.js';
import { type StaticAds, startStaticAds } from '../testing/static-ads.js';

const CHILD = fileURLToPath(new URL('../testing/proxyless-child.js', import.meta.url));
const TARGET = 'xds:///bookstore.bookstore.svc.cluster.local:14001';
const WORKLOADS: readonly Workload[] = ['bookbuyer', 'mallory', 'bookstore-v1', 'bookstore-v2'];

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const addr = srv.address();
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  assert.ok(addr && typeof addr === 'object');
  return addr.port;
}

let dir = '';
let ads: StaticAds | undefined;
const children: ChildProcess[] = [];
const bootstraps = new Map<Workload, string>();
let ports = { v1: 0, v2: 0 };

function startChild(w: Workload, mode: 'server' | 'client', extraEnv: Record<string, string>): ChildProcess {
  const child = spawn(process.execPath, [CHILD, mode], {
    env: { ...process.env, GRPC_XDS_BOOTSTRAP: bootstraps.get(w) ?? '', ...extraEnv },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  child.on('exit', (code) => {
    if (code !== 0 && code !== null) process.stderr.write(`${w} ${mode} exited ${code}: ${stderr}\n`);
  });
  children.push(child);
  return child;
}

/** The first JSON line of the given type a child prints. */
function line(child: ChildProcess, type: string, timeoutMs: number): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${type} line within ${timeoutMs} ms`)), timeoutMs);
    const rl = createInterface({ input: child.stdout ?? process.stdin });
    rl.on('line', (text) => {
      const parsed: unknown = JSON.parse(text);
      if (typeof parsed === 'object' && parsed !== null && 'type' in parsed && parsed.type === type) {
        clearTimeout(timer);
        rl.close();
        resolve({ ...parsed });
      }
    });
    child.on('exit', () => {
      clearTimeout(timer);
      reject(new Error(`child exited before printing ${type}`));
    });
  });
}

function isCounts(v: unknown): v is Record<string, number> {
  return typeof v === 'object' && v !== null && Object.values(v).every((n) => typeof n === 'number');
}
function isCallResult(v: unknown): v is CallResult {
  return (
    typeof v === 'object' &&
    v !== null &&
    'method' in v &&
    typeof v.method === 'string' &&
    'ok' in v &&
    isCounts(v.ok) &&
    'errors' in v &&
    isCounts(v.errors) &&
    'details' in v &&
    Array.isArray(v.details)
  );
}

async function runClient(
  w: Workload,
  calls: { method: string; count: number; metadata?: Record<string, string> }[],
  plaintext = false,
): Promise<Map<string, CallResult>> {
  const child = startChild(w, 'client', {
    SKEIN_TEST_TARGET: TARGET,
    SKEIN_TEST_CALLS: JSON.stringify(calls),
    ...(plaintext ? { SKEIN_TEST_PLAINTEXT: '1' } : {}),
  });
  const out = await line(child, 'results', 15_000);
  const results: unknown = out['results'];
  assert.ok(Array.isArray(results) && results.length === calls.length);
  const byKey = new Map<string, CallResult>();
  calls.forEach((c, i) => {
    const r: unknown = results[i];
    assert.ok(isCallResult(r), JSON.stringify(r));
    byKey.set(`${c.method}${c.metadata ? '+md' : ''}`, r);
  });
  return byKey;
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'skein-proxyless-'));
  ports = { v1: await freePort(), v2: await freePort() };
  // Every pod on loopback; the two versions differ by target port.
  const mesh = new FakeProxylessMesh({
    ips: {
      bookbuyer: '127.0.0.1',
      mallory: '127.0.0.1',
      'bookstore-v1': '127.0.0.1',
      'bookstore-v2': '127.0.0.1',
    },
    targetPorts: ports,
    weights: { v1: 50, v2: 50 },
  });
  const identities: Record<string, string> = {};
  for (const w of WORKLOADS) identities[w] = spiffe(w);
  const pki: Record<string, CertFiles> = await writeTestPki(dir, identities);
  ads = await startStaticAds(mesh);
  for (const w of WORKLOADS) {
    const file = join(dir, `${w}.bootstrap.json`);
    const certFiles = pki[w];
    assert.ok(certFiles);
    const bootstrap = proxylessBootstrap({
      serverUri: `127.0.0.1:${ads.port}`,
      nodeId: proxyIdentity(w).cn,
      certFiles,
    });
    await writeFile(file, JSON.stringify(bootstrap));
    bootstraps.set(w, file);
  }
  const servers = [
    startChild('bookstore-v1', 'server', {
      SKEIN_TEST_NAME: 'bookstore-v1',
      SKEIN_TEST_LISTEN: `127.0.0.1:${ports.v1}`,
    }),
    startChild('bookstore-v2', 'server', {
      SKEIN_TEST_NAME: 'bookstore-v2',
      SKEIN_TEST_LISTEN: `127.0.0.1:${ports.v2}`,
    }),
  ];
  // XdsServer serves only once its Listener arrived and was accepted.
  await Promise.all(servers.map((s) => line(s, 'listening', 15_000)));
});

after(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  await ads?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test('bookbuyer: allowed calls succeed over mTLS, split across both versions; others are PERMISSION_DENIED', async () => {
  const r = await runClient('bookbuyer', [
    { method: 'BuyBook', count: 40 },
    { method: 'StealBook', count: 3 },
    { method: 'Restock', count: 3 },
    { method: 'Restock', count: 3, metadata: { 'x-role': 'clerk' } },
  ]);
  const buy = r.get('BuyBook');
  assert.deepEqual(buy?.errors, {}, JSON.stringify(buy));
  // 50/50 split over 40 calls: each version answers (miss chance 2^-39).
  assert.deepEqual(Object.keys(buy?.ok ?? {}).sort(), ['bookstore-v1', 'bookstore-v2']);
  assert.equal((buy?.ok['bookstore-v1'] ?? 0) + (buy?.ok['bookstore-v2'] ?? 0), 40);
  // Path not in the HTTPRouteGroup.
  assert.deepEqual(r.get('StealBook')?.errors, { PERMISSION_DENIED: 3 });
  // Restock needs the x-role header match.
  assert.deepEqual(r.get('Restock')?.errors, { PERMISSION_DENIED: 3 });
  const restock = r.get('Restock+md');
  assert.deepEqual(restock?.errors, {}, JSON.stringify(restock));
  assert.equal(
    Object.values(restock?.ok ?? {}).reduce((a, b) => a + b, 0),
    3,
  );
});

test('mallory: a meshed identity no TrafficTarget names is denied by RBAC, not unreachable', async () => {
  const r = await runClient('mallory', [{ method: 'BuyBook', count: 4 }]);
  assert.deepEqual(r.get('BuyBook')?.errors, { PERMISSION_DENIED: 4 }, JSON.stringify(r.get('BuyBook')));
});

test('a plaintext caller cannot reach the mTLS-only servers', async () => {
  const r = await runClient('bookbuyer', [{ method: 'BuyBook', count: 2 }], true);
  const res = r.get('BuyBook');
  assert.deepEqual(res?.ok, {});
  assert.deepEqual(Object.keys(res?.errors ?? {}), ['UNAVAILABLE'], JSON.stringify(res));
});

test('no resource was NACKed by any workload', () => {
  assert.deepEqual(ads?.nacks, []);
});
