// Root CA rotation with real proxyless gRPC workloads (@grpc/grpc-js-xds
// XdsServer and xds:/// callers): their mTLS identity and trust come from
// the workload files the controller rewrites (gRFC A29 file_watcher, 10 s
// refresh), so each stage waits for that delivery. `skein ca rotate
// --state-dir` asks for it in local mode; no call may fail in any stage.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { LocalMesh, repoRoot, tally } from '../support/local-mesh.js';
import type { JsonLineProcess } from '../support/processes.js';
import { sleep } from '../support/processes.js';

const BOOKSTORE = 'bookstore.bookstore.svc.cluster.local';
const skeinCli = path.join(repoRoot, 'dist', 'cmd', 'skein', 'main.js');

async function skein(args: string[]): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, [skeinCli, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  return { code, out };
}

describe('root CA rotation with proxyless gRPC workloads', { timeout: 300_000 }, () => {
  let mesh: LocalMesh;
  let caller: JsonLineProcess;

  before(async () => {
    // The workloads' file_watcher re-reads every 10 s: a stage ends 12 s after its last write.
    mesh = await LocalMesh.start({ extraArgs: ['--ca-rotation-delivery', '12s'] });
    await Promise.all([
      mesh.startServer('bookstore', 'bookstore-v1', '127.0.0.21', 14021),
      mesh.startServer('bookstore', 'bookstore-v2', '127.0.0.22', 14022),
    ]);
    caller = mesh.startCaller('bookbuyer', 'bookbuyer', BOOKSTORE, mesh.port(14001), [
      '--interval-ms',
      '5',
      '--report-ms',
      '250',
    ]);
  });
  after(async () => {
    await mesh?.stop();
  });

  const caStatus = async () => {
    const res = await fetch(`http://127.0.0.1:${mesh.ports.http}/debug/certs`);
    return ((await res.json()) as { ca: { stage: string; roots: { fingerprint: string }[] } }).ca;
  };

  test('three stages, every call answered, the workload files end on the new root', async () => {
    // Calls flow before anything moves.
    for (let i = 0; i < 40 && Object.keys(tally(caller).ok).length === 0; i++) await sleep(250);
    const oldRoot = (await caStatus()).roots[0]?.fingerprint;
    const url = `http://127.0.0.1:${mesh.ports.http}`;
    const rotate = await skein(['ca', 'rotate', '--state-dir', mesh.stateDir, '--controller-url', url]);
    assert.equal(rotate.code, 0, rotate.out);

    const perStage: Record<string, { calls: number; failures: Record<string, number> }> = {};
    let stage = 'idle';
    let from = caller.lines.length;
    const seen: string[] = [];
    const close = (name: string) => {
      const t = tally(caller, from);
      from = caller.lines.length;
      const s = perStage[name] ?? { calls: 0, failures: {} };
      perStage[name] = s;
      s.calls +=
        Object.values(t.ok).reduce((a, b) => a + b, 0) + Object.values(t.errors).reduce((a, b) => a + b, 0);
      for (const [k, v] of Object.entries(t.errors)) s.failures[k] = (s.failures[k] ?? 0) + v;
    };
    const deadline = Date.now() + 200_000;
    while (!(stage === 'idle' && seen.includes('retire'))) {
      assert.ok(Date.now() < deadline, `rotation stuck in ${stage}`);
      await sleep(250);
      const now = (await caStatus()).stage;
      if (now === stage) continue;
      close(stage);
      stage = now;
      seen.push(now);
    }
    await sleep(12_000);
    close('after');
    process.stderr.write(`proxyless root rotation per stage: ${JSON.stringify(perStage)}\n`);
    assert.deepEqual(seen, ['distribute', 'reissue', 'retire', 'idle']);
    for (const [name, s] of Object.entries(perStage)) {
      assert.deepEqual(s.failures, {}, `${name}: failed calls out of ${s.calls}`);
      if (name !== 'idle') assert.ok(s.calls > 50, `${name}: ${s.calls} calls`);
    }
    const done = await caStatus();
    assert.equal(done.roots.length, 1);
    assert.notEqual(done.roots[0]?.fingerprint, oldRoot);
    const files = path.join(mesh.stateDir, 'workloads', 'bookstore', 'bookstore');
    const ca = await readFile(path.join(files, 'ca.pem'), 'utf8');
    const root = new X509Certificate(ca);
    assert.equal(root.fingerprint256, done.roots[0]?.fingerprint);
    assert.equal(ca.match(/BEGIN CERTIFICATE/g)?.length, 1, 'the old root left the workload bundle');
    assert.ok(new X509Certificate(await readFile(path.join(files, 'cert.pem'))).checkIssued(root));
    // `skein ca status` reads the same page.
    const status = await skein(['ca', 'status', '--controller-url', url]);
    assert.match(status.out, /stage: 0 \(idle\)/);
  });
});
