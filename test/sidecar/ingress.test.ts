// Ingress into the mesh through a real Envoy sidecar (test/sidecar/mesh.ts):
// the backend pod is injected; "edge" pods in a namespace outside the mesh
// (no sidecar, their own network namespaces) stand in for a third-party
// ingress controller and call the backend's pod IP directly, as an ingress
// controller does. Every assertion is on traffic through the backend's Envoy
// or its admin stats.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { createNamespace } from '../support/kube.js';
import { eventually } from '../support/kube-registry-fixture.js';
import type { RunningPod } from '../support/pod-runner.js';
import { APP_IMAGE, HTTP_PORT, MeshClient, SidecarMesh, sidecarSuiteSkipReason } from './mesh.js';

const sfx = randomBytes(3).toString('hex');
const skip = await sidecarSuiteSkipReason();

describe('ingress into the mesh through a real Envoy sidecar', { skip, timeout: 300_000 }, () => {
  let mesh: SidecarMesh;
  let backend: RunningPod;
  const edge = new Map<string, { pod: RunningPod; client: MeshClient }>();
  const edgeNs = `edge-${sfx}`;

  async function startEdge(name: string): Promise<void> {
    await mesh.api.request('POST', `/api/v1/namespaces/${edgeNs}/pods`, {
      body: {
        metadata: { name, labels: { app: name } },
        spec: {
          nodeName: 'test-node',
          containers: [
            {
              name: 'app',
              image: APP_IMAGE,
              command: ['mesh-app', 'serve', '--name', name, '--http', String(HTTP_PORT)],
            },
          ],
        },
      },
    });
    const pod = await mesh.runner.run(edgeNs, name);
    edge.set(name, { pod, client: MeshClient.open(pod) });
  }
  const call = (from: string, path: string, host = 'shop.example.com') => {
    const e = edge.get(from);
    assert.ok(e);
    return e.client.http(`http://${backend.net.ip}:${HTTP_PORT}${path}`, 1, { headers: { host } });
  };
  // A 200 is counted with the pod that answered: only web-1 serves here.
  const ok = (o: { counts: Record<string, number> }) => (o.counts['200 web-1'] ?? 0) === 1;

  before(async () => {
    mesh = await SidecarMesh.start(`ing${sfx}`);
    await mesh.setMeshConfig({ traffic: { permissive: false } });
    await mesh.createServiceAccount('web');
    await mesh.createService({
      name: 'web',
      selector: { app: 'web' },
      ports: [{ name: 'http', port: HTTP_PORT }],
    });
    backend = await mesh.startPod({
      name: 'web-1',
      serviceAccount: 'web',
      labels: { app: 'web' },
      serve: ['--http', String(HTTP_PORT)],
    });
    await mesh.waitReady(backend);
    await createNamespace(mesh.core, edgeNs);
    await startEdge('ingress');
    await startEdge('stranger');
  });

  after(async () => {
    for (const e of edge.values()) await e.client.close().catch(() => undefined);
    await mesh?.api.request('DELETE', `/api/v1/namespaces/${edgeNs}`).catch(() => undefined);
    await mesh?.stop();
  });

  test('http: no IngressBackend → refused; allowed from the ingress IP only, on the Ingress paths only', async () => {
    assert.ok(!ok(await call('ingress', '/books')), 'SMI mode without IngressBackend');
    const ingressIp = edge.get('ingress')?.pod.net.ip ?? '';
    await mesh.apply('policy.skein.dev', 'v1alpha1', 'ingressbackends', {
      apiVersion: 'policy.skein.dev/v1alpha1',
      kind: 'IngressBackend',
      metadata: { name: 'web', namespace: mesh.namespace },
      spec: {
        backends: [{ name: 'web', port: { number: HTTP_PORT, protocol: 'http' } }],
        sources: [{ kind: 'IPRange', name: `${ingressIp}/32` }],
      },
    });
    await mesh.apply('networking.k8s.io', 'v1', 'ingresses', {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { name: 'web', namespace: mesh.namespace },
      spec: {
        rules: [
          {
            host: 'shop.example.com',
            http: {
              paths: [
                {
                  path: '/books',
                  pathType: 'Prefix',
                  backend: { service: { name: 'web', port: { number: HTTP_PORT } } },
                },
              ],
            },
          },
        ],
      },
    });
    await eventually(
      'the ingress is admitted',
      async () => assert.ok(ok(await call('ingress', '/books/1'))),
      30_000,
    );
    assert.ok(ok(await call('ingress', '/books')));
    const otherPath = await call('ingress', '/admin');
    assert.equal(otherPath.counts['403'], 1, JSON.stringify(otherPath));
    assert.equal((await call('ingress', '/booksx')).counts['403'], 1, 'Prefix is element-wise');
    assert.equal((await call('ingress', '/books', 'evil.example.com')).counts['403'], 1, 'another host');
    assert.ok(!ok(await call('stranger', '/books')), 'another source IP');
    const stats = await backend.envoyStats('ingress_8080_http');
    assert.ok((stats.get('http.ingress_8080_http.rbac.allowed') ?? 0) >= 2, JSON.stringify([...stats]));
    assert.ok((stats.get('http.ingress_8080_http.rbac.denied') ?? 0) >= 3, JSON.stringify([...stats]));
  });
});
