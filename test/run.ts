// What `make test` runs: `node --test <args>` with one test cluster (etcd,
// kube-apiserver, kube-controller-manager) shared by every test file that
// calls acquireCluster(), instead of one cluster per file.
//
//   node dist/test/run.js [--test-concurrency=2 ...] <test files...>
//
// The cluster starts while the first (unit) test files already run; test
// processes find it through $SKEIN_TEST_CLUSTER, a state file written once it
// is ready (acquireCluster waits for it). The cluster is always stopped, and
// the exit code is the test runner's.
//
// Every line the suite's child processes print (test/support/child-logs.ts) and the
// test runner's own report (TAP, with each test file's stdout and stderr) are kept in
// test-results/logs/ ($SKEIN_TEST_LOG_DIR overrides). Once every test has run, all of it
// is searched for private keys (test/support/key-scan.ts): a key in any log fails the run.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { TEST_LOG_DIR_ENV } from './support/child-logs.js';
import { type ClusterEndpoint, SHARED_CLUSTER_ENV, TestCluster } from './support/cluster.js';
import { scanLogDir } from './support/key-scan.js';
import { cleanupNodeHost, NODE_DIR, nodeOwnerAlive } from './support/node-host.js';

// dist/test → repo root.
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const logDir = path.resolve(process.env[TEST_LOG_DIR_ENV] ?? path.join(repoRoot, 'test-results', 'logs'));
await rm(logDir, { recursive: true, force: true });
await mkdir(logDir, { recursive: true });
// This process's own children (the shared cluster) are recorded too.
process.env[TEST_LOG_DIR_ENV] = logDir;

const dir = await mkdtemp(path.join(tmpdir(), 'skein-test-run-'));
const stateFile = path.join(dir, 'cluster.json');

/** Written by rename so a reader never sees half a file. */
async function writeState(content: unknown): Promise<void> {
  const tmp = `${stateFile}.tmp`;
  await writeFile(tmp, JSON.stringify(content), { mode: 0o600 });
  await rename(tmp, stateFile);
}

const startedAt = Date.now();
const cluster = TestCluster.start().then(
  async (c) => {
    const endpoint: ClusterEndpoint = {
      server: c.server,
      caPem: c.caPem,
      adminToken: c.adminToken,
      kubeconfigPath: c.kubeconfigPath,
    };
    await writeState(endpoint);
    process.stderr.write(`test/run: shared test cluster ready in ${Date.now() - startedAt} ms\n`);
    return c;
  },
  async (err: unknown) => {
    const message = err instanceof Error ? err.message : String(err);
    await writeState({ error: message });
    process.stderr.write(`test/run: the shared test cluster did not start: ${message}\n`);
    return undefined;
  },
);

const args = process.argv.slice(2);
// node --test's default reporter (spec on a terminal, else TAP) on stdout, and TAP into the log
// directory; unless the caller chose reporters.
const reporters = args.some((a) => a.startsWith('--test-reporter'))
  ? []
  : [
      `--test-reporter=${process.stdout.isTTY ? 'spec' : 'tap'}`,
      '--test-reporter-destination=stdout',
      '--test-reporter=tap',
      `--test-reporter-destination=${path.join(logDir, 'node-test.tap')}`,
    ];
const child = spawn(process.execPath, ['--test', ...reporters, ...args], {
  stdio: 'inherit',
  env: { ...process.env, [SHARED_CLUSTER_ENV]: stateFile },
});
// Ctrl-C reaches the whole process group; a TERM sent to this process alone is passed on.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));

const code = await new Promise<number>((resolve) =>
  child.once('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0))),
);
await (await cluster)?.stop();
// A test file that starts the test node (test/node/) cleans up after itself, but not when
// it is killed: what it left (containers, mounts, chains, the bridge) goes now.
// (Not a node another run's live process owns.)
if (existsSync(NODE_DIR) && !(await nodeOwnerAlive()))
  await cleanupNodeHost().catch((err: unknown) =>
    process.stderr.write(`test/run: node cleanup: ${String(err)}\n`),
  );
await rm(dir, { recursive: true, force: true });
const logsClean = await logsFreeOfKeys();
process.exit(code !== 0 ? code : logsClean ? 0 : 1);

/** After the whole suite: no log line holds a private key (issue 16, "Secrets never leak"). */
async function logsFreeOfKeys(): Promise<boolean> {
  const started = Date.now();
  const { files, lines, findings } = await scanLogDir(logDir);
  for (const f of findings.slice(0, 20))
    process.stderr.write(`test/run: private key in a log: ${f.file}:${f.line} (${f.kind}, ${f.label})\n`);
  process.stderr.write(
    `test/run: ${findings.length} private key(s) in ${lines} log lines of ${files} files (${logDir}), scanned in ${Date.now() - started} ms\n`,
  );
  return findings.length === 0;
}
