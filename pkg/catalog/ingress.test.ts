import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ingressPath } from './ingress.js';

test('Kubernetes pathType: Exact as is, Prefix element-wise without a trailing slash, / is every path', () => {
  assert.deepEqual(ingressPath('Exact', '/foo/'), { type: 'Exact', value: '/foo/' });
  assert.deepEqual(ingressPath('Prefix', '/foo/'), { type: 'Prefix', value: '/foo' });
  assert.equal(ingressPath('Prefix', '/'), undefined);
  assert.equal(ingressPath('Prefix', undefined), undefined);
  // ImplementationSpecific is read as Prefix (docs/policy.md).
  assert.deepEqual(ingressPath('ImplementationSpecific', '/a'), { type: 'Prefix', value: '/a' });
});
