import assert from 'node:assert/strict';
import { test } from 'node:test';
import { httpMatchAdmits } from './http-match.js';

const req = (path: string, method = 'GET', headers: Record<string, string> = {}) => ({
  path,
  method,
  headers,
});

test('pathRegex is anchored at the start only; the query string is not part of the path', () => {
  const m = { name: 'buy', pathRegex: '/buy' };
  assert.ok(httpMatchAdmits(m, req('/buy')));
  assert.ok(httpMatchAdmits(m, req('/buy/1?x=/sell')));
  assert.ok(!httpMatchAdmits(m, req('/x/buy')));
  assert.ok(!httpMatchAdmits({ name: 'v1', pathRegex: '^/v1/.*' }, req('/v2/a?/v1/')));
  assert.ok(httpMatchAdmits({ name: 'any', pathRegex: '.*' }, req('/anything')));
  assert.ok(!httpMatchAdmits({ name: 'broken', pathRegex: '(' }, req('/(')), 'unparsable: nothing');
});

test('methods exactly (any case), * for any; headers must match their whole value', () => {
  const m = { name: 'm', methods: ['GET', 'post'] };
  assert.ok(httpMatchAdmits(m, req('/', 'POST')));
  assert.ok(!httpMatchAdmits(m, req('/', 'DELETE')));
  assert.ok(httpMatchAdmits({ name: 'all', methods: ['*'] }, req('/', 'DELETE')));
  const h = { name: 'h', headers: { 'X-Role': 'clerk|manager' } };
  assert.ok(httpMatchAdmits(h, req('/', 'GET', { 'x-role': 'manager' })));
  assert.ok(!httpMatchAdmits(h, req('/', 'GET', { 'x-role': 'clerk-trainee' })));
  assert.ok(!httpMatchAdmits(h, req('/')), 'a missing header does not match');
});
