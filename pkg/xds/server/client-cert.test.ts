import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PeerCertificate } from 'node:tls';
import { clientCertificateOf } from './client-cert.js';

test("the peer certificate's OpenSSL dates are read as epoch ms; unreadable dates give nothing", () => {
  const peer = {
    valid_from: 'Dec  3 22:00:00 2026 GMT',
    valid_to: 'Dec  4 22:00:00 2026 GMT',
    serialNumber: '0A1B',
  } as PeerCertificate;
  assert.deepEqual(clientCertificateOf(peer), {
    notBefore: Date.UTC(2026, 11, 3, 22),
    notAfter: Date.UTC(2026, 11, 4, 22),
    serial: '0A1B',
  });
  assert.equal(clientCertificateOf({ ...peer, valid_to: 'soon' }), undefined);
  assert.equal(clientCertificateOf(undefined), undefined);
});
