import assert from 'node:assert/strict';
import { test } from 'node:test';
import { gatewayRdsGenerator } from '../rds/gateway.js';
import { referencesOf } from '../testing/crossref.js';
import { gatewayContext, gatewayObjects, gatewayProxy } from '../testing/gateway.js';
import { storeOf, viewOf } from '../testing/mesh.js';
import { at, named } from '../testing/pick.js';
import { gatewayCdsGenerator } from './gateway.js';

function generated(permissive: boolean) {
  const mesh = viewOf(storeOf(gatewayObjects({ permissive })));
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
  assert.equal(
    at(tls, 'common_tls_context', 'validation_context_sds_secret_config', 'name'),
    'root-cert-for-mtls-outbound:bookstore/bookstore-v1',
  );
});
