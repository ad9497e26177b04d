import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatRow, headerLine, parseRow, rowsFor, waitingLine } from './table.js';

test('rows: backends first (sorted), then denials, then other errors; shares of all calls', () => {
  const rows = rowsFor(
    'bookbuyer',
    { ok: { 'bookstore-v2': 1, 'bookstore-v1': 3 }, errors: {} },
    { ok: { 'bookstore-v2': 20, 'bookstore-v1': 60 }, errors: { UNAVAILABLE: 10, PERMISSION_DENIED: 10 } },
  );
  assert.deepEqual(
    rows.map((r) => [r.outcome, r.key, r.recent, r.recentShare, r.total, r.totalShare]),
    [
      ['ok', 'bookstore-v1', 3, 0.75, 60, 0.6],
      ['ok', 'bookstore-v2', 1, 0.25, 20, 0.2],
      ['denied', 'PERMISSION_DENIED', 0, 0, 10, 0.1],
      ['error', 'UNAVAILABLE', 0, 0, 10, 0.1],
    ],
  );
});

test('an empty window has zero shares, not NaN', () => {
  const [row] = rowsFor('bookthief', { ok: {}, errors: {} }, { ok: {}, errors: { PERMISSION_DENIED: 4 } });
  assert.equal(row?.recentShare, 0);
  assert.equal(formatRow(row ?? assert.fail()).includes('NaN'), false);
});

test('parseRow reads back what formatRow prints, and nothing else', () => {
  const rows = rowsFor(
    'bookthief',
    { ok: {}, errors: { PERMISSION_DENIED: 7 } },
    { ok: { 'bookstore-v1': 1 }, errors: { PERMISSION_DENIED: 1234, DEADLINE_EXCEEDED: 2 } },
  );
  for (const r of rows) {
    const back = parseRow(formatRow(r));
    assert.ok(back);
    assert.equal(back.caller, r.caller);
    assert.equal(back.outcome, r.outcome);
    assert.equal(back.key, r.key);
    assert.equal(back.recent, r.recent);
    assert.equal(back.total, r.total);
    assert.ok(Math.abs(back.totalShare - r.totalShare) < 0.001);
  }
  assert.equal(parseRow(headerLine(5)), undefined);
  assert.equal(parseRow(waitingLine('bookbuyer')), undefined);
  assert.equal(parseRow('after 3s:'), undefined);
});
