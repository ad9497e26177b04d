import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { XdsObserver } from './observer.js';
import { composeObservers } from './observers.js';

test('composeObservers tells every observer every event, skipping hooks one lacks', () => {
  const seen: string[] = [];
  const full: XdsObserver = {
    onConnect: (k) => seen.push(`a connect ${k}`),
    onDisconnect: (k) => seen.push(`a disconnect ${k}`),
    onResponse: (t, n) => seen.push(`a response ${t} ${n}`),
    onAck: (t, n, s) => seen.push(`a ack ${t} ${n} ${s}`),
    onNack: (t) => seen.push(`a nack ${t}`),
    onRefused: (r) => seen.push(`a refused ${r}`),
    onIgnored: (r) => seen.push(`a ignored ${r}`),
  };
  const partial: XdsObserver = { onNack: (t) => seen.push(`b nack ${t}`) };
  const o = composeObservers(full, partial);
  o.onConnect?.('sidecar');
  o.onResponse?.('T', '1');
  o.onAck?.('T', '1', 0.5);
  o.onNack?.('T');
  o.onRefused?.('request-rate');
  o.onIgnored?.('stale-nonce');
  o.onDisconnect?.('grpc');
  assert.deepEqual(seen, [
    'a connect sidecar',
    'a response T 1',
    'a ack T 1 0.5',
    'a nack T',
    'b nack T',
    'a refused request-rate',
    'a ignored stale-nonce',
    'a disconnect grpc',
  ]);
});
