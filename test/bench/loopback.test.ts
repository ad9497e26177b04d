import assert from 'node:assert/strict';
import { test } from 'node:test';
import { boundMs, measureLoopbackTls } from './loopback.js';

test('loopback TLS throughput is measured over a real TLS 1.3 connection, best round taken', async () => {
  const t = await measureLoopbackTls(4 * 1024 * 1024, 2);
  assert.equal(t.protocol, 'TLSv1.3');
  assert.equal(t.roundsMbPerS.length, 2);
  assert.ok(t.roundsMbPerS.every((x) => x > 0 && Number.isFinite(x)));
  assert.equal(t.mbPerS, Math.max(...t.roundsMbPerS));
  // 1 MB at t.mbPerS MB/s.
  assert.ok(Math.abs(boundMs(1024 * 1024, t) - 1000 / t.mbPerS) < 1e-9);
});
