// Retries, retry budgets and access logs through real Envoy sidecars: a
// backend that answers half its requests 503 (mesh-app --fail-ratio 0.5) is
// called by the app of another pod (uid 1000, redirected to its sidecar by
// iptables). Without a Retry about half the calls fail; a Retry for that
// source → destination makes them whole; a retry budget caps the retries
// (Envoy's own upstream_rq_retry / upstream_rq_retry_overflow counters). The
// sidecars' access logs are read from their stdout (the pod runner captures
// it) and turned off and on again through the MeshConfig at runtime.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { RunningPod } from '../support/pod-runner.js';
import { callerAndFlaky, HTTP_PORT, type MeshClient, SidecarMesh, sidecarSuiteSkipReason } from './mesh.js';

const sfx = randomBytes(3).toString('hex');
const skip = await sidecarSuiteSkipReason();
const CALLS = 1000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('retries, retry budgets and access logs through real Envoy sidecars', {
  skip,
  timeout: 420_000,
}, () => {
  let mesh: SidecarMesh;
  let caller: RunningPod;
  let flaky: RunningPod;
  let client: MeshClient;
  const url = () => `http://flaky:${HTTP_PORT}/books`;
  const ok = (counts: Record<string, number>) => counts['200 flaky-1'] ?? 0;

  /** The caller's counters for its cluster to flaky (name → value, suffix after the cluster name). */
  const clusterStats = async () => {
    const stats = await caller.envoyStats('upstream_rq');
    const out = new Map<string, number>();
    for (const [k, v] of stats) {
      const m = /^cluster\.[^.]*flaky[^.]*\.(upstream_rq\w*)$/.exec(k);
      if (m?.[1]) out.set(m[1], v);
    }
    return out;
  };
  const delta = (a: Map<string, number>, b: Map<string, number>, k: string) =>
    (b.get(k) ?? 0) - (a.get(k) ?? 0);

  const setRetry = (retryPolicy: Record<string, unknown>) =>
    mesh.apply('policy.skein.dev', 'v1alpha1', 'retries', {
      apiVersion: 'policy.skein.dev/v1alpha1',
      kind: 'Retry',
      metadata: { name: 'caller-to-flaky', namespace: mesh.namespace },
      spec: {
        source: { kind: 'ServiceAccount', name: 'caller', namespace: mesh.namespace },
        destinations: [{ kind: 'Service', name: 'flaky', namespace: mesh.namespace }],
        retryPolicy,
      },
    });

  before(async () => {
    mesh = await SidecarMesh.start(`rt-${sfx}`);
    await mesh.setPermissive(true);
    ({ caller, flaky, client } = await callerAndFlaky(mesh, 0.5));
  });

  after(async () => {
    await client?.close();
    await mesh?.stop();
  });

  test(`without a Retry about half of ${CALLS} calls fail; with one at least 99 % succeed`, async () => {
    const without = await client.http(url(), CALLS);
    const plain = ok(without.counts);
    console.log(`no Retry: ${plain}/${CALLS} succeeded ${JSON.stringify(without.counts)}`);
    assert.ok(plain > CALLS * 0.35 && plain < CALLS * 0.65, JSON.stringify(without.counts));

    await setRetry({ retryOn: '5xx', numRetries: 8, retryBackoffBaseInterval: '1ms', perTryTimeout: '2s' });
    // Applied once the caller's route carries it: 50 calls in a row succeed.
    const deadline = Date.now() + 30_000;
    for (;;) {
      const probe = await client.http(url(), 50);
      if (ok(probe.counts) === 50) break;
      if (Date.now() > deadline) assert.fail(`the Retry never took effect: ${JSON.stringify(probe.counts)}`);
    }
    const before = await clusterStats();
    const withRetry = await client.http(url(), CALLS);
    const after = await clusterStats();
    const good = ok(withRetry.counts);
    const retries = delta(before, after, 'upstream_rq_retry');
    console.log(
      `Retry (5xx, 8 retries): ${good}/${CALLS} succeeded, ${retries} retries (${(retries / CALLS).toFixed(2)} per call) ${JSON.stringify(withRetry.counts)}`,
    );
    assert.ok(good >= CALLS * 0.99, JSON.stringify(withRetry.counts));
    // Each retry is a real second attempt at the flaky backend: about one per call at 50 % failure.
    assert.ok(retries > CALLS * 0.5, `retries ${retries}`);
  });

  test('a retry budget of 20 % caps concurrent retries (upstream_rq_retry_overflow)', async () => {
    const concurrency = 20;
    // Baseline at the same concurrency without a budget, for the record: Envoy's default
    // max_retries circuit breaker (3 at once) is then what refuses retries.
    await setRetry({ retryOn: '5xx', numRetries: 8, retryBackoffBaseInterval: '1ms' });
    await sleep(1000);
    const b0 = await clusterStats();
    const free = await client.http(url(), CALLS, { concurrency });
    const b1 = await clusterStats();

    await setRetry({
      retryOn: '5xx',
      numRetries: 8,
      retryBackoffBaseInterval: '1ms',
      retryBudget: { budgetPercent: 20, minRetryConcurrency: 1 },
    });
    // The budget is a cluster setting: wait until the caller's cluster has it.
    const deadline = Date.now() + 30_000;
    while (
      !(await caller.envoyAdmin('/config_dump?resource=dynamic_active_clusters')).includes('retry_budget')
    ) {
      if (Date.now() > deadline) assert.fail('the retry budget never reached the caller');
      await sleep(250);
    }
    const s0 = await clusterStats();
    const budgeted = await client.http(url(), CALLS, { concurrency });
    const s1 = await clusterStats();
    const freeRetries = delta(b0, b1, 'upstream_rq_retry');
    const freeOverflow = delta(b0, b1, 'upstream_rq_retry_overflow');
    const retries = delta(s0, s1, 'upstream_rq_retry');
    const overflow = delta(s0, s1, 'upstream_rq_retry_overflow');
    const requests = delta(s0, s1, 'upstream_rq_total');
    console.log(
      `concurrency ${concurrency}, ${CALLS} calls: no budget ${ok(free.counts)} ok, ${freeRetries} retries, ${freeOverflow} overflow; ` +
        `20 % budget ${ok(budgeted.counts)} ok, ${retries} retries of ${requests} upstream requests, ${overflow} overflow`,
    );
    assert.ok(overflow > 0, `the budget refused no retry: ${overflow}`);
    // The extra load stays within the stated share: retries are at most 20 % of upstream requests.
    assert.ok(retries <= requests * 0.2, `${retries} retries of ${requests} upstream requests`);
  });

  test('access logs: JSON lines on the sidecars’ stdout with the request fields; the MeshConfig turns them off and on at runtime', async () => {
    const envoyOf = (p: RunningPod) => {
      const c = p.containers.get('envoy');
      if (!c) throw new Error(`${p.name}: no envoy container`);
      return c;
    };
    const logs = envoyOf(caller);
    const inbound = envoyOf(flaky);
    const from = logs.lines.length;
    const inFrom = inbound.lines.length;
    await client.http(url(), 5, { headers: { 'x-request-id': `rt-${sfx}` } });
    // Envoy flushes access logs about once a second.
    const line = await logs.waitFor((l) => l['request_id'] === `rt-${sfx}`, 10_000, from);
    for (const k of [
      'start_time',
      'method',
      'path',
      'authority',
      'response_code',
      'response_flags',
      'duration',
      'upstream_cluster',
      'upstream_host',
      'bytes_received',
      'bytes_sent',
      'request_id',
      'downstream_peer_uri_san',
    ])
      assert.ok(k in line, `${k} missing in ${JSON.stringify(line)}`);
    assert.equal(line['method'], 'GET');
    assert.equal(line['path'], '/books');
    assert.equal(typeof line['response_code'], 'number', JSON.stringify(line));
    assert.match(String(line['upstream_cluster']), /flaky\|8080/);
    // The backend's inbound sidecar logs the caller's mTLS identity.
    const served = await inbound.waitFor((l) => l['request_id'] === `rt-${sfx}`, 10_000, inFrom);
    assert.equal(served['downstream_peer_uri_san'], `spiffe://cluster.local/ns/${mesh.namespace}/sa/caller`);

    await mesh.setMeshConfig({
      traffic: { permissive: true },
      observability: { accessLog: { enabled: false } },
    });
    // Off once a batch of calls leaves no line behind (after Envoy's flush interval).
    const deadline = Date.now() + 30_000;
    for (;;) {
      const mark = logs.lines.length;
      await client.http(url(), 5);
      await sleep(2000);
      if (logs.lines.length === mark) break;
      if (Date.now() > deadline) assert.fail('access logs never stopped');
    }
    const quiet = logs.lines.length;
    await client.http(url(), 20);
    await sleep(2000);
    assert.equal(logs.lines.length, quiet, 'no line while off');

    await mesh.setMeshConfig({
      traffic: { permissive: true },
      observability: { accessLog: { enabled: true } },
    });
    const id = `rt-on-${sfx}`;
    const back = Date.now() + 30_000;
    for (;;) {
      const mark = logs.lines.length;
      await client.http(url(), 1, { headers: { 'x-request-id': id } });
      const found = await logs.waitFor((l) => l['request_id'] === id, 2000, mark).catch(() => undefined);
      if (found) break;
      if (Date.now() > back) assert.fail('access logs never came back');
    }
  });
});
