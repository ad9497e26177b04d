import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatDuration, parseDuration } from './duration.js';

test('parses Go-style durations', () => {
  assert.equal(parseDuration('90s'), 90_000);
  assert.equal(parseDuration('1h30m'), 5_400_000);
  assert.equal(parseDuration('250ms'), 250);
  assert.equal(parseDuration('1.5h'), 5_400_000);
  assert.equal(parseDuration('0'), 0);
});

test('rejects malformed durations with the input in the message', () => {
  for (const bad of ['', '10', 'h', '5 m', '5x', '1h-3m']) {
    assert.throws(() => parseDuration(bad), /duration/);
  }
});

test('formats back to the largest whole unit', () => {
  assert.equal(formatDuration(86_400_000), '24h');
  assert.equal(formatDuration(90_000), '90s');
  assert.equal(formatDuration(120), '120ms');
});
