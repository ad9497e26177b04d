// The archives are what the test node's containerd imports: a throwaway
// containerd (its own root, state and socket under a temp dir; the machine's
// /var/lib/containerd and /run/containerd are never touched) accepts each with
// `ctr -n k8s.io images import` and lists it under its full reference.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { access, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { run, type Summary, summary } from './images.js';

const NAMES = ['controller', 'envoy', 'app', 'pause'];
const summaries = await Promise.all(NAMES.map(summary));
const missing = summaries.find((s): s is string => typeof s === 'string');
const hasContainerd = await Promise.all(['/usr/bin/containerd', '/usr/bin/ctr'].map((f) => access(f))).then(
  () => true,
  () => false,
);
const skip =
  missing ??
  (!hasContainerd ? 'no containerd' : process.getuid?.() !== 0 ? 'needs root (containerd)' : undefined);

describe('containerd imports the archives', { skip, timeout: 180_000 }, () => {
  let dir = '';
  let sock = '';
  let daemon: ChildProcess | undefined;
  const ctr = (...args: string[]) =>
    run('/usr/bin/ctr', ['--address', sock, '-n', 'k8s.io', ...args], { maxBuffer: 16 << 20 });

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'skein-containerd-'));
    sock = path.join(dir, 'containerd.sock');
    const config = path.join(dir, 'config.toml');
    await writeFile(
      config,
      [
        'version = 2',
        `root = "${dir}/root"`,
        `state = "${dir}/state"`,
        // Only images, content and snapshots are needed; no CRI server on the side.
        'disabled_plugins = ["io.containerd.grpc.v1.cri"]',
        '[grpc]',
        `  address = "${sock}"`,
        '[ttrpc]',
        `  address = "${sock}.ttrpc"`,
        '[debug]',
        '  address = ""',
        '[metrics]',
        '  address = ""',
        '',
      ].join('\n'),
    );
    daemon = spawn('/usr/bin/containerd', ['--config', config], { stdio: 'ignore' });
    for (let i = 0; ; i++) {
      if (
        await ctr('version').then(
          () => true,
          () => false,
        )
      )
        break;
      if (i > 100) throw new Error('the throwaway containerd did not start');
      await sleep(100);
    }
  });
  after(async () => {
    if (daemon?.pid !== undefined && daemon.exitCode === null) {
      const exited = new Promise((r) => daemon?.once('exit', r));
      daemon.kill('SIGTERM');
      await exited;
    }
    // Unpacking mounted nothing, but a failed test may leave overlay mounts behind.
    await run('sh', ['-c', `grep -o ' ${dir}/[^ ]*' /proc/self/mounts | xargs -r -n1 umount -l`]).catch(
      () => {},
    );
    await rm(dir, { recursive: true, force: true });
  });

  for (const [i, name] of NAMES.entries())
    test(`${name}: imported and unpacked under its reference`, async () => {
      const s = summaries[i] as Summary;
      const imported = await ctr('images', 'import', s.file);
      assert.match(
        imported.stdout,
        new RegExp(
          `unpacking ${s.ref.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(${s.digest}\\)\\.\\.\\.done`,
        ),
      );
      const { stdout } = await ctr('images', 'ls', '-q');
      assert.ok(stdout.split('\n').includes(s.ref), stdout);
    });
});
