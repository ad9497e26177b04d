import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CallerStats, statsOf } from './stats.js';

test('statsOf accepts only well-formed stats lines', () => {
  assert.deepEqual(statsOf({ type: 'stats', ok: { a: 1 }, errors: {} }), { ok: { a: 1 }, errors: {} });
  assert.equal(statsOf({ type: 'done', ok: {}, errors: {} }), undefined);
  assert.equal(statsOf({ type: 'stats', ok: { a: '1' }, errors: {} }), undefined);
  assert.equal(statsOf({ type: 'stats', ok: [], errors: {} }), undefined);
  assert.equal(statsOf({ type: 'stats', ok: {} }), undefined);
});

test('the window keeps only recent reports; totals keep everything', () => {
  const s = new CallerStats();
  s.add({ ok: { v1: 3 }, errors: {} }, 1000);
  s.add({ ok: { v1: 1, v2: 1 }, errors: { PERMISSION_DENIED: 2 } }, 4000);
  s.add({ ok: { v2: 5 }, errors: {} }, 6500);
  assert.deepEqual(s.window(6500, 5000), { ok: { v1: 1, v2: 6 }, errors: { PERMISSION_DENIED: 2 } });
  assert.deepEqual(s.window(9000, 5000), { ok: { v2: 5 }, errors: {} });
  assert.deepEqual(s.total, { ok: { v1: 4, v2: 6 }, errors: { PERMISSION_DENIED: 2 } });
});
