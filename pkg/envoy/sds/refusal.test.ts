import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseProxyCommonName } from '../../mesh/identity.js';
import { secretRefusal } from './refusal.js';

const sidecar = parseProxyCommonName(
  '0b0c0d0e-0000-4000-8000-000000000001.sidecar.bookbuyer.shop.cluster.local',
);
const gateway = parseProxyCommonName(
  '0b0c0d0e-0000-4000-8000-000000000002.gateway.skein-ingress-gateway.skein-system.cluster.local',
);

test('its own names and names that depend on policy may be served', () => {
  for (const name of [
    'service-cert:self',
    'service-cert:shop/bookbuyer',
    'root-cert-for-mtls-inbound:shop/bookbuyer',
    'root-cert-for-mtls-ingress:shop/bookbuyer',
    'root-cert-for-mtls-outbound',
    'root-cert-for-mtls-inbound-tcp:shop/bookbuyer|7070',
  ])
    assert.equal(secretRefusal(name, sidecar), undefined, name);
  assert.equal(secretRefusal('ingress-tls:shop/tls', gateway), undefined);
  assert.equal(secretRefusal('service-cert:self', gateway), undefined);
});

test("another identity's key or validation context, a gateway's TLS key, and unknown names are refused with a reason", () => {
  assert.equal(secretRefusal('service-cert:shop/bookstore', sidecar), 'other-identity');
  assert.equal(secretRefusal('service-cert:other/bookbuyer', sidecar), 'other-identity');
  assert.equal(secretRefusal('root-cert-for-mtls-inbound:shop/bookstore', sidecar), 'other-identity');
  assert.equal(secretRefusal('root-cert-for-mtls-ingress:shop/bookstore', sidecar), 'other-identity');
  assert.equal(secretRefusal('service-cert:shop/bookbuyer', gateway), 'other-identity');
  assert.equal(secretRefusal('ingress-tls:shop/tls', sidecar), 'not-gateway');
  // OSM's per-service outbound contexts are no longer issued (the SANs are in the clusters).
  for (const name of [
    'skein-ca',
    'ca.key',
    '*',
    '',
    'service-cert',
    'root-cert-for-mtls-outbound:shop/bookstore',
  ])
    assert.equal(secretRefusal(name, sidecar), 'unknown-name', name);
});
