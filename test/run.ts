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
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type ClusterEndpoint, SHARED_CLUSTER_ENV, TestCluster } from './support/cluster.js';
import { cleanupNodeHost, NODE_DIR, nodeOwnerAlive } from './support/node-host.js';

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

const child = spawn(process.execPath, ['--test', ...process.argv.slice(2)], {
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
process.exit(code);
