// Clusters and routes shaped by UpstreamTrafficSettings (circuit breakers,
// outlier detection, each load-balancing policy, connect and request
// timeouts, per-connection request caps on HTTP and gRPC ports, route hash
// policies on headers, cookies and source IPs) pass Envoy's own validation rules.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fetchSidecarConfig } from '../support/envoy/fetch.js';
import { bookstoreObjects, generationContext, proxyFor, storeOf, viewOf } from '../support/envoy/mesh.js';
import { upstreamSetting } from '../support/envoy/upstream.js';
import { encodeResources, validateWithEnvoy } from '../support/envoy-validate.js';

const setting = upstreamSetting;

const SETTINGS = [
  setting('bookstore', 'bookstore-v1', {
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
      failurePercentage: { threshold: 40, minimumHosts: 2, requestVolume: 10 },
    },
    loadBalancer: { policy: 'LeastRequest', choiceCount: 3 },
    requestTimeout: '1500ms',
  }),
  setting('bookstore', 'bookstore-v2', { loadBalancer: { policy: 'RingHash' }, requestTimeout: '0' }),
  // The apex: bookbuyer's route to it hashes on a header, then the source address.
  setting('bookstore', 'bookstore', {
    loadBalancer: { policy: 'RingHash', hashOn: [{ header: 'X-User', terminal: true }, { sourceIP: true }] },
    requestTimeout: '2s',
  }),
  setting('bookwarehouse', 'bookwarehouse', {
    loadBalancer: {
      policy: 'Maglev',
      hashOn: [
        { cookie: { name: 'session', ttl: '1h', path: '/' } },
        { cookie: { name: 'plain', ttl: '0' } },
      ],
    },
    connectionSettings: { http: { maxRequestsPerConnection: 10 } },
    requestTimeout: '5s',
  }),
  setting('bookwarehouse', 'mysql', {
    connectionSettings: { tcp: { maxConnections: 3, connectTimeout: '2s' } },
  }),
];

test("clusters and routes shaped by UpstreamTrafficSettings pass Envoy's validation rules", async () => {
  const mesh = viewOf(storeOf([...bookstoreObjects(), ...SETTINGS]));
  const all = [];
  for (const pod of ['bookbuyer-1', 'bookstore-v1-1'] as const) {
    const s = fetchSidecarConfig(proxyFor(mesh, pod), generationContext(mesh));
    all.push(...s.routes, ...s.clusters);
  }
  const json = JSON.stringify(all.map((r) => r.message));
  for (const field of [
    'circuit_breakers',
    'outlier_detection',
    'least_request_lb_config',
    'max_requests_per_connection',
    'hash_policy',
    'connection_properties',
  ])
    assert.ok(json.includes(field), `${field} missing`);
  for (const lb of [1, 2, 5]) assert.ok(json.includes(`"lb_policy":${lb}`), `lb_policy ${lb} missing`);
  assert.deepEqual(await validateWithEnvoy(encodeResources(all, 'upstream settings')), []);
});
