// End to end with real proxyless gRPC workloads (@grpc/grpc-js-xds XdsServer and
// xds:/// clients, each in its own process) against the controller in local mode.
import assert from 'node:assert/strict';
import { access } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { TypeUrl } from '../../pkg/envoy/types.js';
import { proxyCommonName } from '../../pkg/mesh/identity.js';
import { LocalMesh, tally } from '../support/local-mesh.js';
import type { JsonLineProcess } from '../support/processes.js';
import { freePorts, sleep } from '../support/processes.js';
import { RawAdsClient } from '../support/xds/test-client.js';

const BOOKSTORE = 'bookstore.bookstore.svc.cluster.local';

describe('proxyless gRPC against the bookstore example', () => {
  let mesh: LocalMesh;

  before(async () => {
    mesh = await LocalMesh.start();
    await Promise.all([
      mesh.startServer('bookstore', 'bookstore-v1', '127.0.0.21', 14021),
      mesh.startServer('bookstore', 'bookstore-v2', '127.0.0.22', 14022),
    ]);
  });
  after(async () => {
    await mesh?.stop();
  });

  /** Runs a caller for `count` calls and returns its totals. */
  async function calls(pod: 'bookbuyer' | 'bookthief', count: number) {
    const c = mesh.startCaller(pod, pod, BOOKSTORE, mesh.port(14001), [
      '--count',
      String(count),
      '--interval-ms',
      '0',
    ]);
    const done = await c.waitFor((l) => l['type'] === 'done', 60_000);
    return done as unknown as { ok: Record<string, number>; errors: Record<string, number> };
  }

  /** Waits until a running caller's recent stats satisfy `pred` (evaluated over each new report). */
  async function until(
    c: JsonLineProcess,
    what: string,
    pred: (t: ReturnType<typeof tally>) => boolean,
    ms = 15_000,
  ) {
    const deadline = Date.now() + ms;
    let from = c.lines.length;
    while (Date.now() < deadline) {
      await sleep(300);
      const t = tally(c, from);
      if (process.env['E2E_DEBUG']) console.error(c.name, what, JSON.stringify(t), c.lines.length);
      if (Object.keys(t.ok).length + Object.keys(t.errors).length > 0) {
        if (pred(t)) return c.lines.length;
        from = c.lines.length;
      }
    }
    throw new Error(
      `${c.name}: never saw ${what}; last: ${JSON.stringify(tally(c, from))}; exit ${c.child.exitCode}; stderr: ${c.stderr.slice(-5).join(' | ')}`,
    );
  }

  test('TrafficSplit weights hold within ±5 points over 1,200 calls', async () => {
    const r = await calls('bookbuyer', 1200);
    assert.deepEqual(r.errors, {});
    const v1 = r.ok['bookstore-v1'] ?? 0;
    const v2 = r.ok['bookstore-v2'] ?? 0;
    assert.equal(v1 + v2, 1200);
    const share = v1 / 1200;
    assert.ok(Math.abs(share - 0.75) <= 0.05, `bookstore-v1 share ${share.toFixed(3)} not within 0.75±0.05`);
  });

  test('without a TrafficTarget calls are denied with PERMISSION_DENIED', async () => {
    const r = await calls('bookthief', 60);
    assert.deepEqual(r.ok, {});
    assert.deepEqual(r.errors, { PERMISSION_DENIED: 60 });
  });

  test('a TrafficTarget applied at runtime allows; deleting it denies again', async () => {
    const thief = mesh.startCaller('bookthief', 'bookthief', BOOKSTORE, mesh.port(14001), [
      '--interval-ms',
      '20',
    ]);
    await until(
      thief,
      'denials',
      (t) => (t.errors['PERMISSION_DENIED'] ?? 0) > 0 && Object.keys(t.ok).length === 0,
    );
    await mesh.writeManifest(
      'access-bookthief.yaml',
      `apiVersion: access.smi-spec.io/v1alpha3
kind: TrafficTarget
metadata:
  name: bookthief-access-bookstore
  namespace: bookstore
spec:
  destination: { kind: ServiceAccount, name: bookstore, namespace: bookstore }
  sources: [{ kind: ServiceAccount, name: bookthief, namespace: bookthief }]
  rules: [{ kind: HTTPRouteGroup, name: bookstore-service-routes }]
`,
    );
    await until(
      thief,
      'only successes',
      (t) => Object.keys(t.errors).length === 0 && Object.keys(t.ok).length > 0,
    );
    await mesh.removeManifest('access-bookthief.yaml');
    await until(
      thief,
      'only denials',
      (t) => Object.keys(t.ok).length === 0 && (t.errors['PERMISSION_DENIED'] ?? 0) > 0,
    );
    await thief.stop();
  });

  test('permissive mode flips at runtime without a restart', async () => {
    const original = await mesh.readManifest('meshconfig.yaml');
    const setting = /^(\s+permissive:) false$/m;
    assert.match(original, setting);
    const thief = mesh.startCaller('bookthief', 'bookthief', BOOKSTORE, mesh.port(14001), [
      '--interval-ms',
      '20',
    ]);
    try {
      await until(thief, 'denials', (t) => (t.errors['PERMISSION_DENIED'] ?? 0) > 0);
      await mesh.writeManifest('meshconfig.yaml', original.replace(setting, '$1 true'));
      await until(
        thief,
        'only successes',
        (t) => Object.keys(t.errors).length === 0 && Object.keys(t.ok).length > 0,
      );
      await mesh.writeManifest('meshconfig.yaml', original);
      await until(thief, 'only denials', (t) => Object.keys(t.ok).length === 0);
    } finally {
      await mesh.writeManifest('meshconfig.yaml', original);
      await thief.stop();
    }
  });

  test('an edited TrafficSplit reaches a running client', async () => {
    const original = await mesh.readManifest('split.yaml');
    const buyer = mesh.startCaller('bookbuyer', 'bookbuyer', BOOKSTORE, mesh.port(14001), [
      '--interval-ms',
      '5',
    ]);
    try {
      await until(
        buyer,
        'both versions',
        (t) => (t.ok['bookstore-v1'] ?? 0) > 0 && (t.ok['bookstore-v2'] ?? 0) > 0,
      );
      await mesh.writeManifest('split.yaml', original.replace('weight: 75', 'weight: 0'));
      await until(
        buyer,
        'only bookstore-v2',
        (t) => (t.ok['bookstore-v2'] ?? 0) > 20 && (t.ok['bookstore-v1'] ?? 0) === 0,
      );
    } finally {
      await mesh.writeManifest('split.yaml', original);
      await buyer.stop();
    }
  });

  test('an endpoint added and removed is followed without restarting the client; the other backend, left out of the EDS responses, keeps serving', async () => {
    const [extraPort] = await freePorts(1);
    assert.ok(extraPort);
    const pod = `apiVersion: v1
kind: Pod
metadata:
  name: bookstore-v1b
  namespace: bookstore
  labels: { app: bookstore, version: v1, skein.dev/proxy-uuid: 00000000-0000-4000-8000-000000000023 }
spec:
  serviceAccountName: bookstore
  containers: [{ name: bookstore, ports: [{ name: grpc-api, containerPort: ${extraPort} }] }]
status:
  phase: Running
  podIP: 127.0.0.23
`;
    const buyer = mesh.startCaller('bookbuyer', 'bookbuyer', BOOKSTORE, mesh.port(14001), [
      '--interval-ms',
      '5',
    ]);
    // Beside the caller, a raw stream of the same identity subscribed to both
    // backends' endpoints shows what the SotW EDS pushes carry.
    const clusters = ['v1', 'v2'].map((v) => `bookstore/bookstore-${v}|${mesh.port(14001)}`);
    const eds = new RawAdsClient({
      address: `127.0.0.1:${mesh.ports.insecureAds}`,
      credentials: grpc.credentials.createInsecure(),
    });
    const nodeId = proxyCommonName({
      uuid: '00000000-0000-4000-8000-000000000011',
      kind: 'grpc',
      serviceAccount: 'bookbuyer',
      namespace: 'bookbuyer',
      trustDomain: 'cluster.local',
    });
    const pushed: string[][] = [];
    try {
      eds.send({
        typeUrl: TypeUrl.ClusterLoadAssignment,
        resourceNames: clusters,
        node: { id: nodeId, cluster: 'x' },
      });
      const first = await eds.next(10_000);
      assert.deepEqual(first.names, clusters, 'the first response carries both');
      eds.ack(first, clusters);
      await until(
        buyer,
        'both backends answering',
        (t) => (t.ok['bookstore-v1'] ?? 0) > 0 && (t.ok['bookstore-v2'] ?? 0) > 0,
      );
      await mesh.writeManifest('bookstore-v1b.yaml', pod);
      await waitForFile(mesh.bootstrap('bookstore', 'bookstore-v1b'));
      await mesh.startServer('bookstore', 'bookstore-v1b', '127.0.0.23', extraPort, true);
      await until(
        buyer,
        'the new endpoint answering, and bookstore-v2 still',
        (t) => (t.ok['bookstore-v1b'] ?? 0) > 0 && (t.ok['bookstore-v2'] ?? 0) > 0,
      );
      for (const r of await eds.drain(500)) {
        pushed.push(r.names);
        eds.ack(r, clusters);
      }
      // Remove the pod but keep its server running: once the change has
      // converged, no call may reach it any more.
      await mesh.removeManifest('bookstore-v1b.yaml');
      await until(
        buyer,
        'no call to the removed endpoint',
        (t) => (t.ok['bookstore-v1b'] ?? 0) === 0 && (t.ok['bookstore-v1'] ?? 0) > 0,
      );
      const from = buyer.lines.length;
      await sleep(1500);
      const after = tally(buyer, from);
      assert.equal(
        after.ok['bookstore-v1b'] ?? 0,
        0,
        `calls still reach the removed pod: ${JSON.stringify(after)}`,
      );
      assert.ok((after.ok['bookstore-v2'] ?? 0) > 0, `bookstore-v2 keeps serving: ${JSON.stringify(after)}`);
      assert.deepEqual(after.errors, {});
      for (const r of await eds.drain(500)) pushed.push(r.names);
      // Only bookstore-v1's ClusterLoadAssignment moved: the pushes carried it alone
      // (xds_protocol, "Grouping Resources into Responses"), and grpc-js-xds kept
      // bookstore-v2's, which the calls above reached throughout.
      assert.ok(pushed.length >= 2, `EDS pushes: ${JSON.stringify(pushed)}`);
      for (const names of pushed) assert.deepEqual(names, [clusters[0]]);
    } finally {
      eds.close();
      await buyer.stop();
    }
  });
});

async function waitForFile(file: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      await access(file);
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await sleep(100);
    }
  }
}
