import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseControllerArgs, UsageError } from './options.js';

test('defaults follow OSM ports; the plaintext port is off unless asked for', () => {
  const o = parseControllerArgs(['--local', 'examples/bookstore']);
  assert.notEqual(o, 'help');
  if (o === 'help') return;
  assert.equal(o.adsPort, 15128);
  assert.equal(o.httpPort, 9091);
  assert.equal(o.insecureAdsPort, undefined);
  assert.equal(o.meshName, 'skein');
});

test('flags are parsed and validated', () => {
  const o = parseControllerArgs([
    '--local',
    'd',
    '--insecure-ads-port',
    '15129',
    '--min-push-interval',
    '250ms',
  ]);
  assert.ok(o !== 'help');
  assert.equal(o.insecureAdsPort, 15129);
  assert.equal(o.minPushIntervalMs, 250);
  assert.throws(
    () => parseControllerArgs(['--local', 'd', '--ads-port', 'x']),
    /--ads-port: "x" is not a port/,
  );
  assert.throws(() => parseControllerArgs(['--local', 'd', '--min-push-interval', '5']), UsageError);
  assert.throws(() => parseControllerArgs(['--bogus']), UsageError);
  assert.equal(parseControllerArgs(['--help']), 'help');
});
