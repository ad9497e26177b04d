import assert from 'node:assert/strict';
import { test } from 'node:test';
import { service } from '../../../test/support/catalog-fixtures.js';
import { gatewayContext, gatewayObjects, gatewayProxy } from '../../../test/support/envoy/gateway.js';
import { bookstoreMesh, proxyFor, storeOf, viewOf } from '../../../test/support/envoy/mesh.js';
import { at, byNameIn, list, named, names } from '../../../test/support/envoy/pick.js';
import { buildMeshView } from '../../catalog/view.js';
import { DEFAULT_MESH_NAME } from '../../mesh/constants.js';
import type { ProtoValue } from '../types.js';
import { gatewayLdsGenerator } from './gateway.js';

const SHOP = 'bookstore/shop-tls';
const WAREHOUSE = 'bookwarehouse/warehouse-tls';

function lds(servable: readonly string[], mesh = viewOf(storeOf(gatewayObjects()))) {
  return gatewayLdsGenerator.generate(gatewayProxy(mesh), gatewayContext(mesh, servable), undefined);
}

function hcmOf(chain: ProtoValue | undefined) {
  return at(
    byNameIn(list(chain, 'filters'), 'envoy.filters.network.http_connection_manager'),
    'typed_config',
  );
}

test('the plaintext listener is always there, even without any Ingress of class skein', () => {
  for (const mesh of [viewOf(storeOf(gatewayObjects())), bookstoreMesh()]) {
    const out = lds([], mesh);
    assert.deepEqual(
      out.map((r) => r.name),
      ['gateway-http'],
    );
    const l = named(out, 'gateway-http');
    assert.deepEqual(at(l, 'address', 'socket_address'), { address: '0.0.0.0', port_value: 8080 });
    const hcm = hcmOf(list(l, 'filter_chains')[0]);
    assert.equal(at(hcm, 'rds', 'route_config_name'), 'gateway-http');
    // At the edge: the connection's peer is the client; paths normalised before matching.
    assert.deepEqual(at(hcm, 'use_remote_address'), { value: true });
    assert.deepEqual(at(hcm, 'normalize_path'), { value: true });
    assert.equal(at(hcm, 'merge_slashes'), true);
    assert.equal(at(hcm, 'strip_any_host_port'), true);
  }
});

test('the TLS listener exists only while some Ingress Secret is servable, one SNI chain per servable Secret', () => {
  // Named by Ingresses but not held (absent or invalid): no TLS listener, which would stay warming.
  assert.deepEqual(
    lds([]).map((r) => r.name),
    ['gateway-http'],
  );
  // A valid Secret no Ingress names opens nothing either.
  assert.deepEqual(
    lds(['bookstore/unnamed']).map((r) => r.name),
    ['gateway-http'],
  );

  const one = named(lds([SHOP]), 'gateway-https');
  assert.deepEqual(at(one, 'address', 'socket_address'), { address: '0.0.0.0', port_value: 8443 });
  assert.deepEqual(names(list(one, 'listener_filters')), ['envoy.filters.listener.tls_inspector']);
  const chains = list(one, 'filter_chains');
  assert.deepEqual(names(chains), ['gateway-https:bookstore/shop-tls']);
  // The TLS entry without hosts took the rule hosts (the `*` rule is reported, not served).
  assert.deepEqual(at(chains[0], 'filter_chain_match'), {
    server_names: ['*.shop.example.com', 'shop.example.com'],
  });
  const tls = at(chains[0], 'transport_socket', 'typed_config', 'common_tls_context');
  assert.deepEqual(
    list(tls, 'tls_certificate_sds_secret_configs').map((c) => at(c, 'name')),
    ['ingress-tls:bookstore/shop-tls'],
  );
  assert.deepEqual(at(tls, 'alpn_protocols'), ['h2', 'http/1.1']);
  // No client certificate is asked of the public.
  assert.equal(at(chains[0], 'transport_socket', 'typed_config', 'require_client_certificate'), undefined);
  assert.equal(at(hcmOf(chains[0]), 'rds', 'route_config_name'), 'gateway-https');

  const both = list(named(lds([WAREHOUSE, SHOP]), 'gateway-https'), 'filter_chains');
  assert.deepEqual(names(both), [
    'gateway-https:bookstore/shop-tls',
    'gateway-https:bookwarehouse/warehouse-tls',
  ]);
  assert.deepEqual(at(both[1], 'filter_chain_match', 'server_names'), ['warehouse.example.com']);
});

test('only the gateway kind gets these listeners', () => {
  const mesh = viewOf(storeOf(gatewayObjects()));
  const out = gatewayLdsGenerator.generate(
    proxyFor(mesh, 'bookbuyer-1'),
    gatewayContext(mesh, [SHOP]),
    undefined,
  );
  assert.deepEqual(out, []);
});

test('unchanged plan and Secrets: the same listener objects in the next view', () => {
  const store = storeOf(gatewayObjects());
  const v1 = buildMeshView(store, { meshName: DEFAULT_MESH_NAME });
  const first = lds([SHOP], v1);
  store.upsert(service('bookstore', 'unrelated', [{ name: 'http', port: 80 }]));
  const v2 = buildMeshView(store, { meshName: DEFAULT_MESH_NAME, previous: v1 });
  const second = lds([SHOP], v2);
  assert.equal(named(second, 'gateway-https'), named(first, 'gateway-https'));
  assert.equal(named(second, 'gateway-http'), named(first, 'gateway-http'));
  // A Secret becoming servable changes the TLS listener.
  assert.notEqual(named(lds([SHOP, WAREHOUSE], v2), 'gateway-https'), named(first, 'gateway-https'));
});
