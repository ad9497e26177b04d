import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EVERY_REQUEST, httpMatchPermission, pathRegexToSafeRegex, rbacRules } from './rbac.js';

test('pathRegex is anchored at the start only', () => {
  assert.equal(pathRegexToSafeRegex('/books'), '(?:/books).*');
  assert.equal(pathRegexToSafeRegex('^/books'), '(?:/books).*');
  const re = new RegExp(`^${pathRegexToSafeRegex('/books')}$`);
  assert.ok(re.test('/books/1'));
  assert.ok(!re.test('/x/books'));
});

test('a match with no conditions (or only wildcards) allows any request', () => {
  assert.deepEqual(httpMatchPermission({ name: 'm' }), EVERY_REQUEST);
  assert.deepEqual(httpMatchPermission({ name: 'm', pathRegex: '.*', methods: ['*'] }), EVERY_REQUEST);
  assert.deepEqual(httpMatchPermission({ name: 'm', methods: ['get'] }), {
    header: { name: ':method', string_match: { exact: 'GET' } },
  });
});

test('rules without sources give no policy; repeated origins stay distinct', () => {
  const id = { namespace: 'a', serviceAccount: 'b' };
  const rules = rbacRules(
    [
      { sources: [], http: 'all', origin: 'TrafficTarget a/empty' },
      { sources: [id], http: 'all', origin: 'TrafficTarget a/t' },
      { sources: [id], http: [{ name: 'x', pathRegex: '/x' }], origin: 'TrafficTarget a/t' },
    ],
    'example.org',
    true,
  );
  assert.deepEqual(Object.keys(rules['policies'] ?? {}), ['TrafficTarget a/t', 'TrafficTarget a/t#2']);
  // For TCP, matches are irrelevant: a rule grants the connection.
  const tcp = rbacRules(
    [{ sources: [id], http: [{ name: 'x', pathRegex: '/x' }], origin: 'o' }],
    'example.org',
    false,
  );
  assert.deepEqual(tcp, {
    action: 0,
    policies: {
      o: {
        permissions: [EVERY_REQUEST],
        principals: [{ authenticated: { principal_name: { exact: 'spiffe://example.org/ns/a/sa/b' } } }],
      },
    },
  });
});
