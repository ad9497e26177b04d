// Local rate limits (UpstreamTrafficSetting rateLimit.local and httpRoutes)
// through real Envoy sidecars: the destination's own sidecar enforces them
// (catalog/ratelimit.ts, envoy/common/ratelimit.ts); what the caller saw is
// checked against the destination Envoy's local_rate_limit stats.
// Permissive mode. The settings exist before the pods start, so the first
// connection already meets them, and their buckets refill per hour: no
// refill can happen while the suite counts (no timing dependence).
//   rl-http: 10 requests/hour, 503 + x-skein-limited; /scarce 3/hour (429);
//            /probe a bucket of its own, large, for readiness checks.
//   rl-late: no setting until a test puts a limit on it while the caller is connected.
//   rl-tcp:  5 connections/hour.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { eventually } from '../support/kube-registry-fixture.js';
import type { RunningPod } from '../support/pod-runner.js';
import {
  HTTP_PORT,
  MeshClient,
  type PodSpec,
  SidecarMesh,
  sidecarSuiteSkipReason,
  TCP_PORT,
} from './mesh.js';

const sfx = randomBytes(3).toString('hex');
const skip = await sidecarSuiteSkipReason();
const HEADER = 'x-skein-limited';

describe('local rate limits through real Envoy sidecars', { skip, timeout: 300_000 }, () => {
  let mesh: SidecarMesh;
  let caller: MeshClient;
  const pods = new Map<string, RunningPod>();
  const url = (path: string) => `http://rl-http:${HTTP_PORT}${path}`;
  const get = (path: string, count: number) => caller.http(url(path), count, { showHeaders: [HEADER] });
  /** One stat of a pod's Envoy, found by the end of its name (-1 when absent). */
  const stat = async (pod: string, suffix: string): Promise<number> => {
    const stats = (await pods.get(pod)?.envoyStats('local_rate_limit')) ?? new Map<string, number>();
    const key = [...stats.keys()].find((k) => k.endsWith(suffix));
    return key === undefined ? -1 : (stats.get(key) ?? -1);
  };
  const setting = (name: string, spec: Record<string, unknown>) =>
    mesh.apply('policy.skein.dev', 'v1alpha1', 'upstreamtrafficsettings', {
      apiVersion: 'policy.skein.dev/v1alpha1',
      kind: 'UpstreamTrafficSetting',
      metadata: { name, namespace: mesh.namespace },
      spec: { host: `${name}.${mesh.namespace}.svc.cluster.local`, ...spec },
    });
  const HTTP_SPEC = {
    rateLimit: {
      local: {
        http: {
          requests: 10,
          unit: 'hour',
          responseStatusCode: 503,
          responseHeadersToAdd: [{ name: HEADER, value: 'service' }],
        },
      },
    },
    httpRoutes: [
      {
        path: '/scarce',
        rateLimit: {
          local: { requests: 3, unit: 'hour', responseHeadersToAdd: [{ name: HEADER, value: 'route' }] },
        },
      },
      { path: '/probe', rateLimit: { local: { requests: 100000, unit: 'second' } } },
    ],
  };

  before(async () => {
    mesh = await SidecarMesh.start(`rl${sfx}`);
    await mesh.setMeshConfig({ traffic: { permissive: true } });
    for (const sa of ['caller', 'backend']) await mesh.createServiceAccount(sa);
    await mesh.createService({
      name: 'rl-http',
      selector: { app: 'rl-http' },
      ports: [{ name: 'http', port: HTTP_PORT }],
    });
    await mesh.createService({
      name: 'rl-late',
      selector: { app: 'rl-late' },
      ports: [{ name: 'http', port: HTTP_PORT }],
    });
    await mesh.createService({
      name: 'rl-tcp',
      selector: { app: 'rl-tcp' },
      ports: [{ name: 'tcp', port: TCP_PORT }],
    });
    await setting('rl-http', HTTP_SPEC);
    await setting('rl-tcp', { rateLimit: { local: { tcp: { connections: 5, unit: 'hour' } } } });
    const http = ['--http', String(HTTP_PORT)];
    const specs: PodSpec[] = [
      { name: 'caller', serviceAccount: 'caller', labels: { app: 'caller' }, serve: http },
      { name: 'rl-http-1', serviceAccount: 'backend', labels: { app: 'rl-http' }, serve: http },
      { name: 'rl-late-1', serviceAccount: 'backend', labels: { app: 'rl-late' }, serve: http },
      {
        name: 'rl-tcp-1',
        serviceAccount: 'backend',
        labels: { app: 'rl-tcp' },
        serve: [...http, '--tcp', String(TCP_PORT)],
      },
    ];
    const started = await Promise.all(specs.map((s) => mesh.startPod(s)));
    await Promise.all(started.map((p) => mesh.waitReady(p)));
    for (const p of started) pods.set(p.name, p);
    // The destinations must have their limits before the caller first connects: a
    // connection accepted on a chain without them keeps that chain until Envoy drains it.
    await eventually(
      'the destinations have their rate-limit filters',
      async () => {
        assert.ok((await stat('rl-http-1', `rl-http_${HTTP_PORT}.http_local_rate_limit.enabled`)) >= 0);
        assert.ok((await stat('rl-tcp-1', `rl-tcp_${TCP_PORT}_tcp.rate_limited`)) >= 0);
      },
      60_000,
    );
    const callerPod = pods.get('caller');
    assert.ok(callerPod);
    caller = MeshClient.open(callerPod);
    // /probe has a bucket of its own: readiness costs the measured buckets nothing.
    await eventually(
      'the caller reaches rl-http',
      async () => {
        const r = await get('/probe', 1);
        assert.equal(r.counts['200 rl-http-1'], 1, JSON.stringify(r));
      },
      60_000,
    );
  });

  after(async () => {
    await caller?.close();
    await mesh?.stop();
  });

  test('HTTP: requests within the rate succeed, the rest get the configured status and header, counted by Envoy', async () => {
    const within = await get('/work', 10);
    assert.equal(within.counts['200 rl-http-1'], 10, JSON.stringify(within));
    const above = await get('/work', 20);
    const limited = above.counts['503'] ?? 0;
    console.log(
      `HTTP 10/hour: first 10 → ${JSON.stringify(within.counts)}; next 20 → ${JSON.stringify(above.counts)}; limited body ${JSON.stringify(above.bodies['503'])}`,
    );
    assert.equal(limited, 20, JSON.stringify(above));
    assert.match(above.bodies['503'] ?? '', new RegExp(`^${HEADER}: service\\n`));
    assert.match(above.bodies['503'] ?? '', /local_rate_limited/);
    const vhost = `rl-http_${HTTP_PORT}.http_local_rate_limit`;
    const rateLimited = await stat('rl-http-1', `${vhost}.rate_limited`);
    const ok = await stat('rl-http-1', `${vhost}.ok`);
    console.log(`HTTP 10/hour: destination stats ${vhost}.ok ${ok}, .rate_limited ${rateLimited}`);
    assert.equal(rateLimited, 20);
    assert.equal(ok, 10);
  });

  test('a per-route limit applies to its path only, with its own bucket and status', async () => {
    const scarce = await get('/scarce', 6);
    console.log(
      `route /scarce 3/hour: 6 calls → ${JSON.stringify(scarce.counts)}; ${JSON.stringify(scarce.bodies['429'])}`,
    );
    assert.equal(scarce.counts['200 rl-http-1'], 3, JSON.stringify(scarce));
    assert.equal(scarce.counts['429'], 3, JSON.stringify(scarce));
    assert.match(scarce.bodies['429'] ?? '', new RegExp(`^${HEADER}: route\\n`));
    // Matched like an HTTPRouteGroup path (anchored at the start): /scarce/1 shares the route's bucket.
    const below = await get('/scarce/1', 1);
    assert.equal(below.counts['429'], 1, JSON.stringify(below));
    // The other routes keep their own buckets: the service's is still spent, /probe still has tokens.
    const others = await get('/work', 1);
    assert.equal(others.counts['503'], 1, JSON.stringify(others));
    const probe = await get('/probe', 5);
    assert.equal(probe.counts['200 rl-http-1'], 5, JSON.stringify(probe));
    assert.equal(
      await stat('rl-http-1', `rl-http_${HTTP_PORT}_route0.http_local_rate_limit.rate_limited`),
      4,
    );
  });

  test('an invalid edit is refused (problem and status) and the last valid limits stay in force', async () => {
    await setting('rl-http', {
      ...HTTP_SPEC,
      rateLimit: { local: { http: { requests: 10, unit: 'hour', responseStatusCode: 499 } } },
    });
    await eventually('the edit is refused with its reason', async () => {
      const problems = JSON.stringify(await mesh.debug('problems'));
      assert.match(problems, /responseStatusCode: 499 is not a 4xx\/5xx status Envoy knows/);
      const stored = (await mesh.api.request(
        'GET',
        `/apis/policy.skein.dev/v1alpha1/namespaces/${mesh.namespace}/upstreamtrafficsettings/rl-http`,
      )) as { status?: { conditions?: { type: string; status: string; message: string }[] } };
      const accepted = stored.status?.conditions?.find((c) => c.type === 'Accepted');
      assert.equal(accepted?.status, 'False', JSON.stringify(stored.status));
      console.log(`invalid edit: rl-http Accepted=False: ${accepted?.message}`);
    });
    // The previous version still limits: same status, same header, spent bucket.
    const r = await get('/work', 2);
    assert.equal(r.counts['503'], 2, JSON.stringify(r));
    assert.match(r.bodies['503'] ?? '', new RegExp(`^${HEADER}: service\\n`));
  });

  test('a valid edit applies at runtime with full buckets: a higher rate lets requests through again', async () => {
    await setting('rl-http', {
      ...HTTP_SPEC,
      rateLimit: { local: { http: { ...HTTP_SPEC.rateLimit.local.http, requests: 1000 } } },
    });
    const applied = Date.now();
    let r = await get('/work', 1);
    await eventually('the new bucket answers', async () => {
      r = await get('/work', 1);
      assert.equal(r.counts['200 rl-http-1'], 1, JSON.stringify(r));
    });
    const tookMs = Date.now() - applied;
    const after = await get('/work', 20);
    console.log(
      `edit to 1000/hour: in force ${tookMs} ms after the apply; 20 calls → ${JSON.stringify(after.counts)}`,
    );
    assert.equal(after.counts['200 rl-http-1'], 20, JSON.stringify(after));
  });

  test('a limit put on a service its callers are already connected to applies at once, over RDS', async () => {
    const late = `http://rl-late:${HTTP_PORT}/work`;
    await eventually('the caller reaches rl-late', async () => {
      const r = await caller.http(late, 1);
      assert.equal(r.counts['200 rl-late-1'], 1, JSON.stringify(r));
    });
    // Pooled upstream connections from the caller's sidecar are open now.
    const before = await caller.http(late, 20, { parallel: 4 });
    assert.equal(before.counts['200 rl-late-1'], 20, JSON.stringify(before));
    await setting('rl-late', { rateLimit: { local: { http: { requests: 5, unit: 'hour' } } } });
    const applied = Date.now();
    let r = before;
    await eventually('the limit answers on the open connections', async () => {
      r = await caller.http(late, 10, { parallel: 4 });
      assert.ok((r.counts['429'] ?? 0) >= 5, JSON.stringify(r));
    });
    const tookMs = Date.now() - applied;
    console.log(
      `limit added to a busy service: in force ${tookMs} ms after the apply; 10 calls → ${JSON.stringify(r.counts)}`,
    );
    assert.ok(tookMs < 10_000, `${tookMs} ms`);
  });

  test('TCP: connections above the bucket are closed by the destination, counted in local_rate_limit.*.rate_limited', async () => {
    let first = { counts: {} as Record<string, number> };
    // Calls before the caller knows rl-tcp never reach its sidecar; the first that does spends one token.
    await eventually(
      'the caller reaches rl-tcp',
      async () => {
        first = await caller.send({ kind: 'tcp', host: 'rl-tcp', port: TCP_PORT, count: 1 });
        assert.equal(first.counts['ok rl-tcp-1'], 1, JSON.stringify(first));
      },
      60_000,
    );
    const spentBefore = await stat('rl-tcp-1', `rl-tcp_${TCP_PORT}_tcp.rate_limited`);
    const r = await caller.send({ kind: 'tcp', host: 'rl-tcp', port: TCP_PORT, count: 10 });
    const ok = r.counts['ok rl-tcp-1'] ?? 0;
    const refused = 10 - ok;
    const rateLimited =
      (await stat('rl-tcp-1', `rl-tcp_${TCP_PORT}_tcp.rate_limited`)) - Math.max(0, spentBefore);
    console.log(
      `TCP 5/hour: after the first connection, 10 more → ${JSON.stringify(r.counts)}; destination local_rate_limit rate_limited +${rateLimited}`,
    );
    // Five tokens in all, at least one spent reaching it: at most four more connections get through.
    assert.ok(ok <= 4, JSON.stringify(r));
    assert.equal(rateLimited, refused, JSON.stringify(r));
    assert.ok(
      Object.keys(r.counts).every((k) => k === 'ok rl-tcp-1' || k === 'closed' || k === 'ECONNRESET'),
      JSON.stringify(r),
    );
  });
});
