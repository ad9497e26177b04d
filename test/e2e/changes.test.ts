// Change handling through the real controller: bursts coalesce without losing
// the final state, and bad input is reported while the rest keeps serving.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { TypeUrl } from '../../pkg/envoy/types.js';
import { adsClient, fetchLikeEnvoy, proxyCredentials } from '../support/envoy-like.js';
import { validateWithEnvoy } from '../support/envoy-validate.js';
import { LocalMesh } from '../support/local-mesh.js';
import { sleep } from '../support/processes.js';
import type { ReceivedResponse } from '../support/xds/test-client.js';

const BUYER = {
  uuid: '00000000-0000-4000-8000-000000000011',
  serviceAccount: 'bookbuyer',
  namespace: 'bookbuyer',
};

function weights(res: ReceivedResponse): number[] {
  const m = JSON.stringify(res.messages).match(/"weight":\{"value":(\d+)\}/g) ?? [];
  return m.map((w) => Number(w.replace(/\D/g, '')));
}

describe('changes through the running controller', () => {
  let mesh: LocalMesh;
  before(async () => {
    // A wide push window, so the burst below lands inside it.
    mesh = await LocalMesh.start({ extraArgs: ['--min-push-interval', '1s'] });
  });
  after(async () => {
    await mesh?.stop();
  });

  test('a burst of changes inside one push window ends with every proxy on the final state', async () => {
    // Three bookbuyer sidecars (one identity, three proxy UUIDs) and bookstore-v1's.
    const proxies = [
      BUYER,
      { ...BUYER, uuid: '00000000-0000-4000-8000-0000000000a1' },
      { ...BUYER, uuid: '00000000-0000-4000-8000-0000000000a2' },
    ];
    const clients = await Promise.all(
      proxies.map(async (p) => {
        const { credentials, cn } = await proxyCredentials(mesh.stateDir, p);
        const client = adsClient(mesh.ports.ads, credentials);
        const initial = await fetchLikeEnvoy(client, cn);
        return { client, routeNames: initial.routes.map((r) => r.name) };
      }),
    );
    try {
      const original = await mesh.readManifest('split.yaml');
      // 20 edits, each a different v1 weight; the last one is 60/25.
      for (let w = 41; w <= 60; w++) {
        await mesh.writeManifest('split.yaml', original.replace('weight: 75', `weight: ${w}`));
        await sleep(15);
      }
      const results = await Promise.all(
        clients.map(async ({ client, routeNames }) => {
          assert.ok(routeNames.length > 0);
          let last: number[] = [];
          let pushes = 0;
          const deadline = Date.now() + 8000;
          while (Date.now() < deadline && !(last[0] === 60 && last[1] === 25)) {
            const r = await client.next(deadline - Date.now());
            client.ack(r, r.typeUrl === TypeUrl.RouteConfiguration ? routeNames : []);
            if (r.typeUrl !== TypeUrl.RouteConfiguration) continue;
            pushes++;
            const w = weights(r);
            if (w.length > 0) last = w;
          }
          return { last, pushes, after: await client.drain(1500) };
        }),
      );
      for (const r of results) {
        assert.deepEqual(r.last, [60, 25], 'the final weights reached every proxy');
        // Coalesced: far fewer pushes than edits (the file watcher and the
        // push window both merge), and nothing after the final state.
        assert.ok(r.pushes < 10, `${r.pushes} RDS pushes for 20 edits`);
        assert.deepEqual(r.after, []);
      }
      await mesh.writeManifest('split.yaml', original);
    } finally {
      for (const { client } of clients) client.close();
    }
  });

  test('malformed manifests are reported with file, object and reason; the rest keeps serving', async () => {
    const { credentials, cn } = await proxyCredentials(mesh.stateDir, BUYER);
    const client = adsClient(mesh.ports.ads, credentials);
    try {
      const before = await fetchLikeEnvoy(client, cn);
      const from = mesh.controller.lines.length;
      await mesh.writeManifest('broken.yaml', 'apiVersion: v1\nkind: Service\nmetadata: [unclosed\n');
      await mesh.writeManifest(
        'bad-target.yaml',
        `apiVersion: access.smi-spec.io/v1alpha3
kind: TrafficTarget
metadata: { name: wrong-namespace, namespace: bookbuyer }
spec:
  destination: { kind: ServiceAccount, name: bookstore, namespace: bookstore }
  sources: [{ kind: ServiceAccount, name: bookthief, namespace: bookthief }]
  rules: [{ kind: HTTPRouteGroup, name: bookstore-service-routes }]
---
apiVersion: split.smi-spec.io/v1alpha2
kind: TrafficSplit
metadata: { name: negative, namespace: bookstore }
spec:
  service: bookstore
  backends: [{ service: bookstore-v1, weight: -5 }]
`,
      );
      const broken = await mesh.controller.waitFor(
        (l) => String(l['file'] ?? '').endsWith('broken.yaml'),
        5000,
        from,
      );
      assert.equal(broken['msg'], 'object skipped');
      assert.ok(String(broken['reason']).length > 0);
      const wrongNs = await mesh.controller.waitFor(
        (l) => l['name'] === 'bookbuyer/wrong-namespace',
        5000,
        from,
      );
      assert.match(String(wrongNs['reason']), /namespace/);
      assert.equal(wrongNs['kind'], 'TrafficTarget');
      const negative = await mesh.controller.waitFor((l) => l['name'] === 'bookstore/negative', 5000, from);
      assert.match(String(negative['reason']), /weight/);
      // The mesh is unchanged for the proxy and the controller is healthy.
      await sleep(500);
      const second = adsClient(mesh.ports.ads, credentials);
      const after = await fetchLikeEnvoy(second, cn).finally(() => second.close());
      assert.deepEqual(
        after.clusters.map((c) => c.name),
        before.clusters.map((c) => c.name),
      );
      assert.deepEqual(await validateWithEnvoy(after.encoded), []);
      const ready = await fetch(`http://127.0.0.1:${mesh.ports.http}/readyz`);
      assert.equal(ready.status, 200);
    } finally {
      client.close();
      await mesh.removeManifest('broken.yaml');
      await mesh.removeManifest('bad-target.yaml');
    }
  });

  test('MeshConfig observability.logLevel sets the level at runtime; a bad one is a problem naming the MeshConfig and the last good level stays', async () => {
    const original = await mesh.readManifest('meshconfig.yaml');
    assert.match(original, /logLevel: info/);
    const withLevel = (level: string) => original.replace('logLevel: info', `logLevel: ${level}`);
    const { credentials, cn } = await proxyCredentials(mesh.stateDir, BUYER);
    /** Debug lines (the ADS server's 'sent', one per response) a fresh proxy's fetch leaves behind. */
    const debugLinesOfAFetch = async () => {
      const from = mesh.controller.lines.length;
      const client = adsClient(mesh.ports.ads, credentials);
      await fetchLikeEnvoy(client, cn).finally(() => client.close());
      await sleep(300);
      return mesh.controller.lines.slice(from).filter((l) => l['level'] === 20).length;
    };
    const changedTo = (level: string, from: number) =>
      mesh.controller.waitFor(
        (l) => l['msg'] === 'log level changed by the MeshConfig' && l['to'] === level,
        5000,
        from,
      );
    const meshConfigProblems = async () => {
      const res = await fetch(`http://127.0.0.1:${mesh.ports.http}/debug/problems`);
      const all = (await res.json()) as { kind?: string; name?: string; reason: string; inForce: string }[];
      return all.filter((p) => p.kind === 'MeshConfig');
    };
    try {
      assert.equal(await debugLinesOfAFetch(), 0, 'info: no debug lines');
      let from = mesh.controller.lines.length;
      await mesh.writeManifest('meshconfig.yaml', withLevel('debug'));
      await changedTo('debug', from);
      const debug = await debugLinesOfAFetch();
      assert.ok(debug > 0, 'debug: the responses are logged');

      from = mesh.controller.lines.length;
      await mesh.writeManifest('meshconfig.yaml', withLevel('loud'));
      const refused = await mesh.controller.waitFor((l) => l['kind'] === 'MeshConfig', 5000, from);
      assert.match(String(refused['reason']), /spec\.observability\.logLevel/);
      const [problem] = await meshConfigProblems();
      assert.equal(problem?.name, 'skein');
      assert.match(problem?.reason ?? '', /spec\.observability\.logLevel: must be one of/);
      assert.equal(problem?.inForce, 'the last valid version of the object');
      assert.ok((await debugLinesOfAFetch()) > 0, 'the last good level, debug, stays');
      console.log(`debug lines of one proxy's first fetch: ${debug}`);

      from = mesh.controller.lines.length;
      await mesh.writeManifest('meshconfig.yaml', original);
      await changedTo('info', from);
      assert.equal(await debugLinesOfAFetch(), 0, 'info again: no debug lines');
      assert.deepEqual(await meshConfigProblems(), []);
    } finally {
      await mesh.writeManifest('meshconfig.yaml', original);
    }
  });

  test('GET /metrics reports what the controller did, in the Prometheus text format', async () => {
    const { credentials, cn } = await proxyCredentials(mesh.stateDir, BUYER);
    const client = adsClient(mesh.ports.ads, credentials);
    const scrape = async () => {
      const res = await fetch(`http://127.0.0.1:${mesh.ports.http}/metrics`);
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
      const text = await res.text();
      return (series: string): number => {
        const line = text.split('\n').find((l) => l.startsWith(`${series} `));
        return line === undefined ? Number.NaN : Number(line.slice(series.length + 1));
      };
    };
    try {
      await fetchLikeEnvoy(client, cn);
      // Earlier tests' proxies are gone (asynchronously): only this one stays.
      let m = await scrape();
      const deadline = Date.now() + 3000;
      while (m('skein_proxies_connected{kind="sidecar"}') !== 1 && Date.now() < deadline) {
        await sleep(50);
        m = await scrape();
      }
      assert.equal(m('skein_proxies_connected{kind="sidecar"}'), 1);
      // The burst above: split edits pushed as RDS and ACKed, store events announced.
      assert.ok(m('skein_xds_pushes_total{type="RouteConfiguration"}') >= 4);
      assert.ok(m('skein_xds_change_to_ack_seconds_count{type="RouteConfiguration"}') >= 4);
      assert.ok(m('skein_registry_events_total{kind="TrafficSplit",type="updated"}') >= 1);
      assert.ok(m('skein_announcements_total{kind="store"}') >= 1);
      assert.ok(m('skein_certificates_issued_total') >= 1);
      assert.ok(m('skein_certificate_soonest_expiry_timestamp_seconds') > Date.now() / 1000);
      assert.ok(m('process_resident_memory_bytes') > 0);
    } finally {
      client.close();
    }
  });
});
