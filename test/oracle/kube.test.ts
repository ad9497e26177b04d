// The convergence oracle in Kubernetes mode (a real API server and its
// EndpointSlice controller): see oracle.ts and docs/design.md. Short by
// default; SKEIN_ORACLE_LONG=1 (make oracle) runs thousands of steps,
// SKEIN_ORACLE_SEED replays a failure.
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { CoreV1Api } from '@kubernetes/client-node';
import { acquireCluster } from '../support/cluster.js';
import { KubeBackend } from './backends.js';
import { oracleSettings, runOracle } from './oracle.js';

const { seed, steps } = oracleSettings(120, 7);

test(`Kubernetes mode: every proxy converges on what a fresh controller serves (seed ${seed}, ${steps} steps)`, {
  timeout: 120_000 + steps * 2_000,
}, async (t) => {
  const cluster = await acquireCluster();
  try {
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    const backend = new KubeBackend(
      cluster.kubeConfig,
      core,
      cluster.endpoint.kubeconfigPath,
      randomBytes(3).toString('hex'),
    );
    const result = await runOracle(backend, { seed, steps, convergeMs: 60_000 });
    t.diagnostic(JSON.stringify({ seed, ...result }));
  } finally {
    await cluster.release();
  }
});
