// UpstreamTrafficSetting through real Envoy sidecars: the caller's sidecar
// applies the destination's setting (catalog/upstream.ts, envoy/common/upstream.ts),
// and each effect is read from what the caller saw and from its Envoy's stats.
// Permissive mode (access is not what is tested here); backends are mesh-app
// with failure injection (--fail-ratio, --delay-ms).
//   slow:  one pod answering after 1 s — circuit breaker, then request timeout;
//   flaky: flaky-good and flaky-bad (every request 500) — outlier detection;
//   lr:    lr-fast (no delay) and lr-slow (150 ms) — least request vs round robin;
//   sticky: sticky-a and sticky-b — RingHash with and without hashOn (affinity).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { eventually } from '../support/kube-registry-fixture.js';
import type { RunningPod } from '../support/pod-runner.js';
import { HTTP_PORT, MeshClient, type PodSpec, SidecarMesh, sidecarSuiteSkipReason } from './mesh.js';

const sfx = randomBytes(3).toString('hex');
// A setting that changes a cluster takes effect when Envoy has warmed the rebuilt
// cluster, which waits for an EDS response; skein's SotW server sends none while
// the endpoints are unchanged, so the wait ends at Envoy's initial_fetch_timeout
// (15 s; envoyproxy/envoy#31535). Route-only changes (requestTimeout) apply at once.
const WARM_MS = 45_000;
const skip = await sidecarSuiteSkipReason();

function sum(counts: Record<string, number>, prefix: string): number {
  return Object.entries(counts).reduce((n, [k, v]) => (k.startsWith(prefix) ? n + v : n), 0);
}

describe('UpstreamTrafficSetting through real Envoy sidecars', { skip, timeout: 500_000 }, () => {
  let mesh: SidecarMesh;
  let caller: MeshClient;
  let callerPod: RunningPod;
  const url = (svc: string, path = '/work') => `http://${svc}:${HTTP_PORT}${path}`;
  /** The caller's Envoy stat of its cluster for `svc` (`cluster.<ns>/<svc>|8080.<stat>`). */
  const clusterStat = async (svc: string, stat: string): Promise<number> => {
    const stats = await callerPod.envoyStats(stat);
    const key = [...stats.keys()].find((k) => k.includes(`/${svc}|${HTTP_PORT}.`) && k.endsWith(`.${stat}`));
    return key === undefined ? -1 : (stats.get(key) ?? -1);
  };
  // A request the breaker refuses is counted as a pending overflow while it waited for a connection,
  // and since Envoy 1.38 as an active overflow when it had one (max_requests; before 1.38 as a pending
  // overflow too, and the active counter is absent).
  const overflowCount = async (svc: string): Promise<number> =>
    Math.max(0, await clusterStat(svc, 'upstream_rq_pending_overflow')) +
    Math.max(0, await clusterStat(svc, 'upstream_rq_active_overflow'));
  const setting = (svc: string, spec: Record<string, unknown>) =>
    mesh.apply('policy.skein.dev', 'v1alpha1', 'upstreamtrafficsettings', {
      apiVersion: 'policy.skein.dev/v1alpha1',
      kind: 'UpstreamTrafficSetting',
      metadata: { name: svc, namespace: mesh.namespace },
      spec: { host: `${svc}.${mesh.namespace}.svc.cluster.local`, ...spec },
    });

  before(async () => {
    mesh = await SidecarMesh.start(`rs${sfx}`);
    await mesh.setMeshConfig({ traffic: { permissive: true } });
    for (const sa of ['caller', 'backend']) await mesh.createServiceAccount(sa);
    for (const name of ['slow', 'flaky', 'lr', 'sticky'])
      await mesh.createService({ name, selector: { app: name }, ports: [{ name: 'http', port: HTTP_PORT }] });
    const http = ['--http', String(HTTP_PORT)];
    const backend = (name: string, app: string, extra: string[]): PodSpec => ({
      name,
      serviceAccount: 'backend',
      labels: { app },
      serve: [...http, ...extra],
    });
    const specs: PodSpec[] = [
      { name: 'caller', serviceAccount: 'caller', labels: { app: 'caller' }, serve: http },
      backend('slow-1', 'slow', ['--delay-ms', '1000']),
      backend('flaky-good', 'flaky', []),
      backend('flaky-bad', 'flaky', ['--fail-ratio', '1']),
      backend('lr-fast', 'lr', []),
      backend('lr-slow', 'lr', ['--delay-ms', '150']),
      backend('sticky-a', 'sticky', []),
      backend('sticky-b', 'sticky', []),
    ];
    const pods = await Promise.all(specs.map((s) => mesh.startPod(s)));
    await Promise.all(pods.map((p) => mesh.waitReady(p)));
    const found = pods.find((p) => p.name === 'caller');
    assert.ok(found);
    callerPod = found;
    caller = MeshClient.open(callerPod);
    await eventually(
      'the caller reaches every backend',
      async () => {
        for (const svc of ['slow', 'flaky', 'lr', 'sticky']) {
          const r = await caller.http(url(svc, '/hello'));
          assert.ok(sum(r.counts, '200 ') + sum(r.counts, '500 ') === 1, `${svc}: ${JSON.stringify(r)}`);
        }
      },
      60_000,
    );
  });

  after(async () => {
    await caller?.close();
    await mesh?.stop();
  });

  test('circuit breaker: maxConnections/maxRequests/maxPendingRequests 1 shed concurrent load with 503s', async () => {
    // Without a setting, 10 concurrent calls to a 1 s backend all succeed (Envoy's defaults are 1024).
    const free = await caller.http(url('slow'), 10, { parallel: 10 });
    assert.equal(free.counts['200 slow-1'], 10, JSON.stringify(free));
    await setting('slow', {
      connectionSettings: { tcp: { maxConnections: 1 }, http: { maxRequests: 1, maxPendingRequests: 1 } },
    });
    const applied = Date.now();
    let shed = free;
    // A round of 10 parallel calls can straddle the switch to the rebuilt cluster: calls the old
    // cluster (no thresholds) still takes succeed while the new one sheds the rest (a clean-clone
    // run saw 5 and 5). The setting is in force once a whole round sees it.
    await eventually(
      'the caller sheds load above the thresholds',
      async () => {
        shed = await caller.http(url('slow'), 10, { parallel: 10 });
        assert.ok((shed.counts['503'] ?? 0) >= 5, JSON.stringify(shed));
        assert.ok((shed.counts['200 slow-1'] ?? 0) <= 2, JSON.stringify(shed));
      },
      WARM_MS,
    );
    const tookMs = Date.now() - applied;
    // One more round, wholly after the switch, so the counters read before and after it cover
    // exactly its calls.
    const overflowInForce = await overflowCount('slow');
    shed = await caller.http(url('slow'), 10, { parallel: 10 });
    const overflow = (await overflowCount('slow')) - overflowInForce;
    console.log(
      `circuit breaker: without setting 10/10 ok in ${free.ms} ms; with 1/1/1: ${JSON.stringify(shed.counts)} in ${shed.ms} ms; overflow (pending + active) +${overflow}; in force ${tookMs} ms after the apply`,
    );
    // At most one in flight and one queued: every other call was shed by the caller's sidecar.
    assert.ok(
      (shed.counts['200 slow-1'] ?? 0) <= 2 && (shed.counts['200 slow-1'] ?? 0) >= 1,
      JSON.stringify(shed),
    );
    // Every 503 of the round was shed by the caller's Envoy, and counted there as an overflow.
    assert.equal(
      overflow,
      shed.counts['503'] ?? 0,
      `overflow ${overflow} for ${JSON.stringify(shed.counts)}`,
    );
    assert.match(shed.bodies['503'] ?? '', /overflow/);
  });

  test('request timeout: a stalled backend answers 504 after requestTimeout', async () => {
    // The same host's setting replaced: the breaker goes, the timeout comes (runtime update).
    await setting('slow', { requestTimeout: '300ms' });
    let r = await caller.http(url('slow'));
    await eventually('the caller times the request out', async () => {
      r = await caller.http(url('slow'));
      assert.equal(r.counts['504'], 1, JSON.stringify(r));
    });
    const timed = await caller.http(url('slow'), 5);
    assert.equal(timed.counts['504'], 5, JSON.stringify(timed));
    const perCall = timed.ms / 5;
    console.log(
      `request timeout 300ms: 5/5 504 "${timed.bodies['504']}", ${perCall.toFixed(0)} ms per call (backend 1000 ms)`,
    );
    assert.ok(perCall >= 280 && perCall < 900, `per call ${perCall} ms`);
    assert.match(timed.bodies['504'] ?? '', /upstream request timeout/);
    assert.ok((await clusterStat('slow', 'upstream_rq_timeout')) >= 5);
    // "0" disables the timeout: the slow answer gets through again.
    await setting('slow', { requestTimeout: '0' });
    await eventually('no timeout with requestTimeout 0', async () => {
      const ok = await caller.http(url('slow'));
      assert.equal(ok.counts['200 slow-1'], 1, JSON.stringify(ok));
    });
  });

  test('outlier detection: the failing endpoint is ejected and traffic moves to the healthy one', async () => {
    const mixed = await caller.http(url('flaky'), 40);
    const mixedOk = mixed.counts['200 flaky-good'] ?? 0;
    // Round robin over one good and one failing pod: about half fail.
    assert.ok((mixed.counts['500 flaky-bad'] ?? 0) >= 10, JSON.stringify(mixed));
    await setting('flaky', {
      outlierDetection: {
        consecutive5xx: 3,
        interval: '1s',
        baseEjectionTime: '60s',
        maxEjectionPercent: 50,
      },
    });
    const t0 = Date.now();
    await eventually(
      'flaky-bad is ejected',
      async () => {
        await caller.http(url('flaky'), 10);
        assert.equal(await clusterStat('flaky', 'outlier_detection.ejections_active'), 1);
      },
      WARM_MS,
    );
    const ejectedAfterMs = Date.now() - t0;
    const after = await caller.http(url('flaky'), 200);
    const ok = after.counts['200 flaky-good'] ?? 0;
    console.log(
      `outlier detection: before ${mixedOk}/40 ok; ejected ${ejectedAfterMs} ms after the setting was applied; after ${ok}/200 ok (${JSON.stringify(after.counts)})`,
    );
    assert.ok(ok / 200 >= 0.95, JSON.stringify(after.counts));
  });

  test('a second setting for the same host is reported (problem and status) and changes nothing', async () => {
    const before = await caller.http(url('slow'));
    await mesh.apply('policy.skein.dev', 'v1alpha1', 'upstreamtrafficsettings', {
      apiVersion: 'policy.skein.dev/v1alpha1',
      kind: 'UpstreamTrafficSetting',
      metadata: { name: 'zz-slow-dup', namespace: mesh.namespace },
      spec: { host: `slow.${mesh.namespace}.svc.cluster.local`, requestTimeout: '100ms' },
    });
    await eventually('the conflict is a problem and the loser is not Accepted', async () => {
      const problems = JSON.stringify(await mesh.debug('problems'));
      assert.match(problems, /zz-slow-dup/);
      assert.match(problems, /the first by namespace\/name wins/);
      const stored = (await mesh.api.request(
        'GET',
        `/apis/policy.skein.dev/v1alpha1/namespaces/${mesh.namespace}/upstreamtrafficsettings/zz-slow-dup`,
      )) as { status?: { conditions?: { type: string; status: string; message: string }[] } };
      const accepted = stored.status?.conditions?.find((c) => c.type === 'Accepted');
      assert.equal(accepted?.status, 'False', JSON.stringify(stored.status));
      console.log(`conflict: zz-slow-dup Accepted=False: ${accepted?.message}`);
    });
    // The winner (requestTimeout 0) still applies: the 1 s answer gets through.
    const r = await caller.http(url('slow'));
    assert.equal(r.counts['200 slow-1'], 1, `${JSON.stringify(r)} (before: ${JSON.stringify(before)})`);
  });

  test('least request sends more to the faster of two endpoints than round robin does', async () => {
    const share = (c: Record<string, number>) => (c['200 lr-fast'] ?? 0) / (sum(c, '200 ') || 1);
    const rr = await caller.http(url('lr'), 200, { parallel: 8 });
    assert.equal(sum(rr.counts, '200 '), 200, JSON.stringify(rr));
    await setting('lr', { loadBalancer: { policy: 'LeastRequest', choiceCount: 2 } });
    let lr = rr;
    await eventually(
      'least request prefers lr-fast',
      async () => {
        lr = await caller.http(url('lr'), 200, { parallel: 8 });
        assert.equal(sum(lr.counts, '200 '), 200, JSON.stringify(lr));
        assert.ok(share(lr.counts) >= 0.75, JSON.stringify(lr.counts));
      },
      WARM_MS,
    );
    console.log(
      `load balancing, 200 calls 8 in flight, lr-slow +150 ms: round robin fast share ${share(rr.counts).toFixed(2)} in ${rr.ms} ms; least request ${share(lr.counts).toFixed(2)} in ${lr.ms} ms`,
    );
    assert.ok(share(rr.counts) <= 0.65, `round robin share ${share(rr.counts)}`);
  });

  test('RingHash with hashOn header x-user: each user sticks to one pod, users spread over both; without hashOn calls spread', async () => {
    const USERS = 20;
    const CALLS = 10;
    /** The pods each user's calls reached (`200 <pod>` outcomes), user by user. */
    const byUser = async (): Promise<string[][]> => {
      const out: string[][] = [];
      for (let u = 0; u < USERS; u++) {
        const r = await caller.http(url('sticky'), CALLS, { headers: { 'x-user': `user-${u}` } });
        assert.equal(sum(r.counts, '200 '), CALLS, JSON.stringify(r));
        out.push(Object.keys(r.counts).map((k) => k.slice('200 '.length)));
      }
      return out;
    };
    const pinned = (users: string[][]) => users.filter((pods) => pods.length === 1).length;
    const usersOn = (users: string[][], pod: string) =>
      users.filter((p) => p.length === 1 && p[0] === pod).length;
    // Round robin (no setting) alternates: a user's 10 calls reach both pods.
    const rr = await byUser();
    assert.ok(pinned(rr) <= 2, JSON.stringify(rr));
    await setting('sticky', { loadBalancer: { policy: 'RingHash', hashOn: [{ header: 'x-user' }] } });
    const applied = Date.now();
    let hashed = rr;
    await eventually(
      'every user sticks to one pod',
      async () => {
        hashed = await byUser();
        // No tolerance: while the endpoints stay, a key's ring position and so its pod is fixed.
        assert.equal(pinned(hashed), USERS, JSON.stringify(hashed));
      },
      WARM_MS,
    );
    const tookMs = Date.now() - applied;
    const a = usersOn(hashed, 'sticky-a');
    const b = usersOn(hashed, 'sticky-b');
    // Different keys spread: with two endpoints on a 1024-entry ring, fewer than 3 of 20 users on
    // one pod has a probability of about 4e-4 (binomial, p = 0.5).
    assert.ok(a >= 3 && b >= 3, `users per pod: sticky-a ${a}, sticky-b ${b}`);
    // RingHash without hashOn (a route change only: the cluster stays RING_HASH) picks at random.
    await setting('sticky', { loadBalancer: { policy: 'RingHash' } });
    let random = hashed;
    await eventually('without hashOn one user reaches both pods', async () => {
      random = await byUser();
      // A user's 10 random picks all on one pod: probability 2 × 0.5^10 ≈ 0.002 per user.
      assert.ok(pinned(random) <= 2, JSON.stringify(random));
    });
    console.log(
      `hash affinity, ${USERS} users × ${CALLS} calls: round robin ${pinned(rr)}/${USERS} users on one pod; RingHash + hashOn x-user ${pinned(hashed)}/${USERS} on one pod (sticky-a ${a}, sticky-b ${b} users), in force ${tookMs} ms after the apply; RingHash without hashOn ${pinned(random)}/${USERS}`,
    );
  });
});
