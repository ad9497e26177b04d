import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PeerCertificate } from 'node:tls';
import { callAt, clientCertificateOf } from './client-cert.js';

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

test('callAt fires once the time is reached, re-arming past the 24.8-day timer limit; cancel stops it', async () => {
  let clock = 0;
  const fired: number[] = [];
  // A time 40 days away: the first timer waits the maximum, then re-arms for the rest.
  const cancel = callAt(
    40 * 86_400_000,
    () => fired.push(clock),
    () => clock,
  );
  clock = 40 * 86_400_000;
  cancel();
  assert.equal(fired.length, 0);
  callAt(
    0,
    () => fired.push(-1),
    () => 10,
  );
  assert.deepEqual(fired, [-1], 'a time already past fires at once');
  // Its timers are unref'd (they must not keep a controller alive): hold the loop open meanwhile.
  const hold = setInterval(() => {}, 1_000);
  try {
    await new Promise<void>((resolve) => callAt(Date.now() + 20, resolve));
  } finally {
    clearInterval(hold);
  }
});
