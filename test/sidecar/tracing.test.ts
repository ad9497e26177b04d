// Tracing through real Envoy sidecars: a Zipkin collector (a test process on
// the node address, reached by name from the pods like an outside server)
// receives the spans Envoy's own Zipkin tracer reports. One call from the
// caller's app to the backend leaves a CLIENT span from the caller's sidecar
// and a SERVER span from the backend's, in one trace, both tagged with the
// request's x-request-id. Sampling 0 in the MeshConfig sends none; turning
// tracing off stops the spans (both at runtime, no pod restarted). Last,
// the same through an OpenTelemetry (OTLP/gRPC) collector, switched to at
// runtime. Last, MeshConfig sidecar.logLevel reaches the Envoy of a pod
// admitted afterwards.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { eventually } from '../support/kube-registry-fixture.js';
import { OtlpCollector, type OtlpSpan } from '../support/otlp-collector.js';
import { type RunningPod, until } from '../support/pod-runner.js';
import { ZipkinCollector, type ZipkinSpan } from '../support/zipkin-collector.js';
import { HTTP_PORT, MeshClient, SidecarMesh, sidecarSuiteSkipReason } from './mesh.js';

const sfx = randomBytes(3).toString('hex');
const skip = await sidecarSuiteSkipReason();
const ZIPKIN = 'zipkin.outside.test';
// Envoy's Zipkin tracer flushes every 5 s (tracing.zipkin.flush_interval_ms) or after 5 spans.
const FLUSH_MS = 5000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('tracing to a Zipkin collector and the sidecar log level, through real Envoy sidecars', {
  skip,
  timeout: 420_000,
}, () => {
  let mesh: SidecarMesh;
  let collector: ZipkinCollector;
  let caller: RunningPod;
  let backend: RunningPod;
  let client: MeshClient;
  const url = `http://backend:${HTTP_PORT}/books`;
  const tracing = (t: Record<string, unknown>) =>
    mesh.setMeshConfig({
      traffic: { permissive: true },
      observability: { tracing: { enable: true, address: ZIPKIN, port: collector.port, ...t } },
    });
  /** `count` calls with one fresh x-request-id; its spans after a flush interval and a margin. */
  const callAndCollect = async (count: number, waitMs = FLUSH_MS + 2000) => {
    const id = randomUUID();
    const res = await client.http(url, count, { headers: { 'x-request-id': id } });
    assert.equal(res.counts['200 backend-1'], count, JSON.stringify(res.counts));
    await sleep(waitMs);
    return collector.withRequestId(id);
  };

  before(async () => {
    mesh = await SidecarMesh.start(`tr-${sfx}`);
    collector = await ZipkinCollector.start(mesh.network.gatewayIp);
    // The collector's name resolves to the node address in every pod (LOGICAL_DNS from the sidecar).
    mesh.outsideHosts.set(ZIPKIN, mesh.network.gatewayIp);
    await tracing({ sampling: 100 });
    backend = await mesh.startHttpBackend('backend');
    await mesh.createServiceAccount('caller');
    caller = await mesh.startPod({
      name: 'caller',
      serviceAccount: 'caller',
      labels: { app: 'caller' },
      serve: ['--http', String(HTTP_PORT)],
    });
    await mesh.waitReady(caller);
    client = MeshClient.open(caller);
    // Ready means Envoy has a first configuration, not yet the one with the backend (a loaded
    // machine has been seen answering one 403 first): wait for a call that gets through.
    await eventually(
      'the caller reaches the backend',
      async () => {
        const res = await client.http(url, 1);
        assert.equal(res.counts['200 backend-1'], 1, JSON.stringify(res.counts));
      },
      30_000,
    );
  });

  after(async () => {
    await client?.close();
    await mesh?.stop();
    await collector?.close();
  });

  test("one call: the caller's CLIENT span and the backend's SERVER span share a trace id and the request id", async () => {
    const id = randomUUID();
    const res = await client.http(url, 1, { headers: { 'x-request-id': id } });
    assert.equal(res.counts['200 backend-1'], 1, JSON.stringify(res.counts));
    const started = Date.now();
    for (;;) {
      if (collector.withRequestId(id).length >= 2) break;
      if (Date.now() - started > 30_000)
        assert.fail(
          `spans of ${id}: ${JSON.stringify(collector.withRequestId(id))}; all ${collector.spans.length}; refused ${JSON.stringify(collector.refused)}`,
        );
      await sleep(200);
    }
    const spans = collector.withRequestId(id);
    const summary = spans.map((s) => `${s.kind} ${s.localEndpoint?.serviceName} trace ${s.traceId}`);
    console.log(
      `spans of one call reached the collector ${Date.now() - started} ms after it: ${summary.join(', ')}`,
    );
    const ns = mesh.namespace;
    const clientSpan = spans.find((s) => s.kind === 'CLIENT');
    const serverSpan = spans.find((s) => s.kind === 'SERVER');
    assert.equal(clientSpan?.localEndpoint?.serviceName, `caller.${ns}`, JSON.stringify(spans));
    assert.equal(serverSpan?.localEndpoint?.serviceName, `backend.${ns}`, JSON.stringify(spans));
    assert.equal(clientSpan?.traceId, serverSpan?.traceId, 'one trace');
    assert.match(clientSpan?.traceId ?? '', /^[0-9a-f]{16,32}$/);
    assert.deepEqual(collector.refused, []);
  });

  test("sampling 0 sends no span; tracing off stops the caller's; both at runtime", async () => {
    await tracing({ sampling: 0 });
    // Applied once a batch of calls leaves no span behind.
    const deadline = Date.now() + 60_000;
    while ((await callAndCollect(5)).length > 0)
      if (Date.now() > deadline) assert.fail('sampling 0 never took effect');
    const sampled0 = await callAndCollect(20);
    assert.deepEqual(sampled0, [], 'sampling 0: no span');

    // Back on: spans come again (the collector and the cluster work), then off.
    await tracing({ sampling: 100 });
    const on = Date.now() + 60_000;
    while ((await callAndCollect(2)).length === 0)
      if (Date.now() > on) assert.fail('tracing never came back');

    await mesh.setMeshConfig({
      traffic: { permissive: true },
      observability: { tracing: { enable: false } },
    });
    // The caller's sidecar traces the app's requests on new connections: its CLIENT spans stop. The
    // backend's sidecar serves the caller's pooled connection under the HCM it was accepted with
    // until Envoy drains it, so its spans are only counted (docs/observability.md).
    const clientSpans = (spans: ZipkinSpan[]) => spans.filter((s) => s.kind === 'CLIENT');
    const off = Date.now() + 90_000;
    let batches = 0;
    while (clientSpans(await callAndCollect(5)).length > 0) {
      batches++;
      if (Date.now() > off) assert.fail('tracing never stopped');
    }
    const after = await callAndCollect(20);
    console.log(
      `tracing off: ${batches} batches still traced before it applied; then 20 calls, ${clientSpans(after).length} caller spans, ${after.length} in all`,
    );
    assert.deepEqual(clientSpans(after), [], 'off: no caller span');
    // And the collector cluster left the sidecar's CDS with it.
    const clusters = await caller.envoyAdmin('/clusters');
    assert.ok(!clusters.includes('skein-tracing::'), 'no collector cluster while off');
  });

  test('opentelemetry: switched to at runtime, both sidecars export OTLP/gRPC spans of one trace', async () => {
    const otlp = await OtlpCollector.start(mesh.network.gatewayIp);
    try {
      // An IPv4 address this time: a STATIC collector cluster (HTTP/2 for gRPC).
      await tracing({ provider: 'opentelemetry', address: mesh.network.gatewayIp, port: otlp.port });
      // A sidecar applies a new HCM config to connections it accepts from now on; the caller's
      // pooled connection to backend-1 keeps the one it was accepted with until Envoy drains it
      // (docs/observability.md). A second backend pod gets a new connection, hence the new config.
      const fresh = await mesh.startPod({
        name: 'backend-2',
        serviceAccount: 'backend',
        labels: { app: 'backend' },
        serve: ['--http', String(HTTP_PORT)],
      });
      await mesh.waitReady(fresh);
      const started = Date.now();
      let spans: OtlpSpan[] = [];
      while (spans.length < 2) {
        if (Date.now() - started > 60_000) {
          const stats = await backend.envoyStats('tracing|skein-tracing');
          assert.fail(
            `no OTLP spans of both sidecars: ${JSON.stringify(otlp.spans.slice(-2))}; backend ${JSON.stringify([...stats].filter(([, v]) => v > 0))}`,
          );
        }
        const id = randomUUID();
        const res = await client.http(url, 1, { headers: { 'x-request-id': id } });
        const served = (res.counts['200 backend-1'] ?? 0) + (res.counts['200 backend-2'] ?? 0);
        assert.equal(served, 1, JSON.stringify(res.counts));
        // The UUID's version digit carries Envoy's trace decision (zipkin-collector.ts).
        const key = (s: string) => (s.length === 36 ? s.slice(0, 14) + s.slice(15) : s);
        for (let i = 0; i < 40 && spans.length < 2; i++) {
          await sleep(250);
          spans = otlp.spans.filter((s) => key(s.attributes['guid:x-request-id'] ?? '') === key(id));
        }
      }
      const summary = spans.map((s) => `${s.kind} ${s.serviceName} trace ${s.traceId}`);
      console.log(`opentelemetry after ${Date.now() - started} ms: ${summary.join(', ')}`);
      const ns = mesh.namespace;
      const clientSpan = spans.find((s) => s.serviceName === `caller.${ns}`);
      const serverSpan = spans.find((s) => s.serviceName === `backend.${ns}`);
      assert.equal(clientSpan?.kind, 'CLIENT', JSON.stringify(spans));
      assert.equal(serverSpan?.kind, 'SERVER', JSON.stringify(spans));
      assert.equal(clientSpan?.traceId, serverSpan?.traceId, 'one trace');
      assert.match(clientSpan?.traceId ?? '', /^[0-9a-f]{32}$/);
    } finally {
      await mesh.setMeshConfig({ traffic: { permissive: true } });
      await mesh.deletePod('backend-2');
      await otlp.close();
    }
  });

  test('MeshConfig sidecar.logLevel is the Envoy level of pods admitted afterwards; running ones keep theirs', async () => {
    await mesh.setMeshConfig({ traffic: { permissive: true }, sidecar: { logLevel: 'debug' } });
    const spec = {
      name: 'verbose',
      serviceAccount: 'caller',
      labels: { app: 'verbose' },
      serve: ['--http', String(HTTP_PORT)],
    };
    // The webhook reads the MeshConfig at each admission: a dry run shows when it has the new one.
    const envoyArgs = async () =>
      (await mesh.admittedPod(spec)).spec?.containers?.find((c) => c.name === 'envoy')?.args ?? [];
    await until('admission gives Envoy --log-level debug', async () => (await envoyArgs()).includes('debug'));
    const verbose = await mesh.startPod(spec);
    await mesh.waitReady(verbose);
    const debugLines = (p: RunningPod) =>
      (p.containers.get('envoy')?.stderr ?? []).filter((l) => l.includes('[debug]')).length;
    const verboseLines = debugLines(verbose);
    console.log(
      `Envoy [debug] lines: new pod ${verboseLines}, caller admitted at warn ${debugLines(caller)}`,
    );
    assert.ok(verboseLines > 0, 'the new pod logs at debug');
    assert.equal(debugLines(caller), 0, 'the caller keeps the level it was admitted with');
  });
});
