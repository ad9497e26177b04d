import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bookstoreMesh } from '../../../test/support/envoy/mesh.js';
import { parseServerListenerName, resolveClientTarget } from './targets.js';

test('client targets resolve by any host form, with the port or (single-port services) without', () => {
  const mesh = bookstoreMesh();
  for (const name of [
    'bookstore.bookstore.svc.cluster.local:14001',
    'bookstore.bookstore.svc:14001',
    'bookstore.bookstore:14001',
    'bookstore.bookstore',
  ]) {
    const t = resolveClientTarget(mesh, name);
    assert.equal(t?.service.key, 'bookstore/bookstore', name);
    assert.equal(t?.port.port, 14001);
    assert.equal(t?.name, name);
  }
  assert.equal(resolveClientTarget(mesh, 'bookstore.bookstore:14002'), undefined);
  assert.equal(resolveClientTarget(mesh, 'bookstore:14001'), undefined);
});

test('server listener names parse IPv4 and bracketed IPv6 only', () => {
  const p = 'grpc/server?xds.resource.listening_address=';
  assert.deepEqual(parseServerListenerName(`${p}10.0.0.1:8080`), { ip: '10.0.0.1', port: 8080 });
  assert.deepEqual(parseServerListenerName(`${p}[fd00::1]:8080`), { ip: 'fd00::1', port: 8080 });
  assert.equal(parseServerListenerName(`${p}fd00::1:8080`), undefined);
  assert.equal(parseServerListenerName(`${p}10.0.0.1:0`), undefined);
  assert.equal(parseServerListenerName(`${p}10.0.0.1:70000`), undefined);
  assert.equal(parseServerListenerName('grpc/server?other=1.2.3.4:5'), undefined);
});
