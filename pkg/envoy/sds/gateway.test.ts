// SDS of the ingress gateway's TLS Secrets (sds.ts): `ingress-tls:<ns>/<name>`
// goes to the gateway kind only, and only for Secrets its Ingresses name.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  fakeKeyPair,
  gatewayContext,
  gatewayObjects,
  gatewayProxy,
} from '../../../test/support/envoy/gateway.js';
import { POD_NAMES, proxyFor, storeOf, viewOf } from '../../../test/support/envoy/mesh.js';
import type { ProxyContext } from '../../catalog/types.js';
import { sdsGenerator } from './sds.js';

const SHOP = 'bookstore/shop-tls';
const WAREHOUSE = 'bookwarehouse/warehouse-tls';
const UNNAMED = 'bookstore/unnamed';
const ALL_TLS = [SHOP, WAREHOUSE, UNNAMED].map((k) => `ingress-tls:${k}`);

const mesh = viewOf(storeOf(gatewayObjects()));

function sds(proxy: ProxyContext, requested: readonly string[] | undefined, servable: readonly string[]) {
  return sdsGenerator.generate(
    proxy,
    gatewayContext(mesh, servable),
    requested ? new Set(requested) : undefined,
  );
}

test('a sidecar never gets an ingress TLS Secret, asked by name or not', () => {
  for (const pod of POD_NAMES) {
    const proxy = proxyFor(mesh, pod);
    assert.deepEqual(sds(proxy, ALL_TLS, [SHOP, WAREHOUSE, UNNAMED]), [], pod);
    const all = sds(proxy, undefined, [SHOP, WAREHOUSE, UNNAMED]).map((r) => r.name);
    assert.ok(all.length > 0, pod);
    assert.ok(!all.some((n) => n.startsWith('ingress-tls:')), `${pod}: ${all.join()}`);
  }
});

test('the gateway gets only the servable Secrets its Ingresses name', () => {
  const gw = gatewayProxy(mesh);
  // UNNAMED is valid but no Ingress of class skein names it; WAREHOUSE is named but not servable.
  const out = sds(gw, ALL_TLS, [SHOP, UNNAMED]);
  assert.deepEqual(
    out.map((r) => r.name),
    ['ingress-tls:bookstore/shop-tls'],
  );
  const pair = fakeKeyPair(SHOP);
  assert.deepEqual(out[0]?.message, {
    name: 'ingress-tls:bookstore/shop-tls',
    tls_certificate: {
      certificate_chain: { inline_string: pair.certPem },
      private_key: { inline_string: pair.keyPem },
    },
  });
  assert.deepEqual(
    sds(gw, ALL_TLS, [SHOP, WAREHOUSE]).map((r) => r.name),
    ['ingress-tls:bookstore/shop-tls', 'ingress-tls:bookwarehouse/warehouse-tls'],
  );
  // A SecretSource without ingress TLS (the gateway off): nothing, no crash.
  const { mesh: m, secrets } = gatewayContext(mesh, []);
  const bare = {
    mesh: m,
    secrets: { trustBundlePem: secrets.trustBundlePem, serviceCertificate: secrets.serviceCertificate },
  };
  assert.deepEqual(sdsGenerator.generate(gw, bare, new Set(ALL_TLS)), []);
});

test("the gateway's default secrets: its own certificate, the servable TLS Secrets, the outbound trust bundle — no other identity's key", () => {
  const gw = gatewayProxy(mesh);
  const all = sds(gw, undefined, [SHOP]);
  assert.deepEqual(
    all.map((r) => r.name),
    ['ingress-tls:bookstore/shop-tls', 'root-cert-for-mtls-outbound', 'service-cert:self'],
  );
  // The fixed name holds the gateway's own certificate.
  const own = all.find((r) => r.name === 'service-cert:self');
  assert.match(JSON.stringify(own?.message), /cert-of-skein-system\/skein-ingress-gateway/);
  // Another identity's key is never answered, even asked by name.
  assert.deepEqual(
    sds(gw, ['service-cert:bookstore/bookstore-v1', 'service-cert:bookbuyer/bookbuyer'], [SHOP]).map(
      (r) => r.name,
    ),
    [],
  );
});
