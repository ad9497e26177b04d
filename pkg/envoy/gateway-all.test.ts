// Every resource of the ingress gateway, fetched through the kind dispatch the
// way Envoy subscribes, in both modes and with none, some or all of its TLS
// Secrets servable: survives the Envoy protos unchanged (the repo's encoder)
// and resolves every reference.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { crossReferenceProblems } from '../../test/support/envoy/crossref.js';
import {
  fetchByKind,
  gatewayContext,
  gatewayObjects,
  gatewayProxy,
} from '../../test/support/envoy/gateway.js';
import { proxyFor, storeOf, viewOf } from '../../test/support/envoy/mesh.js';
import { resourceProblems } from '../../test/support/envoy/roundtrip.js';
import type { Resource } from './types.js';

const SECRET_SETS = [[], ['bookstore/shop-tls'], ['bookstore/shop-tls', 'bookwarehouse/warehouse-tls']];

test('every gateway resource round-trips through the encoder and resolves every reference', () => {
  let total = 0;
  for (const permissive of [false, true]) {
    const mesh = viewOf(storeOf(gatewayObjects({ permissive })));
    for (const servable of SECRET_SETS) {
      const res = fetchByKind(gatewayProxy(mesh), gatewayContext(mesh, servable));
      const all: Resource[] = [
        ...res.listeners,
        ...res.routes,
        ...res.clusters,
        ...res.endpoints,
        ...res.secrets,
      ];
      total += all.length;
      const where = `permissive ${permissive}, servable [${servable.join()}]`;
      assert.deepEqual(resourceProblems(all), [], where);
      assert.deepEqual(crossReferenceProblems(res), [], where);
      assert.equal(res.listeners.length, servable.length > 0 ? 2 : 1, where);
      assert.equal(
        res.secrets.filter((s) => s.name.startsWith('ingress-tls:')).length,
        servable.length,
        where,
      );
      assert.ok(res.endpoints.length > 0, where);
    }
  }
  assert.ok(total > 40, `only ${total} resources`);
});

test('the kind picks the generators: a sidecar gets no gateway resource, the gateway no sidecar listener', () => {
  const mesh = viewOf(storeOf(gatewayObjects()));
  const ctx = gatewayContext(mesh, ['bookstore/shop-tls']);
  const sidecar = fetchByKind(proxyFor(mesh, 'bookstore-v1-1'), ctx);
  const sidecarNames = [...sidecar.listeners, ...sidecar.routes, ...sidecar.secrets].map((r) => r.name);
  assert.ok(sidecarNames.includes('inbound-listener'), sidecarNames.join());
  assert.ok(
    !sidecarNames.some((n) => n.startsWith('gateway-') || n.startsWith('ingress-tls:')),
    sidecarNames.join(),
  );
  const gw = fetchByKind(gatewayProxy(mesh), ctx);
  assert.deepEqual(
    gw.listeners.map((r) => r.name),
    ['gateway-http', 'gateway-https'],
  );
  assert.deepEqual(
    gw.routes.map((r) => r.name),
    ['gateway-http', 'gateway-https'],
  );
});
