// Per-edge golden signals through real Envoy sidecars: the caller's sidecar
// streams its stats to the controller (the bootstrap's metrics_service sink, on
// the ADS cluster's mTLS connection); after N calls to a backend that fails a
// fixed share (mesh-app --fail-ratio: exactly floor(n × ratio) of n requests
// answer 5xx), the controller's figures for the edge caller → flaky, on
// /debug/stats and in `skein proxy get stats`, show the N requests and the
// success rate, and agree with the caller's own Envoy counters.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { RunningPod } from '../support/pod-runner.js';
import { callerAndFlaky, HTTP_PORT, type MeshClient, SidecarMesh, sidecarSuiteSkipReason } from './mesh.js';

const sfx = randomBytes(3).toString('hex');
const skip = await sidecarSuiteSkipReason();
const CALLS = 400;
const FAIL_RATIO = 0.3;
/** Envoy flushes stats to its sinks this often (bootstrap stats_flush_interval, default 5 s). */
const FLUSH_MS = 5000;

interface Edge {
  source: string;
  destination: string;
  requests: number;
  errors: number;
  successRate?: number;
  p50Ms?: number;
  p99Ms?: number;
  total: { requests: number; responses: number; errors: number };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('per-edge request and success rates from real Envoy sidecars', { skip, timeout: 300_000 }, () => {
  let mesh: SidecarMesh;
  let caller: RunningPod;
  let client: MeshClient;
  const ns = () => mesh.namespace;

  const edge = async (): Promise<Edge | undefined> => {
    const page = (await mesh.debug('stats')) as { edges?: Edge[] };
    return page.edges?.find((e) => e.source === `${ns()}/caller` && e.destination === `${ns()}/flaky`);
  };
  /** The caller's own Envoy counter for its cluster to flaky. */
  const envoyRequests = async () => {
    const stats = await caller.envoyStats('upstream_rq_total');
    for (const [k, v] of stats) if (/^cluster\.[^.]*\/flaky\|\d+\.upstream_rq_total$/.test(k)) return v;
    return 0;
  };

  before(async () => {
    mesh = await SidecarMesh.start(`st-${sfx}`);
    await mesh.setPermissive(true);
    ({ caller, client } = await callerAndFlaky(mesh, FAIL_RATIO));
  });

  after(async () => {
    await client?.close();
    await mesh?.stop();
  });

  test(`after ${CALLS} calls failing ${FAIL_RATIO * 100} %, the controller shows the requests and the success rate`, async () => {
    // The controller takes a stream's first report as its baseline (what the sidecar counted
    // before), so an edge shows once a call lands after that report: Envoy flushes every 5 s,
    // and a call made before the first flush is in the baseline. Call until the edge shows,
    // then count from what it shows.
    const baseline = Date.now() + 30_000;
    let shown: Edge | undefined;
    for (let n = 0; shown === undefined; n++) {
      if (Date.now() > baseline)
        assert.fail(`no edge caller → flaky on /debug/stats: ${JSON.stringify(await mesh.debug('stats'))}`);
      if (n % 4 === 0) await client.http(`http://flaky:${HTTP_PORT}/warmup`, 1);
      await sleep(500);
      shown = await edge();
    }
    // The edge may have shown from a flush before the last warmup call: with no call for
    // more than one flush interval, the next flush carries every call made so far, so the
    // controller's figure and the sidecar's counter start from the same calls.
    const envoyBefore = await envoyRequests();
    const settled = Date.now() + 30_000;
    // Two reads a flush interval apart that agree bracket a flush made after the last call.
    let before: Edge | undefined = shown;
    for (let settledOnce = false; !settledOnce; ) {
      if (Date.now() > settled) assert.fail(`the edge never settled: ${JSON.stringify(before)}`);
      await sleep(FLUSH_MS + 500);
      const next = await edge();
      settledOnce = next !== undefined && next.total.requests === before?.total.requests;
      before = next;
    }
    assert.ok(before);
    const outcome = await client.http(`http://flaky:${HTTP_PORT}/books`, CALLS);
    const ok = Object.entries(outcome.counts)
      .filter(([k]) => k.startsWith('200 '))
      .reduce((s, [, n]) => s + n, 0);
    const envoyAfter = await envoyRequests();
    // Envoy flushes every 5 s: the figures arrive within a couple of flushes.
    const deadline = Date.now() + 30_000;
    let now: Edge | undefined = before;
    while ((now?.total.requests ?? 0) - before.total.requests < envoyAfter - envoyBefore) {
      if (Date.now() > deadline) break;
      await sleep(500);
      now = await edge();
    }
    assert.ok(now);
    const requests = now.total.requests - before.total.requests;
    const responses = now.total.responses - before.total.responses;
    const errors = now.total.errors - before.total.errors;
    const success = (responses - errors) / responses;
    console.log(
      `client: ${ok}/${CALLS} ok ${JSON.stringify(outcome.counts)}; caller's Envoy: ${envoyAfter - envoyBefore} upstream requests; ` +
        `controller: ${requests} requests, ${errors} 5xx, success ${(success * 100).toFixed(1)} %, window ${now.requests} requests, p50 ${now.p50Ms} ms, p99 ${now.p99Ms} ms`,
    );
    // The controller counts exactly what the caller's sidecar counted (both are Envoy's counter).
    assert.equal(requests, envoyAfter - envoyBefore);
    // Tolerances: requests exact to ±1 % of N; success rate within 1 point of the client's own.
    assert.ok(Math.abs(requests - CALLS) <= CALLS * 0.01, `${requests} requests for ${CALLS} calls`);
    assert.ok(Math.abs(success - ok / CALLS) <= 0.01, `success ${success} vs client ${ok / CALLS}`);
    assert.ok(Math.abs(success - (1 - FAIL_RATIO)) <= 0.02, `success ${success}`);
    assert.ok(
      now.successRate !== undefined && now.successRate < 0.8 && now.successRate > 0.6,
      String(now.successRate),
    );
    assert.ok(now.p99Ms !== undefined && now.p99Ms > 0, `p99 ${now.p99Ms}`);

    // The same figures through the CLI, as a user asks for them.
    const cli = await mesh.skein(['proxy', 'get', 'stats', 'caller', '-n', ns()]);
    assert.equal(cli.code, 0, cli.out);
    const row = cli.out.split('\n').find((l) => l.startsWith(`${ns()}/flaky `));
    assert.ok(row, cli.out);
    console.log(cli.out);
    const [, , , , , , , total] = row.trim().split(/\s{2,}/);
    const [totalRequests] = (total ?? '').split(' / ').map(Number);
    assert.ok(
      totalRequests !== undefined && totalRequests >= now.total.requests,
      `${row} vs ${now.total.requests}`,
    );
  });

  test('a sidecar reports only as itself: the edge is the client certificate’s identity, not another', async () => {
    const page = (await mesh.debug('stats')) as { edges?: Edge[] };
    const sources = new Set((page.edges ?? []).map((e) => e.source));
    assert.deepEqual([...sources], [`${ns()}/caller`]);
  });
});
