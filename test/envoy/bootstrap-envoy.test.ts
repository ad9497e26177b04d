// The injector's sidecar bootstrap in the real Envoy binaries (test/envoybin,
// the oldest supported and the newest): both accept it with either ADS
// transport (`--mode validate`), and a short run against a stub ADS server
// shows what its settings are for: the node only on a stream's first request,
// the transport asked for, no "no configured limit" warning at start, and
// connections past the limit refused.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { BuiltinCA } from '../../pkg/certificate/builtin.js';
import { TypeUrl } from '../../pkg/envoy/types.js';
import {
  adsSdsFiles,
  type BootstrapOptions,
  controllerAddress,
  envoyBootstrap,
} from '../../pkg/injector/bootstrap.js';
import { ENVOY_READY_PATH, SecretKey } from '../../pkg/injector/constants.js';
import { isJsonObject, type Json } from '../../pkg/injector/pod.js';
import { messageType } from '../../pkg/xds/proto/root.js';
import {
  ENVOY_VERSIONS,
  EnvoyProcess,
  type EnvoyVersion,
  envoyValidate,
  loopbackBootstrap,
} from '../support/envoy-bin.js';
import { get } from '../support/injector/json-path.js';
import { freePorts } from '../support/processes.js';
import { type RecordedRequest, StubAdsServer } from '../support/stub-ads.js';

const NODE_ID = '6d1f3c58-0b0e-4c8a-9a43-3f6f0c2b9a11.sidecar.bookbuyer.bookbuyer.cluster.local';
const NO_LIMIT_WARNING =
  'There is no configured limit to the number of allowed active downstream connections';

let dir: string;

before(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'skein-bootstrap-envoy-'));
  // Validate mode opens the SDS files the bootstrap names, so the credentials must exist.
  const ca = await BuiltinCA.create();
  const cert = await ca.issue({ commonName: NODE_ID, validityMs: 3_600_000, usage: 'client' });
  const sds = adsSdsFiles(dir);
  await Promise.all([
    writeFile(path.join(dir, SecretKey.cert), cert.certPem),
    writeFile(path.join(dir, SecretKey.key), cert.keyPem),
    writeFile(path.join(dir, SecretKey.ca), cert.caPem),
    writeFile(path.join(dir, SecretKey.adsCertSds), JSON.stringify(sds.cert)),
    writeFile(path.join(dir, SecretKey.adsCaSds), JSON.stringify(sds.ca)),
  ]);
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

function bootstrap(extra: Partial<BootstrapOptions> = {}): Json {
  const b: Json = JSON.parse(
    JSON.stringify(
      envoyBootstrap({
        nodeId: NODE_ID,
        nodeCluster: 'bookbuyer.bookbuyer',
        controller: controllerAddress('skein-system'),
        mountPath: dir,
        ...extra,
      }),
    ),
  );
  return b;
}

/** CDS and LDS answered and ACKed on Envoy's first stream: Envoy has initialised. */
function initialised(requests: readonly RecordedRequest[]): boolean {
  const acked = (t: string) =>
    requests.some((r) => r.stream === 1 && r.typeUrl === t && r.responseNonce !== '');
  return acked(TypeUrl.Cluster) && acked(TypeUrl.Listener);
}

interface StubRun {
  requests: RecordedRequest[];
  output: string;
  /** Connections the Prometheus listener let stay open, of three opened (undefined: not tried). */
  keptOpen?: number;
  overflow?: number;
}

/** Runs Envoy on `b` (made loopback) against a stub ADS server until it has initialised. */
async function runAgainstStub(version: EnvoyVersion, b: Json, tryConnections = false): Promise<StubRun> {
  const stub = new StubAdsServer();
  const port = await stub.start();
  const run = await EnvoyProcess.start(version, JSON.stringify(loopbackBootstrap(b, port)));
  try {
    await stub.waitFor(initialised);
    const result: StubRun = { requests: [...stub.requests], output: '' };
    if (tryConnections) {
      // Static listeners start once initialisation is over; Envoy is then LIVE.
      await run.live(5_000);
      const listeners: unknown = JSON.parse(await run.admin('/listeners?format=json'));
      result.keptOpen = await connectionsKeptOpen(listenerPort(listeners, 'skein-prometheus'), 3);
      const stats = await run.stats('downstream_global_cx_overflow');
      // Named by the configured address (port 0 here), like every listener stat.
      result.overflow = stats.get('listener.127.0.0.1_0.downstream_global_cx_overflow');
    }
    result.output = (await run.stop()).output;
    return result;
  } finally {
    await run.stop();
    stub.close();
  }
}

/** The port a static listener bound (the loopback bootstrap gives every listener port 0). */
function listenerPort(listeners: unknown, name: string): number {
  const statuses =
    typeof listeners === 'object' && listeners !== null && 'listener_statuses' in listeners
      ? listeners.listener_statuses
      : undefined;
  assert.ok(Array.isArray(statuses));
  const text = JSON.stringify(statuses.find((s) => JSON.stringify(s).includes(`"${name}"`)));
  const port = Number(/"port_value":(\d+)/.exec(text)?.[1]);
  assert.ok(port > 0, `no ${name} listener port in ${JSON.stringify(listeners)}`);
  return port;
}

/**
 * The native layout's readiness route on a running Envoy: admin on a known free
 * port and the admin cluster pointed at it (in a pod both are 127.0.0.1:15000).
 * Returns what kubelet's probe sees while LIVE, for another path, and after
 * /healthcheck/fail (the DRAINING state).
 */
async function readinessRoute(
  version: EnvoyVersion,
): Promise<{ live: string; other: number; draining: string }> {
  const [adminPort = 0] = await freePorts(1);
  const stub = new StubAdsServer();
  const adsPort = await stub.start();
  const lb = loopbackBootstrap(bootstrap({ envoyReadiness: true }), adsPort);
  const admin = { socket_address: { address: '127.0.0.1', port_value: adminPort } };
  const clusters = get(lb, 'static_resources', 'clusters');
  assert.ok(isJsonObject(lb) && isJsonObject(lb['admin']) && Array.isArray(clusters));
  lb['admin']['address'] = admin;
  const adminCluster = clusters.find((c) => isJsonObject(c) && c['name'] === 'skein-envoy-admin');
  assert.ok(isJsonObject(adminCluster));
  adminCluster['load_assignment'] = {
    cluster_name: 'skein-envoy-admin',
    endpoints: [{ lb_endpoints: [{ endpoint: { address: admin } }] }],
  };
  const run = await EnvoyProcess.start(version, JSON.stringify(lb));
  try {
    await stub.waitFor(initialised);
    await run.live(5_000);
    const port = listenerPort(JSON.parse(await run.admin('/listeners?format=json')), 'skein-envoy-ready');
    const probe = async (p: string) => {
      const res = await fetch(`http://127.0.0.1:${port}${p}`);
      return { status: res.status, body: (await res.text()).trim() };
    };
    const live = await probe(ENVOY_READY_PATH);
    const other = (await probe('/stats')).status;
    const fail = await fetch(`http://127.0.0.1:${adminPort}/healthcheck/fail`, { method: 'POST' });
    assert.equal(fail.status, 200);
    const draining = await probe(ENVOY_READY_PATH);
    return { live: `${live.status} ${live.body}`, other, draining: `${draining.status} ${draining.body}` };
  } finally {
    await run.stop();
    stub.close();
  }
}

/** Opens `n` connections one after another and holds them; how many Envoy has not closed 300 ms later. */
async function connectionsKeptOpen(port: number, n: number): Promise<number> {
  const sockets: { socket: net.Socket; closed: boolean }[] = [];
  for (let i = 0; i < n; i++) {
    const entry = { socket: net.connect(port, '127.0.0.1'), closed: false };
    entry.socket.on('close', () => (entry.closed = true));
    entry.socket.on('error', () => {});
    sockets.push(entry);
    await new Promise((r) => setTimeout(r, 100));
  }
  await new Promise((r) => setTimeout(r, 300));
  const open = sockets.filter((s) => !s.closed).length;
  for (const s of sockets) s.socket.destroy();
  return open;
}

function nodeId(node: Buffer): unknown {
  const type = messageType('envoy.config.core.v3.Node');
  return type.toObject(type.decode(node))['id'];
}

for (const version of ENVOY_VERSIONS) {
  describe(`Envoy ${version}`, () => {
    test('validate mode accepts the bootstrap with either ADS transport', async () => {
      for (const xdsTransport of ['sotw', 'delta'] as const) {
        const r = await envoyValidate(version, JSON.stringify(bootstrap({ xdsTransport })));
        assert.equal(r.code, 0, r.output);
        assert.match(r.output, /configuration '.*' OK/, xdsTransport);
      }
    });

    test("native layout: the readiness listener answers kubelet with admin's /ready, and only that path", async () => {
      const r = await readinessRoute(version);
      assert.deepEqual(r, { live: '200 LIVE', other: 404, draining: '503 DRAINING' });
    });

    test('SotW: the node on the first request only; no connection-limit warning; the limit refuses connections', async (t) => {
      const r = await runAgainstStub(version, bootstrap({ maxDownstreamConnections: 2 }), true);
      assert.ok(r.requests.every((q) => q.method === 'sotw'));
      const [first, ...rest] = r.requests;
      assert.ok(first?.node, 'the first request carries the node');
      assert.equal(nodeId(first.node), NODE_ID);
      assert.deepEqual(
        rest.filter((q) => q.node).map((q) => q.typeUrl),
        [],
        'no later request carries the node',
      );
      assert.ok(!r.output.includes(NO_LIMIT_WARNING), r.output);
      // Limit 2: the third connection is closed by Envoy at accept, and counted.
      assert.equal(r.keptOpen, 2);
      assert.equal(r.overflow, 1);
      t.diagnostic(
        `request bytes: first ${first.bytes.length} (node ${first.node.length}); later ${rest.map((q) => q.bytes.length).join(', ')}`,
      );
    });

    test('Delta: DeltaAggregatedResources; the node on the first request only from Envoy 1.38 on', async (t) => {
      const r = await runAgainstStub(version, bootstrap({ xdsTransport: 'delta' }));
      assert.ok(r.requests.length >= 4, 'CDS and LDS, each requested and ACKed');
      assert.ok(r.requests.every((q) => q.method === 'delta'));
      assert.ok(r.requests[0]?.node);
      // Envoy's delta mux ignored set_node_on_first_message_only before 1.38 (envoyproxy/envoy#42650):
      // 1.36 repeats the node in every Delta request whatever the bootstrap says.
      const repeated = r.requests.slice(1).filter((q) => q.node).length;
      assert.equal(repeated, version === '1.36.2' ? r.requests.length - 1 : 0);
      assert.ok(!r.output.includes(NO_LIMIT_WARNING), r.output);
      t.diagnostic(`request bytes: ${r.requests.map((q) => q.bytes.length).join(', ')}`);
    });

    test('control: without those settings Envoy warns and repeats the node (the checks above can fail)', async (t) => {
      const b = bootstrap();
      const ads = get(b, 'dynamic_resources', 'ads_config');
      assert.ok(isJsonObject(b) && isJsonObject(ads));
      delete b['overload_manager'];
      delete ads['set_node_on_first_message_only'];
      const r = await runAgainstStub(version, b);
      assert.ok(r.output.includes(NO_LIMIT_WARNING), r.output);
      assert.ok(r.requests.length >= 4);
      assert.ok(
        r.requests.every((q) => q.node),
        'every request carries the node',
      );
      t.diagnostic(`request bytes: ${r.requests.map((q) => q.bytes.length).join(', ')}`);
    });
  });
}
