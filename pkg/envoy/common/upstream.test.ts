import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  bookstoreObjects,
  fakeSecrets,
  proxyFor,
  storeOf,
  viewOf,
} from '../../../test/support/envoy/mesh.js';
import { at, named, outboundHosts } from '../../../test/support/envoy/pick.js';
import { buildMeshView } from '../../catalog/view.js';
import { DEFAULT_MESH_NAME } from '../../mesh/constants.js';
import type { AnyObject, UpstreamTrafficSettingSpec } from '../../model/objects.js';
import { proxylessClusterGenerator } from '../cds/proxyless.js';
import { sidecarCdsGenerator } from '../cds/sidecar.js';
import { sidecarRdsGenerator } from '../rds/sidecar.js';
import { durationMs } from './upstream.js';

const V1 = 'bookstore/bookstore-v1|14001';

function setting(name: string, host: string, spec: Omit<UpstreamTrafficSettingSpec, 'host'>): AnyObject {
  return {
    apiVersion: 'policy.skein.dev/v1alpha1',
    kind: 'UpstreamTrafficSetting',
    metadata: { namespace: 'bookstore', name },
    spec: { host, ...spec },
  };
}

const FULL = setting('v1', 'bookstore-v1.bookstore.svc.cluster.local', {
  connectionSettings: {
    tcp: { maxConnections: 10, connectTimeout: '250ms' },
    http: { maxRequests: 5, maxPendingRequests: 2, maxRetries: 1, maxRequestsPerConnection: 100 },
  },
  outlierDetection: {
    consecutive5xx: 3,
    consecutiveGatewayErrors: 2,
    interval: '1s',
    baseEjectionTime: '30s',
    maxEjectionPercent: 50,
  },
  loadBalancer: { policy: 'LeastRequest', choiceCount: 3 },
  requestTimeout: '1500ms',
});

function cds(objects: readonly AnyObject[]) {
  const mesh = viewOf(storeOf(objects));
  return sidecarCdsGenerator.generate(
    proxyFor(mesh, 'bookbuyer-1'),
    { mesh, secrets: fakeSecrets('all') },
    undefined,
  );
}

test('durationMs: whole seconds, and nanoseconds for the rest', () => {
  assert.deepEqual(durationMs(1500), { seconds: 1, nanos: 500_000_000 });
  assert.deepEqual(durationMs(2000), { seconds: 2 });
  assert.deepEqual(durationMs(0), { seconds: 0 });
});

test("a sidecar's upstream cluster carries the destination's thresholds, outlier detection, lb policy, timeouts", () => {
  const c = named(cds([...bookstoreObjects(), FULL]), V1);
  assert.deepEqual(c['connect_timeout'], { seconds: 0, nanos: 250_000_000 });
  assert.deepEqual(c['circuit_breakers'], {
    thresholds: [
      {
        max_connections: { value: 10 },
        max_pending_requests: { value: 2 },
        max_requests: { value: 5 },
        max_retries: { value: 1 },
        track_remaining: true,
      },
    ],
  });
  assert.deepEqual(c['outlier_detection'], {
    consecutive_5xx: { value: 3 },
    consecutive_gateway_failure: { value: 2 },
    enforcing_consecutive_gateway_failure: { value: 100 },
    interval: { seconds: 1 },
    base_ejection_time: { seconds: 30 },
    max_ejection_percent: { value: 50 },
  });
  assert.equal(c['lb_policy'], 1); // LEAST_REQUEST
  assert.deepEqual(c['least_request_lb_config'], { choice_count: { value: 3 } });
  // bookstore-v1's port 14001 is HTTP: HTTP/1.1 kept, with the per-connection request cap.
  assert.deepEqual(
    at(c, 'typed_extension_protocol_options', 'envoy.extensions.upstreams.http.v3.HttpProtocolOptions'),
    {
      '@type': 'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
      common_http_protocol_options: { max_requests_per_connection: { value: 100 } },
      explicit_http_config: { http_protocol_options: {} },
    },
  );
  // Other services' clusters are untouched.
  const v2 = named(cds([...bookstoreObjects(), FULL]), 'bookstore/bookstore-v2|14001');
  assert.equal(v2['circuit_breakers'], undefined);
  assert.deepEqual(v2['connect_timeout'], { seconds: 1 });
});

test('RingHash and Maglev set the lb policy', () => {
  for (const [policy, value] of [
    ['RingHash', 2],
    ['Maglev', 5],
  ] as const) {
    const c = named(
      cds([
        ...bookstoreObjects(),
        setting('v1', 'bookstore-v1.bookstore.svc.cluster.local', { loadBalancer: { policy } }),
      ]),
      V1,
    );
    assert.equal(c['lb_policy'], value, policy);
  }
});

test('the cluster message stays the same object while neither the service nor its setting changes', () => {
  const objects = [...bookstoreObjects(), FULL];
  const store = storeOf(objects);
  const v1 = buildMeshView(store, { meshName: DEFAULT_MESH_NAME });
  const gen = (mesh: typeof v1) =>
    named(
      sidecarCdsGenerator.generate(
        proxyFor(mesh, 'bookbuyer-1'),
        { mesh, secrets: fakeSecrets('all') },
        undefined,
      ),
      V1,
    );
  const first = gen(v1);
  // An unrelated change (a new setting for another service), then the same setting rewritten equal.
  store.upsert(setting('v2', 'bookstore-v2.bookstore.svc.cluster.local', { requestTimeout: '3s' }));
  const v2 = buildMeshView(store, { meshName: DEFAULT_MESH_NAME, previous: v1 });
  assert.equal(gen(v2), first);
  store.upsert(structuredClone(FULL));
  const v3 = buildMeshView(store, { meshName: DEFAULT_MESH_NAME, previous: v2 });
  assert.equal(gen(v3), first);
  // A changed setting is a new message.
  store.upsert(setting('v1', 'bookstore-v1.bookstore.svc.cluster.local', { requestTimeout: '2s' }));
  const v4 = buildMeshView(store, { meshName: DEFAULT_MESH_NAME, previous: v3 });
  const changed = gen(v4);
  assert.notEqual(changed, first);
  assert.equal(changed['circuit_breakers'], undefined);
});

test("requestTimeout becomes the route timeout on callers' routes to that host", () => {
  const timeout = setting('apex', 'bookstore.bookstore.svc.cluster.local', { requestTimeout: '1500ms' });
  const mesh = viewOf(storeOf([...bookstoreObjects(), timeout]));
  const routes = sidecarRdsGenerator.generate(
    proxyFor(mesh, 'bookbuyer-1'),
    { mesh, secrets: fakeSecrets('all') },
    undefined,
  );
  const hosts = outboundHosts(routes, 14001) as {
    name: string;
    routes: { route: { timeout?: unknown } }[];
  }[];
  const apex = hosts.find((h) => h.name === 'bookstore/bookstore');
  assert.deepEqual(apex?.routes[0]?.route.timeout, { seconds: 1, nanos: 500_000_000 });
  const other = hosts.find((h) => h.name === 'bookstore/bookstore-v1');
  assert.equal(other?.routes[0]?.route.timeout, undefined);
});

test('proxyless clusters get only what grpc-js-xds 1.14 reads: max_requests, RING_HASH', () => {
  const ring = setting('v1', 'bookstore-v1.bookstore.svc.cluster.local', {
    ...(FULL as { spec: UpstreamTrafficSettingSpec }).spec,
    loadBalancer: { policy: 'RingHash' },
  });
  for (const [obj, lb] of [
    [FULL, 0],
    [ring, 2],
  ] as const) {
    const mesh = viewOf(storeOf([...bookstoreObjects(), obj]));
    const out = proxylessClusterGenerator.generate(
      proxyFor(mesh, 'bookbuyer-1', 'grpc'),
      { mesh, secrets: fakeSecrets('all') },
      new Set([V1]),
    );
    const c = named(out, V1);
    assert.deepEqual(c['circuit_breakers'], { thresholds: [{ max_requests: { value: 5 } }] });
    assert.equal(c['lb_policy'], lb);
    assert.equal(c['outlier_detection'], undefined);
    assert.equal(c['connect_timeout'], undefined);
  }
});

test('failurePercentage: Envoy gets it enforced beside consecutive errors; proxyless gets it alone, success-rate ejection off', () => {
  const od = {
    consecutive5xx: 3,
    interval: '1s',
    baseEjectionTime: '30s',
    maxEjectionPercent: 50,
    failurePercentage: { threshold: 40, minimumHosts: 2, requestVolume: 10 },
  };
  const obj = setting('v1', 'bookstore-v1.bookstore.svc.cluster.local', { outlierDetection: od });
  const failurePercentage = {
    failure_percentage_threshold: { value: 40 },
    enforcing_failure_percentage: { value: 100 },
    failure_percentage_minimum_hosts: { value: 2 },
    failure_percentage_request_volume: { value: 10 },
  };
  const common = {
    interval: { seconds: 1 },
    base_ejection_time: { seconds: 30 },
    max_ejection_percent: { value: 50 },
  };
  assert.deepEqual(named(cds([...bookstoreObjects(), obj]), V1)['outlier_detection'], {
    consecutive_5xx: { value: 3 },
    ...common,
    ...failurePercentage,
  });
  const proxyless = (o: AnyObject) => {
    const mesh = viewOf(storeOf([...bookstoreObjects(), o]));
    const out = proxylessClusterGenerator.generate(
      proxyFor(mesh, 'bookbuyer-1', 'grpc'),
      { mesh, secrets: fakeSecrets('all') },
      new Set([V1]),
    );
    return named(out, V1)['outlier_detection'];
  };
  assert.deepEqual(proxyless(obj), { ...common, ...failurePercentage, enforcing_success_rate: { value: 0 } });
  // Consecutive errors alone: nothing grpc-js could apply, so nothing is sent.
  const { failurePercentage: _fp, ...consecutiveOnly } = od;
  assert.equal(
    proxyless(
      setting('v1', 'bookstore-v1.bookstore.svc.cluster.local', { outlierDetection: consecutiveOnly }),
    ),
    undefined,
  );
});
