import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { proxyCertificateRequest } from './proxy-cert.js';

const UUID = '6d1f3c58-0b0e-4c8a-9a43-3f6f0c2b9a11';

describe('proxyCertificateRequest', () => {
  it('gives a proxyless workload a data-plane identity too', () => {
    assert.deepEqual(proxyCertificateRequest(`${UUID}.grpc.buyer.shop.cluster.local`, 60_000), {
      commonName: `${UUID}.grpc.buyer.shop.cluster.local`,
      validityMs: 60_000,
      usage: 'both',
      uriSans: ['spiffe://cluster.local/ns/shop/sa/buyer'],
    });
  });

  it('keeps an Envoy proxy to a client certificate without SANs', () => {
    for (const kind of ['sidecar', 'gateway'])
      assert.deepEqual(proxyCertificateRequest(`${UUID}.${kind}.buyer.shop.cluster.local`, 1), {
        commonName: `${UUID}.${kind}.buyer.shop.cluster.local`,
        validityMs: 1,
        usage: 'client',
      });
  });
});
