import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { IngressPort } from '../../catalog/ingress.js';
import { proxylessIngressChain } from './proxyless-ingress.js';

function port(over: Partial<IngressPort>): IngressPort {
  return {
    protocol: 'http',
    skipClientCertValidation: false,
    cidrs: ['10.0.9.0/24', 'fd00::/64'],
    policies: [],
    routes: 'all',
    ingresses: [],
    ...over,
  };
}

test('http: plaintext chain on the IPv4 sources only, match grpc-js-xds accepts (raw_buffer, no port or SNI)', () => {
  const chain = proxylessIngressChain(14001, port({}));
  assert.equal(chain?.name, 'ingress_14001_http');
  assert.equal(chain?.transport_socket, undefined);
  assert.deepEqual(chain?.filter_chain_match, {
    source_prefix_ranges: [{ address_prefix: '10.0.9.0', prefix_len: { value: 24 } }],
    transport_protocol: 'raw_buffer',
  });
});

test('no IPv4 source: no chain (IPv6 ranges crash grpc-js-xds 1.14 on IPv4-mapped peers)', () => {
  assert.equal(proxylessIngressChain(14001, port({ cidrs: ['fd00::/64'] })), undefined);
});

test('https: client certificate required with a validation context; skipped: neither field', () => {
  const strict = JSON.stringify(proxylessIngressChain(14001, port({ protocol: 'https' })));
  assert.match(strict, /"require_client_certificate":\{"value":true\}/);
  assert.match(strict, /ca_certificate_provider_instance/);
  const skip = JSON.stringify(
    proxylessIngressChain(14001, port({ protocol: 'https', skipClientCertValidation: true })),
  );
  assert.doesNotMatch(skip, /require_client_certificate|validation_context/);
  assert.match(skip, /tls_certificate_provider_instance/);
  // The HCM differs with the protocol (grpc-js-xds TLS-toggle comparison bug).
  assert.match(skip, /"stat_prefix":"ingress_14001_https"/);
});
