// Smoke test of the test cluster itself: a real kube-apiserver answers with the
// pinned version, and the real EndpointSlice controller publishes a pod that a
// test marked Ready through the status subresource. On the shared cluster when
// there is one (acquireCluster); restarts are tested in restarts.test.ts.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import { CoreV1Api, DiscoveryV1Api } from '@kubernetes/client-node';
import { acquireCluster, type ClusterEndpoint, clusterRequest } from '../support/cluster.js';
import {
  createNamespace,
  createNode,
  createPod,
  markPodRunning,
  readyAddresses,
  waitFor,
} from '../support/kube.js';

describe('test cluster (etcd + kube-apiserver + kube-controller-manager)', () => {
  let endpoint: ClusterEndpoint;
  let release: () => Promise<void>;
  let core: CoreV1Api;
  let discovery: DiscoveryV1Api;
  // A namespace of its own: the cluster may be shared with other test files.
  const ns = `smoke-${randomBytes(3).toString('hex')}`;

  before(async () => {
    const acquired = await acquireCluster();
    ({ endpoint, release } = acquired);
    core = acquired.kubeConfig.makeApiClient(CoreV1Api);
    discovery = acquired.kubeConfig.makeApiClient(DiscoveryV1Api);
  });
  after(async () => {
    await core?.deleteNamespace({ name: ns }).catch(() => undefined);
    await release?.();
  });

  test('/version reports the Kubernetes release go.mod pins', async () => {
    const goMod = await readFile(new URL('../../../test/cluster/go.mod', import.meta.url), 'utf8');
    const pinned = goMod.match(/k8s\.io\/kubernetes (v1\.(\d+)\.\d+)/);
    assert.ok(pinned?.[1] && pinned[2], 'go.mod requires k8s.io/kubernetes');
    const res = await clusterRequest(endpoint, 'GET', '/version', endpoint.adminToken);
    assert.equal(res.status, 200);
    const version: unknown = JSON.parse(res.body);
    assert.deepEqual(
      {
        gitVersion: Reflect.get(Object(version), 'gitVersion'),
        minor: Reflect.get(Object(version), 'minor'),
      },
      { gitVersion: pinned[1], minor: pinned[2] },
    );
  });

  test('authentication is on: an unknown token is refused', async () => {
    assert.equal((await clusterRequest(endpoint, 'GET', '/api/v1/namespaces', 'not-a-token')).status, 401);
    assert.equal(
      (await clusterRequest(endpoint, 'GET', '/api/v1/namespaces', endpoint.adminToken)).status,
      200,
    );
  });

  test('a Ready pod behind a Service shows up in its EndpointSlice, and leaves when not Ready', async () => {
    await createNode(core);
    await createNamespace(core, ns, { 'skein.dev/monitored-by': 'test' });
    await core.createNamespacedService({
      namespace: ns,
      body: {
        metadata: { name: 'web' },
        spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
      },
    });
    await createPod(core, { namespace: ns, name: 'web-1', labels: { app: 'web' }, ports: [8080] });
    const pod = await markPodRunning(core, ns, 'web-1', '10.244.0.5');
    assert.equal(pod.status?.phase, 'Running');
    assert.deepEqual(
      pod.status?.podIPs?.map((p) => p.ip),
      ['10.244.0.5'],
    );

    await waitFor('EndpointSlice with 10.244.0.5', async () => {
      const addresses = await readyAddresses(discovery, ns, 'web');
      return addresses.join() === '10.244.0.5';
    });

    await markPodRunning(core, ns, 'web-1', '10.244.0.5', false);
    await waitFor('10.244.0.5 no longer ready', async () => {
      const addresses = await readyAddresses(discovery, ns, 'web');
      return addresses.length === 0;
    });
  });
});
