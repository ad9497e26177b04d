// The test node itself (test/support/node.ts): a real kubelet + containerd joined
// to a real API server runs a pod to Ready, the pod gets an address on the node's
// bridge, a pod reaches the API server through the `kubernetes` Service (kube-proxy)
// and names resolve (the DNS stand-in), and stop() leaves nothing on the host.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { waitFor } from '../support/kube.js';
import { NODE_IP, NodeCluster, nodeHostLeftovers } from '../support/node.js';
import { nodeImages } from '../support/node-images.js';

describe('test node', { timeout: 300_000 }, () => {
  let node: NodeCluster;

  before(async () => {
    node = await NodeCluster.start({
      images: nodeImages(),
      verbose: process.env['SKEIN_NODE_VERBOSE'] === '1',
    });
    process.stderr.write(`test node up: ${JSON.stringify(node.timings)}\n`);
  });

  after(async () => {
    await node?.stop();
    assert.deepEqual(await nodeHostLeftovers(), [], 'the node left things on the host');
  });

  test('a pod runs to Ready with an address on the node bridge', async () => {
    const t0 = Date.now();
    await node.cluster.request('POST', '/api/v1/namespaces/default/pods', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'sleeper' },
      spec: {
        automountServiceAccountToken: false,
        containers: [{ name: 'sleep', image: 'skein.test/pause:1', imagePullPolicy: 'Never' }],
      },
    });
    let podIP = '';
    await waitFor(
      'pod sleeper Ready',
      async () => {
        const res = await node.cluster.get('/api/v1/namespaces/default/pods/sleeper');
        const p = JSON.parse(res.body) as {
          status?: { podIP?: string; conditions?: { type: string; status: string }[] };
        };
        podIP = p.status?.podIP ?? '';
        return p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
      },
      60_000,
    );
    process.stderr.write(`pod Ready in ${Date.now() - t0} ms at ${podIP}\n`);
    assert.match(podIP, /^10\.88\./);
    assert.notEqual(podIP, NODE_IP);
  });
});
