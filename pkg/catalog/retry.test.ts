import assert from 'node:assert/strict';
import { test } from 'node:test';
import { retry } from '../../test/support/envoy/retry.js';
import { validateManifest } from '../registry/validate.js';
import { ProblemList } from './problems.js';
import { retriesBySource, retryProblems } from './retry.js';

const policy = { retryOn: '5xx', numRetries: 2 };

test('two Retry objects for one pair: the first by namespace/name wins, the other is reported for that pair only', () => {
  const problems = new ProblemList();
  const b = retry('shop', 'b', 'buyer', ['shop/store', 'shop/cart'], { retryOn: 'reset', numRetries: 5 });
  const a = retry('shop', 'a', 'buyer', ['shop/store'], policy);
  const table = retriesBySource([b, a], problems);
  const buyer = table.get('shop/buyer');
  assert.equal(buyer?.get('shop/store')?.origin, 'Retry shop/a');
  assert.equal(buyer?.get('shop/cart')?.origin, 'Retry shop/b', 'the loser still applies to its other pairs');
  assert.deepEqual(
    problems.items.map((p) => `${p.namespace}/${p.name}: ${p.reason}`),
    [
      'shop/b: conflicts with Retry shop/a for shop/buyer → shop/store: Retry shop/a is in force for that pair (the first by namespace/name wins)',
    ],
  );
});

test('defaults: one retry, no budget; durations in ms', () => {
  const rule = retriesBySource(
    [retry('shop', 'a', 'buyer', ['shop/store'], { retryOn: ' 5xx , reset', perTryTimeout: '1.5s' })],
    new ProblemList(),
  )
    .get('shop/buyer')
    ?.get('shop/store');
  assert.deepEqual(rule, {
    origin: 'Retry shop/a',
    retryOn: ['5xx', 'reset'],
    numRetries: 1,
    retriableStatusCodes: [],
    perTryTimeoutMs: 1500,
  });
});

test('invalid Retry objects are refused with the field and reason', () => {
  assert.deepEqual(retryProblems(retry('shop', 'a', 'buyer', ['shop/store'], policy)), []);
  const bad = retry('shop', 'a', 'buyer', ['shop/store', 'shop/store'], {
    retryOn: '5xx,bogus',
    perTryTimeout: 'soon',
    retryBackoffBaseInterval: '0',
    retriableStatusCodes: [503],
  });
  assert.deepEqual(retryProblems(bad), [
    'spec.retryPolicy.retryOn: "bogus" is not an Envoy retry condition',
    'spec.retryPolicy.perTryTimeout: invalid duration "soon" (expected e.g. "90s", "1h30m", "250ms")',
    'spec.retryPolicy.retryBackoffBaseInterval: must be positive',
    'spec.retryPolicy.retriableStatusCodes: retryOn must include retriable-status-codes for them to apply',
    'spec.destinations[1]: shop/store is listed twice',
  ]);
});

test('the registries accept a Retry through its CRD schema and refuse a bad one with the reason', () => {
  const good = retry('shop', 'a', 'buyer', ['shop/store'], {
    ...policy,
    retryBudget: { budgetPercent: 20, minRetryConcurrency: 1 },
  });
  assert.equal(validateManifest(good).ok, true);
  const overBudget = structuredClone(good);
  if (overBudget.spec.retryPolicy.retryBudget) overBudget.spec.retryPolicy.retryBudget.budgetPercent = 150;
  const schema = validateManifest(overBudget);
  assert.equal(schema.ok, false);
  assert.match(schema.ok ? '' : schema.reason, /budgetPercent/);
  const semantic = validateManifest(retry('shop', 'b', 'buyer', ['shop/store'], { retryOn: '5xx,oops' }));
  assert.deepEqual(
    semantic.ok ? '' : semantic.reason,
    'spec.retryPolicy.retryOn: "oops" is not an Envoy retry condition',
  );
});
