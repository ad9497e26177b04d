import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { silentLogger } from '../logger/logger.js';
import { ServingRenewal } from './serving-renewal.js';
import type { IssuedCertificate } from './types.js';

function cert(serial: number, lifetimeMs: number): IssuedCertificate {
  const now = Date.now();
  return {
    commonName: 'webhook',
    certPem: `cert-${serial}`,
    keyPem: `key-${serial}`,
    caPem: 'ca',
    serialNumber: String(serial),
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + lifetimeMs),
    uriSans: [],
    dnsSans: [],
  };
}

describe('ServingRenewal', () => {
  it('applies the first certificate, renews at 2/3 of its lifetime, and retries failed renewals', async () => {
    const applied: string[] = [];
    let serial = 0;
    let failNext = false;
    const r = new ServingRenewal({
      issue: async () => {
        if (failNext) {
          failNext = false;
          throw new Error('CA unavailable');
        }
        return cert(++serial, 300);
      },
      apply: (c) => applied.push(c.certPem),
      logger: silentLogger(),
      retryMs: 20,
    });
    try {
      const first = await r.start();
      assert.equal(first.certPem, 'cert-1');
      assert.deepEqual(applied, ['cert-1']);
      // Renewal due ~200 ms after issuance, well before the 300 ms expiry.
      await new Promise((res) => setTimeout(res, 100));
      assert.deepEqual(applied, ['cert-1'], 'not renewed early');
      failNext = true;
      await new Promise((res) => setTimeout(res, 200));
      // The failed attempt at ~200 ms was retried 20 ms later.
      assert.deepEqual(applied, ['cert-1', 'cert-2']);
      assert.equal(r.current?.certPem, 'cert-2');
    } finally {
      r.stop();
    }
    const count = applied.length;
    await new Promise((res) => setTimeout(res, 300));
    assert.equal(applied.length, count, 'no renewal after stop()');
  });
});
