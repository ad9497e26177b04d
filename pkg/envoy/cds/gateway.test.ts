import assert from 'node:assert/strict';
import { test } from 'node:test';
import { referencesOf } from '../../../test/support/envoy/crossref.js';
import {
  GATEWAY_NAMESPACE,
  GATEWAY_SA,
  gatewayContext,
  gatewayObjects,
  gatewayProxy,
} from '../../../test/support/envoy/gateway.js';
import { storeOf, viewOf } from '../../../test/support/envoy/mesh.js';
import { at, byNameIn, list, named } from '../../../test/support/envoy/pick.js';
import { retry } from '../../../test/support/envoy/retry.js';
import type { AnyObject } from '../../model/objects.js';
import { gatewayRdsGenerator } from '../rds/gateway.js';
import { gatewayCdsGenerator } from './gateway.js';

function generated(permissive: boolean, extra: AnyObject[] = []) {
  const mesh = viewOf(storeOf([...gatewayObjects({ permissive }), ...extra]));
  const proxy = gatewayProxy(mesh);
  const ctx = gatewayContext(mesh, []);
  return {
    clusters: gatewayCdsGenerator.generate(proxy, ctx, undefined),
    routes: gatewayRdsGenerator.generate(proxy, ctx, undefined),
  };
}

test('only the clusters the routes point at, in both modes', () => {
  const expected: [boolean, string[]][] = [
    // SMI: bookwarehouse answers 403, so no cluster for it; the apex split needs both backends.
    [false, ['bookstore/bookstore-v1|14001', 'bookstore/bookstore-v2|14001']],
    // Permissive: the gateway may call every service, yet only routed ones get a cluster.
    [
      true,
      ['bookstore/bookstore-v1|14001', 'bookstore/bookstore-v2|14001', 'bookwarehouse/bookwarehouse|14001'],
    ],
  ];
  for (const [permissive, names] of expected) {
    const { clusters, routes } = generated(permissive);
    assert.deepEqual(
      clusters.map((c) => c.name),
      names,
      `permissive ${permissive}`,
    );
    assert.deepEqual([...referencesOf(routes).clusters].sort(), names);
  }
});

test("upstream mTLS under the gateway's own identity (the fixed name), pinned to the backend's", () => {
  const { clusters } = generated(false);
  const tls = at(named(clusters, 'bookstore/bookstore-v1|14001'), 'transport_socket', 'typed_config');
  assert.equal(at(tls, 'sni'), 'bookstore-v1.bookstore.svc.cluster.local');
  assert.equal(
    at(tls, 'common_tls_context', 'tls_certificate_sds_secret_configs', 0, 'name'),
    'service-cert:self',
  );
  const combined = at(tls, 'common_tls_context', 'combined_validation_context');
  assert.equal(at(combined, 'validation_context_sds_secret_config', 'name'), 'root-cert-for-mtls-outbound');
  assert.deepEqual(at(combined, 'default_validation_context', 'match_typed_subject_alt_names'), [
    { san_type: 3, matcher: { exact: 'spiffe://cluster.local/ns/bookstore/sa/bookstore-v1' } },
  ]);
});

/** The shop.example.com route of the plaintext config whose match is on `path`. */
function shopRoute(routes: ReturnType<typeof generated>['routes'], path: string) {
  const vh = byNameIn(list(named(routes, 'gateway-http'), 'virtual_hosts'), 'shop.example.com');
  const r = list(vh, 'routes').find((x) =>
    [at(x, 'match', 'path'), at(x, 'match', 'path_separated_prefix')].includes(path),
  );
  assert.ok(r, `no route for ${path}`);
  return r;
}

test("a Retry whose source is the gateway's ServiceAccount: retry_policy on its routes, the budget on the cluster", () => {
  const toV1 = retry('bookstore', 'gateway-to-v1', GATEWAY_SA, ['bookstore/bookstore-v1'], {
    retryOn: '5xx',
    numRetries: 4,
    retryBudget: { budgetPercent: 25 },
  });
  // The Retry lives in the backend's namespace; its source names the gateway's.
  toV1.spec.source.namespace = GATEWAY_NAMESPACE;
  // Another source's Retry for the same service does not reach the gateway.
  const other = retry('bookstore', 'buyer-to-v1', 'bookbuyer', ['bookstore/bookstore-v1'], {
    retryOn: 'reset',
  });
  const { clusters, routes } = generated(true, [toV1, other]);
  // /books → bookstore-v1 retries; Exact /about → the apex, which the Retry does not name.
  assert.deepEqual(at(shopRoute(routes, '/books'), 'route', 'retry_policy'), {
    retry_on: '5xx',
    num_retries: { value: 4 },
    retry_host_predicate: [
      {
        name: 'envoy.retry_host_predicates.previous_hosts',
        typed_config: {
          '@type': 'type.googleapis.com/envoy.extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate',
        },
      },
    ],
    host_selection_retry_max_attempts: 3,
  });
  assert.equal(at(shopRoute(routes, '/about'), 'route', 'retry_policy'), undefined);
  assert.deepEqual(at(named(clusters, 'bookstore/bookstore-v1|14001'), 'circuit_breakers'), {
    thresholds: [{ retry_budget: { budget_percent: { value: 25 } } }],
  });
  assert.equal(at(named(clusters, 'bookstore/bookstore-v2|14001'), 'circuit_breakers'), undefined);
  // Without it, neither.
  const plain = generated(true, [other]);
  assert.equal(at(shopRoute(plain.routes, '/books'), 'route', 'retry_policy'), undefined);
  assert.equal(at(named(plain.clusters, 'bookstore/bookstore-v1|14001'), 'circuit_breakers'), undefined);
});
