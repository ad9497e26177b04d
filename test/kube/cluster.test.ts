// Smoke test of the test cluster itself: a real kube-apiserver answers with the
// pinned version, and the real EndpointSlice controller publishes a pod that a
// test marked Ready through the status subresource.
// Must precede @kubernetes/client-node: fills what its undici 8 needs on Node 20.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import { CoreV1Api, DiscoveryV1Api } from '@kubernetes/client-node';
import { TestCluster } from '../support/cluster.js';
import {
  createNamespace,
  createNode,
  createPod,
  markPodRunning,
  readyAddresses,
  waitFor,
} from '../support/kube.js';

describe('test cluster (etcd + kube-apiserver + kube-controller-manager)', () => {
  let cluster: TestCluster;
  let core: CoreV1Api;
  let discovery: DiscoveryV1Api;

  before(async () => {
    cluster = await TestCluster.start();
    const kc = cluster.kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    discovery = kc.makeApiClient(DiscoveryV1Api);
  });
  after(async () => {
    await cluster?.stop();
  });

  test('/version reports the Kubernetes release go.mod pins', async () => {
    const goMod = await readFile(new URL('../../../test/cluster/go.mod', import.meta.url), 'utf8');
    const pinned = goMod.match(/k8s\.io\/kubernetes (v1\.(\d+)\.\d+)/);
    assert.ok(pinned?.[1] && pinned[2], 'go.mod requires k8s.io/kubernetes');
    const res = await cluster.get('/version');
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
    assert.equal((await cluster.get('/api/v1/namespaces', 'not-a-token')).status, 401);
  });

  test('the API server and etcd restart on the same addresses and keep the data', async () => {
    const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'keep' }, data: { k: 'v' } };
    assert.equal((await cluster.request('POST', '/api/v1/namespaces/default/configmaps', cm)).status, 201);

    await cluster.stopApiServer();
    await assert.rejects(cluster.get('/readyz'), /ECONNREFUSED/);
    await cluster.startApiServer();
    assert.equal((await cluster.get('/api/v1/namespaces/default/configmaps/keep')).status, 200);

    await cluster.stopEtcd();
    await cluster.startEtcd();
    // A write succeeds only once the API server reaches the restarted etcd.
    await waitFor('a write after the etcd restart', async () => {
      const again = { ...cm, metadata: { name: 'after-etcd-restart' } };
      return (await cluster.request('POST', '/api/v1/namespaces/default/configmaps', again)).status === 201;
    });
    const res = await cluster.get('/api/v1/namespaces/default/configmaps/keep');
    assert.equal(res.status, 200);
    assert.match(res.body, /"k":"v"/);
  });

  test('a Ready pod behind a Service shows up in its EndpointSlice, and leaves when not Ready', async () => {
    await createNode(core);
    await createNamespace(core, 'smoke', { 'skein.dev/monitored-by': 'test' });
    await core.createNamespacedService({
      namespace: 'smoke',
      body: {
        metadata: { name: 'web' },
        spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
      },
    });
    await createPod(core, { namespace: 'smoke', name: 'web-1', labels: { app: 'web' }, ports: [8080] });
    const pod = await markPodRunning(core, 'smoke', 'web-1', '10.244.0.5');
    assert.equal(pod.status?.phase, 'Running');
    assert.deepEqual(
      pod.status?.podIPs?.map((p) => p.ip),
      ['10.244.0.5'],
    );

    await waitFor('EndpointSlice with 10.244.0.5', async () => {
      const addresses = await readyAddresses(discovery, 'smoke', 'web');
      return addresses.join() === '10.244.0.5';
    });

    await markPodRunning(core, 'smoke', 'web-1', '10.244.0.5', false);
    await waitFor('10.244.0.5 no longer ready', async () => {
      const addresses = await readyAddresses(discovery, 'smoke', 'web');
      return addresses.length === 0;
    });
  });
});
