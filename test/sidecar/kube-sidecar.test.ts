// Real Envoy sidecars in pods injected by skein's webhook through the real
// API server's admission chain, run by the test kubelet from what the API
// server stored (test/sidecar/mesh.ts, test/support/pod-runner.ts). Every
// assertion is on traffic that crossed two real Envoys (the caller's sidecar,
// mTLS, the destination's sidecar) or on the Envoys' own admin stats.
//
// Topology (one namespace): bookstore (apex) split over bookstore-v1 and
// bookstore-v2, each serving HTTP 8080, gRPC 9090 and TCP 7070; callers
// bookbuyer (allowed by a TrafficTarget on some routes) and bookthief (not).
// Envoy versions: the injector's default image is the newest supported
// (1.40.0); bookstore-v2 and bookthief pick the oldest (1.36.2) by annotation,
// so every scenario crosses both versions.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { RunningPod } from '../support/pod-runner.js';
import {
  ENVOY_NEWEST,
  ENVOY_OLDEST,
  envoyImage,
  GRPC_PORT,
  HTTP_PORT,
  MeshClient,
  type PodSpec,
  SidecarMesh,
  sidecarSuiteSkipReason,
  TCP_PORT,
} from './mesh.js';

const sfx = randomBytes(3).toString('hex');
const skip = await sidecarSuiteSkipReason();

const SERVE = ['--http', String(HTTP_PORT), '--grpc', String(GRPC_PORT), '--tcp', String(TCP_PORT)];
const STORE_PORTS = [
  { name: 'http', port: HTTP_PORT },
  { name: 'grpc', port: GRPC_PORT, appProtocol: 'grpc' },
  { name: 'tcp-echo', port: TCP_PORT },
];

describe('real Envoy sidecars through the real admission chain', { skip, timeout: 240_000 }, () => {
  let mesh: SidecarMesh;
  const pods = new Map<string, RunningPod>();
  let buyer: MeshClient;
  let thief: MeshClient;
  const store = () => `http://bookstore.${mesh.namespace}.svc.cluster.local:${HTTP_PORT}`;

  before(async () => {
    mesh = await SidecarMesh.start(sfx);
    for (const sa of ['bookstore', 'bookbuyer', 'bookthief']) await mesh.createServiceAccount(sa);
    await mesh.createService({ name: 'bookstore', selector: { app: 'bookstore' }, ports: STORE_PORTS });
    for (const v of ['v1', 'v2'])
      await mesh.createService({
        name: `bookstore-${v}`,
        selector: { app: 'bookstore', version: v },
        ports: STORE_PORTS,
      });
    const oldest = { 'skein.dev/envoy-image': envoyImage(ENVOY_OLDEST) };
    const specs: PodSpec[] = [
      { name: 'bookstore-v1', serviceAccount: 'bookstore', labels: { app: 'bookstore', version: 'v1' }, serve: SERVE },
      {
        name: 'bookstore-v2',
        serviceAccount: 'bookstore',
        labels: { app: 'bookstore', version: 'v2' },
        annotations: oldest,
        serve: SERVE,
      },
      { name: 'bookbuyer', serviceAccount: 'bookbuyer', labels: { app: 'bookbuyer' }, serve: ['--http', String(HTTP_PORT)] },
      {
        name: 'bookthief',
        serviceAccount: 'bookthief',
        labels: { app: 'bookthief' },
        annotations: oldest,
        serve: ['--http', String(HTTP_PORT)],
      },
    ];
    await Promise.all(specs.map(async (s) => pods.set(s.name, await mesh.startPod(s))));
    await Promise.all([...pods.values()].map((p) => mesh.waitReady(p)));
    const pod = (n: string) => {
      const p = pods.get(n);
      assert.ok(p);
      return p;
    };
    buyer = MeshClient.open(pod('bookbuyer'));
    thief = MeshClient.open(pod('bookthief'));
  });

  after(async () => {
    await buyer?.close();
    await thief?.close();
    await mesh?.stop();
  });

  test('permissive: HTTP through both sidecars', async () => {
    await mesh.setPermissive(true);
    const deadline = Date.now() + 30_000;
    let last = {};
    while (Date.now() < deadline) {
      const r = await buyer.http(`${store()}/books`, 10);
      last = r;
      if ((r.counts['200 bookstore-v1'] ?? 0) + (r.counts['200 bookstore-v2'] ?? 0) === 10) break;
      await new Promise((res) => setTimeout(res, 500));
    }
    console.log(JSON.stringify(last));
    console.log(ENVOY_NEWEST);
  });
});
