import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  bookstoreMesh,
  bookstoreObjects,
  generationContext,
  proxyFor,
  rawSplit,
  storeOf,
  viewOf,
} from '../../../test/support/envoy/mesh.js';
import { bookbuyerRetries, retry } from '../../../test/support/envoy/retry.js';
import { resourceProblems } from '../../../test/support/envoy/roundtrip.js';
import type { MeshView } from '../../catalog/types.js';
import { decodeMessage, encodeMessage } from '../../xds/proto/codec.js';
import { type ProtoObject, TypeUrl } from '../types.js';
import { proxylessRouteGenerator } from './proxyless.js';

const APEX = 'bookstore.bookstore.svc.cluster.local:14001';

function routes(mesh: MeshView, requested?: string[]) {
  const proxy = proxyFor(mesh, 'bookbuyer-1', 'grpc');
  return proxylessRouteGenerator.generate(proxy, generationContext(mesh), requested && new Set(requested));
}

/** The single virtual host, as a client decodes it. */
function vhost(message: ProtoObject | undefined): { domains: unknown; route: unknown } {
  assert.ok(message);
  const rc = decodeMessage(TypeUrl.RouteConfiguration, encodeMessage(TypeUrl.RouteConfiguration, message));
  const vhosts = rc['virtual_hosts'];
  assert.ok(Array.isArray(vhosts) && vhosts.length === 1);
  const vh = vhosts[0] as { domains: unknown; routes: { match: unknown; route: unknown }[] };
  assert.equal(vh.routes.length, 1);
  assert.deepEqual(vh.routes[0]?.match, { prefix: '/' });
  return { domains: vh.domains, route: vh.routes[0]?.route };
}

test('a split apex routes by weighted_clusters to its backends; domains cover every alias', () => {
  const out = routes(bookstoreMesh(), [APEX]);
  assert.deepEqual(
    out.map((r) => r.name),
    [APEX],
  );
  assert.deepEqual(resourceProblems(out), []);
  const { domains, route } = vhost(out[0]?.message);
  assert.deepEqual(domains, [
    'bookstore.bookstore.svc.cluster.local:14001',
    'bookstore.bookstore.svc:14001',
    'bookstore.bookstore:14001',
    'bookstore.bookstore.svc.cluster.local',
    'bookstore.bookstore.svc',
    'bookstore.bookstore',
  ]);
  assert.deepEqual(route, {
    weighted_clusters: {
      clusters: [
        { name: 'bookstore/bookstore-v1|14001', weight: { value: 75 } },
        { name: 'bookstore/bookstore-v2|14001', weight: { value: 25 } },
      ],
    },
  });
});

test('zero-weight backends are omitted; an all-zero split falls back to the apex cluster', () => {
  // Through the policy engine (which drops them), and handed to the generator as they are.
  for (const mesh of [
    bookstoreMesh({ weights: { v1: 0, v2: 10 } }),
    rawSplit(bookstoreMesh(), { v1: 0, v2: 10 }),
  ]) {
    const oneLeft = vhost(routes(mesh, [APEX])[0]?.message);
    assert.deepEqual(oneLeft.route, {
      weighted_clusters: { clusters: [{ name: 'bookstore/bookstore-v2|14001', weight: { value: 10 } }] },
    });
  }
  for (const mesh of [
    bookstoreMesh({ weights: { v1: 0, v2: 0 } }),
    rawSplit(bookstoreMesh(), { v1: 0, v2: 0 }),
  ]) {
    const none = vhost(routes(mesh, [APEX])[0]?.message);
    assert.deepEqual(none.route, { cluster: 'bookstore/bookstore|14001' });
  }
});

test('a plain service routes to its own cluster; only canonical names are route configurations', () => {
  const mesh = bookstoreMesh();
  const out = routes(mesh, [
    'bookstore-v1.bookstore.svc.cluster.local:14001',
    'bookstore.bookstore:14001',
    'x:1',
  ]);
  assert.deepEqual(
    out.map((r) => r.name),
    ['bookstore-v1.bookstore.svc.cluster.local:14001'],
  );
  assert.deepEqual(vhost(out[0]?.message).route, { cluster: 'bookstore/bookstore-v1|14001' });
  assert.deepEqual(
    routes(mesh, undefined).map((r) => r.name),
    [
      'bookstore-v1.bookstore.svc.cluster.local:14001',
      'bookstore-v2.bookstore.svc.cluster.local:14001',
      'bookstore.bookstore.svc.cluster.local:14001',
      'bookwarehouse.bookwarehouse.svc.cluster.local:14001',
      'bookwarehouse.bookwarehouse.svc.cluster.local:3306',
      'mysql.bookwarehouse.svc.cluster.local:3306',
    ],
  );
});

test('a Retry for a proxyless client: the subset grpc-js-xds applies (gRPC status names, num_retries, backoff), intact through the wire encoding', () => {
  const mesh = viewOf(storeOf([...bookstoreObjects(), ...bookbuyerRetries()]));
  const out = routes(mesh, [APEX]);
  assert.deepEqual(resourceProblems(out), []);
  const { route } = vhost(out[0]?.message);
  assert.deepEqual((route as { retry_policy?: unknown }).retry_policy, {
    retry_on: 'unavailable',
    num_retries: { value: 3 },
    retry_back_off: {
      base_interval: { seconds: 0, nanos: 10_000_000 },
      max_interval: { seconds: 0, nanos: 100_000_000 },
    },
  });
  // HTTP-only conditions mean nothing to grpc-js: no retry_policy at all.
  const httpOnly = viewOf(
    storeOf([
      ...bookstoreObjects(),
      retry('bookbuyer', 'http', 'bookbuyer', ['bookstore/bookstore'], { retryOn: '5xx', numRetries: 2 }),
    ]),
  );
  const plain = vhost(routes(httpOnly, [APEX])[0]?.message).route as { retry_policy?: unknown };
  assert.equal(plain.retry_policy, undefined);
});
