// Ordinary mesh life loses no traffic, through the real controller (local
// mode) and real proxyless gRPC workloads: an edit that makes a live object
// invalid keeps its last valid version in force (a TrafficSplit edited to a
// negative weight or to broken YAML keeps its 0/100 split, a Pod edited to an
// out-of-range port keeps serving), and a split backend whose last pod left
// gets no share while the others can serve.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eventually } from '../support/kube-registry-fixture.js';
import { LocalMesh, tally } from '../support/local-mesh.js';
import type { JsonLineProcess } from '../support/processes.js';
import { sleep } from '../support/processes.js';

const BOOKSTORE = 'bookstore.bookstore.svc.cluster.local';
const BUYER_PRINCIPAL =
  /"principal_name":\{"exact":"spiffe:\/\/cluster\.local\/ns\/bookbuyer\/sa\/bookbuyer"\}/;

describe('nothing lost in ordinary mesh life (proxyless, local mode)', () => {
  let mesh: LocalMesh;
  let caller: JsonLineProcess;
  let v2: JsonLineProcess;
  let split = '';
  let pods = '';

  /** The controller's /debug/problems. */
  async function problems(): Promise<
    { type: string; kind?: string; name?: string; reason: string; inForce: string }[]
  > {
    return (await fetch(`http://127.0.0.1:${mesh.ports.http}/debug/problems`)).json() as Promise<
      { type: string; kind?: string; name?: string; reason: string; inForce: string }[]
    >;
  }

  /** The controller's /debug/proxies. */
  async function proxies(): Promise<{ streamId: string; pod?: { name: string } }[]> {
    return (await fetch(`http://127.0.0.1:${mesh.ports.http}/debug/proxies`)).json() as Promise<
      { streamId: string; pod?: { name: string } }[]
    >;
  }

  /** The Listener resources last sent on a stream, from /debug/config_dump, as JSON. */
  async function serverListeners(streamId: string): Promise<string> {
    const res = await fetch(`http://127.0.0.1:${mesh.ports.http}/debug/config_dump?proxy=${streamId}`);
    assert.equal(res.status, 200, await res.clone().text());
    const dump = (await res.json()) as { types: Record<string, { resources: unknown[] }> };
    const listeners = dump.types['type.googleapis.com/envoy.config.listener.v3.Listener'];
    assert.ok(listeners, `no Listener sent on ${streamId}`);
    return JSON.stringify(listeners.resources);
  }

  /** One series of the controller's /metrics (NaN when absent). */
  async function metric(series: string): Promise<number> {
    const text = await (await fetch(`http://127.0.0.1:${mesh.ports.http}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith(`${series} `));
    return line === undefined ? Number.NaN : Number(line.slice(series.length + 1));
  }

  /** The caller's outcomes over the next `ms`. */
  async function window(ms: number) {
    const from = caller.lines.length;
    await sleep(ms);
    return tally(caller, from);
  }

  async function allTo(backend: string, what: string) {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const t = await window(600);
      const total = Object.values(t.ok).reduce((a, b) => a + b, 0);
      if (total > 0 && t.ok[backend] === total && Object.keys(t.errors).length === 0) return;
      if (Date.now() > deadline) throw new Error(`${what}: ${JSON.stringify(t)}`);
    }
  }

  before(async () => {
    mesh = await LocalMesh.start({ extraArgs: ['--min-push-interval', '50ms'] });
    [, v2] = await Promise.all([
      mesh.startServer('bookstore', 'bookstore-v1', '127.0.0.21', 14021),
      mesh.startServer('bookstore', 'bookstore-v2', '127.0.0.22', 14022),
    ]);
    split = await mesh.readManifest('split.yaml');
    pods = await mesh.readManifest('bookstore.yaml');
    await mesh.writeManifest(
      'split.yaml',
      split.replace('weight: 75', 'weight: 0').replace('weight: 25', 'weight: 100'),
    );
    caller = mesh.startCaller('bookbuyer', 'bookbuyer', BOOKSTORE, mesh.port(14001), [
      '--interval-ms',
      '10',
      '--report-ms',
      '100',
    ]);
    await allTo('bookstore-v2', 'the 0/100 split in force');
  });
  after(async () => {
    await mesh?.stop();
  });

  test('a TrafficSplit edited to a negative weight, then to broken YAML, keeps its 0/100 split', async () => {
    const from = mesh.controller.lines.length;
    await mesh.writeManifest(
      'split.yaml',
      split.replace('weight: 75', 'weight: -5').replace('weight: 25', 'weight: 100'),
    );
    const reported = await mesh.controller.waitFor(
      (l) => l['name'] === 'bookstore/bookstore-split',
      5000,
      from,
    );
    assert.match(String(reported['reason']), /weight.*; its last valid version stays in force$/);
    // Before the fix the split vanished and the apex spread over both backends.
    await sleep(500);
    const t = await window(1500);
    assert.deepEqual(Object.keys(t.ok), ['bookstore-v2'], JSON.stringify(t));
    assert.deepEqual(t.errors, {});
    // Visible where users look, not only in the log.
    const listed = (await problems()).filter((p) => p.name === 'bookstore-split');
    assert.equal(listed.length, 1, JSON.stringify(listed));
    assert.equal(listed[0]?.inForce, 'the last valid version of the object');
    assert.equal(await metric('skein_invalid_objects{kind="TrafficSplit"}'), 1);

    await mesh.writeManifest('split.yaml', `${split}\n  broken: [yaml\n`);
    const broken = await mesh.controller.waitFor(
      (l) => String(l['file'] ?? '').endsWith('split.yaml') && /invalid YAML/.test(String(l['reason'])),
      5000,
      from,
    );
    assert.match(
      String(broken['reason']),
      /the last valid versions of TrafficSplit bookstore\/bookstore-split stay in force$/,
    );
    await sleep(500);
    const u = await window(1500);
    assert.deepEqual(Object.keys(u.ok), ['bookstore-v2'], JSON.stringify(u));
    assert.deepEqual(u.errors, {});

    // A valid edit applies at once.
    await mesh.writeManifest(
      'split.yaml',
      split.replace('weight: 75', 'weight: 100').replace('weight: 25', 'weight: 0'),
    );
    await allTo('bookstore-v1', 'the 100/0 split after a valid edit');
    assert.deepEqual(
      (await problems()).filter((p) => p.type === 'invalid-object'),
      [],
    );
    assert.equal(await metric('skein_invalid_objects{kind="TrafficSplit"}'), Number.NaN);
  });

  test('a Pod edited to an out-of-range containerPort keeps serving', async () => {
    await mesh.writeManifest(
      'split.yaml',
      split.replace('weight: 75', 'weight: 0').replace('weight: 25', 'weight: 100'),
    );
    await allTo('bookstore-v2', 'back to 0/100');
    const from = mesh.controller.lines.length;
    const port = `containerPort: ${mesh.port(14022)}`;
    assert.ok(pods.includes(port), port);
    await mesh.writeManifest('bookstore.yaml', pods.replace(port, 'containerPort: 70000'));
    const reported = await mesh.controller.waitFor((l) => l['name'] === 'bookstore/bookstore-v2', 5000, from);
    assert.match(String(reported['reason']), /; its last valid version stays in force$/);
    await sleep(500);
    const t = await window(1500);
    assert.deepEqual(Object.keys(t.ok), ['bookstore-v2'], JSON.stringify(t));
    assert.deepEqual(t.errors, {});
    await mesh.writeManifest('bookstore.yaml', pods);
  });

  test('a 50/50 split backend whose last pod leaves gets no share; it gets it back when a pod returns', async () => {
    await mesh.writeManifest(
      'split.yaml',
      split.replace('weight: 75', 'weight: 50').replace('weight: 25', 'weight: 50'),
    );
    await eventuallyBoth('both backends serving at 50/50');
    const docs = pods.split(/^---$/m);
    const withoutV2 = docs
      .filter((d) => !(/kind: Pod/.test(d) && /name: bookstore-v2\b/.test(d)))
      .join('---');
    assert.equal(docs.length - withoutV2.split(/^---$/m).length, 1, 'removed the bookstore-v2 pod');
    const v2Stream = (await proxies()).find((p) => p.pod?.name === 'bookstore-v2')?.streamId;
    assert.ok(v2Stream, 'bookstore-v2 is connected');
    assert.match(await serverListeners(v2Stream), BUYER_PRINCIPAL, 'bookstore-v2 admits bookbuyer');
    await mesh.writeManifest('bookstore.yaml', withoutV2);
    try {
      // Before the fix half the calls failed ("priority policy has empty priority list").
      await allTo('bookstore-v1', 'every call to bookstore-v1 once bookstore-v2 has no pod');
      const t = await window(1500);
      assert.deepEqual(t.errors, {}, JSON.stringify(t));
      // The server's process still runs and is still connected: it keeps the pod and the
      // services it had, so a caller whose endpoints lag behind is still admitted.
      assert.equal(
        (await proxies()).find((p) => p.streamId === v2Stream)?.pod?.name,
        'bookstore-v2',
        'the stream keeps its pod',
      );
      // Its listener still admits bookbuyer (through the bookstore Service, which keeps other
      // pods of its identity), where a proxy without a pod gets a deny-all one.
      assert.match(await serverListeners(v2Stream), BUYER_PRINCIPAL, 'bookstore-v2 still admits bookbuyer');
      const empty = (await problems()).filter((p) => p.type === 'policy' && p.name === 'bookstore-v2');
      assert.match(
        empty[0]?.reason ?? '',
        /without ready endpoints on port \d+: its share goes to the other backends/,
      );
      assert.equal(await metric('skein_policy_problems{kind="Service"}'), 1);
    } finally {
      // Back for the next tests whatever happened here.
      await mesh.writeManifest('bookstore.yaml', pods);
    }
    // The pod is back: its weight returns, to the same server process.
    await eventuallyBoth('bookstore-v2 serving again once its pod is back');
  });

  test('proxyless servers of a namespace that left the mesh for a few seconds serve again after it re-joins, without a restart', async () => {
    const namespaces = await mesh.readManifest('namespaces.yaml');
    const label = 'name: bookstore\n  labels:\n    skein.dev/monitored-by: skein';
    assert.ok(namespaces.includes(label), 'the bookstore namespace is labelled');
    await mesh.writeManifest(
      'split.yaml',
      split.replace('weight: 75', 'weight: 50').replace('weight: 25', 'weight: 50'),
    );
    await eventuallyBoth('both backends serving before the flip');
    const servers = { v2: v2.child.pid, caller: caller.child.pid };
    await mesh.writeManifest('namespaces.yaml', namespaces.replace(label, 'name: bookstore\n  labels: {}'));
    await eventually(
      'the bookstore services leave the mesh',
      async () => {
        const t = await window(500);
        assert.equal(Object.keys(t.ok).length, 0, JSON.stringify(t));
        // Calls fail at once (no route), not after their deadline.
        assert.ok((t.errors['UNAVAILABLE'] ?? 0) > 10, JSON.stringify(t));
      },
      10_000,
    );
    await sleep(2000);
    const restored = Date.now();
    await mesh.writeManifest('namespaces.yaml', namespaces);
    // The servers are the same processes: while out of the mesh they kept a deny-all Listener
    // instead of losing it, so the real one coming back is a change grpc-js-xds applies (before,
    // they never served again). The caller is the same process too: while the service was
    // out of the mesh its target kept a Listener with no route instead of losing it.
    const from = caller.lines.length;
    await caller.waitFor(
      (l) => {
        const ok = (l['ok'] ?? {}) as Record<string, number>;
        return l['type'] === 'stats' && (ok['bookstore-v1'] ?? 0) > 0 && (ok['bookstore-v2'] ?? 0) > 0;
      },
      10_000,
      from,
    );
    // Reports come every 100 ms: the figure is within 100 ms of when calls succeeded again.
    const tookMs = Date.now() - restored;
    await eventuallyBoth('both backends serving again after the namespace re-joined');
    assert.equal(v2.child.pid, servers.v2);
    assert.equal(v2.child.exitCode, null);
    assert.equal(caller.child.pid, servers.caller);
    assert.equal(caller.child.exitCode, null);
    process.stderr.write(
      `nothing-lost: the namespace re-joined and both backends served within ${tookMs} ms\n`,
    );
    assert.ok(tookMs < 1500, `recovered in ${tookMs} ms`);
  });

  async function eventuallyBoth(what: string) {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const t = await window(1000);
      if (
        (t.ok['bookstore-v1'] ?? 0) > 5 &&
        (t.ok['bookstore-v2'] ?? 0) > 5 &&
        Object.keys(t.errors).length === 0
      )
        return;
      if (Date.now() > deadline) throw new Error(`${what}: ${JSON.stringify(t)}`);
    }
  }
});
