import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ingressPath, routeAdmits } from './ingress.js';

test('Kubernetes pathType: Exact as is, Prefix element-wise without a trailing slash, / is every path', () => {
  assert.deepEqual(ingressPath('Exact', '/foo/'), { type: 'Exact', value: '/foo/' });
  assert.deepEqual(ingressPath('Prefix', '/foo/'), { type: 'Prefix', value: '/foo' });
  assert.equal(ingressPath('Prefix', '/'), undefined);
  assert.equal(ingressPath('Prefix', undefined), undefined);
  // ImplementationSpecific is read as Prefix (docs/policy.md).
  assert.deepEqual(ingressPath('ImplementationSpecific', '/a'), { type: 'Prefix', value: '/a' });
});

test('routeAdmits: exact or one-label wildcard hosts (any case), Exact and element-wise Prefix paths', () => {
  const books = { host: 'shop.example.com', path: ingressPath('Prefix', '/books/') };
  assert.ok(routeAdmits(books, 'Shop.Example.com', '/books'));
  assert.ok(routeAdmits(books, 'shop.example.com', '/books/1'));
  assert.ok(!routeAdmits(books, 'shop.example.com', '/booksx'));
  assert.ok(!routeAdmits(books, 'evil.example.com', '/books'));
  assert.ok(!routeAdmits(books, undefined, '/books'), 'a host rule needs the host');
  const wild = { host: '*.example.com' };
  assert.ok(routeAdmits(wild, 'a.example.com', '/'));
  assert.ok(!routeAdmits(wild, 'a.b.example.com', '/'));
  assert.ok(!routeAdmits(wild, 'example.com', '/'));
  const exact = { path: ingressPath('Exact', '/health') };
  assert.ok(routeAdmits(exact, undefined, '/health'));
  assert.ok(!routeAdmits(exact, undefined, '/health/'));
  assert.ok(routeAdmits({}, undefined, '/anything'));
});
