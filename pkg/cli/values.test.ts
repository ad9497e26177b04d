import assert from 'node:assert/strict';
import { test } from 'node:test';
import { UsageError } from './errors.js';
import { applySets } from './values.js';

test('--set: dotted keys nest, scalars are typed, later values win, commas separate pairs', () => {
  const v = applySets({ meshName: 'a' }, [
    'replicas=2,webhook.failurePolicy=Ignore',
    'debugServer=true',
    'meshName=b',
    'images.controller.tag=0.2.0',
    'trustDomain=010',
  ]);
  assert.deepEqual(v, {
    meshName: 'b',
    replicas: 2,
    webhook: { failurePolicy: 'Ignore' },
    debugServer: true,
    images: { controller: { tag: '0.2.0' } },
    trustDomain: '010',
  });
});

test('--set without key=value is a usage error', () => {
  assert.throws(() => applySets({}, ['replicas']), UsageError);
  assert.throws(() => applySets({}, ['a..b=1']), /empty key segment/);
});
