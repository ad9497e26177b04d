// Runs one test cluster until SIGINT/SIGTERM, for sharing it between test
// processes or poking at it by hand:
//
//   node dist/test/support/cluster-main.js [state-file]
//
// writes the endpoint (server, CA, admin token, kubeconfig path) as JSON to the
// state file (default .state/test-cluster.json), then prints the environment to
// point tests (SKEIN_TEST_CLUSTER, see acquireCluster) and tools (KUBECONFIG) at it.
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { type ClusterEndpoint, SHARED_CLUSTER_ENV, TestCluster } from './cluster.js';

const stateFile = path.resolve(process.argv[2] ?? path.join('.state', 'test-cluster.json'));
const cluster = await TestCluster.start({ verbose: process.env.VERBOSE === '1' });
const endpoint: ClusterEndpoint = {
  server: cluster.server,
  caPem: cluster.caPem,
  adminToken: cluster.adminToken,
  kubeconfigPath: cluster.kubeconfigPath,
};
await mkdir(path.dirname(stateFile), { recursive: true });
// By rename: acquireCluster() may be polling for the file and must not read half of it.
await writeFile(`${stateFile}.tmp`, JSON.stringify(endpoint, null, 2), { mode: 0o600 });
await rename(`${stateFile}.tmp`, stateFile);
process.stdout.write(
  `export ${SHARED_CLUSTER_ENV}=${stateFile}\nexport KUBECONFIG=${cluster.kubeconfigPath}\n`,
);

let stopping = false;
const shutdown = async () => {
  if (stopping) return;
  stopping = true;
  await cluster.stop();
  await rm(stateFile, { force: true });
  process.exit(0);
};
process.on('SIGINT', () => void shutdown());
process.on('SIGTERM', () => void shutdown());
