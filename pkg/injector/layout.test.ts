import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  chooseDefaultLayout,
  isNativeSidecarsMode,
  parseServerVersion,
  supportsNativeSidecars,
} from './layout.js';

test('parseServerVersion: major/minor with provider suffixes, gitVersion as the fallback, else undefined', () => {
  assert.deepEqual(parseServerVersion({ major: '1', minor: '36', gitVersion: 'v1.36.0' }), {
    major: 1,
    minor: 36,
    gitVersion: 'v1.36.0',
  });
  // GKE and EKS report minor "29+".
  assert.deepEqual(parseServerVersion({ major: '1', minor: '29+', gitVersion: 'v1.29.3-gke.1' }), {
    major: 1,
    minor: 29,
    gitVersion: 'v1.29.3-gke.1',
  });
  assert.deepEqual(parseServerVersion({ major: '', minor: '', gitVersion: 'v1.28.9-eks-036c24b' }), {
    major: 1,
    minor: 28,
    gitVersion: 'v1.28.9-eks-036c24b',
  });
  for (const bad of [null, 'v1.30.0', [], {}, { major: 'one', minor: 'x', gitVersion: 'dev' }])
    assert.equal(parseServerVersion(bad), undefined, JSON.stringify(bad));
});

test('native sidecars from Kubernetes 1.29 on (KEP-753 beta, on by default)', () => {
  assert.equal(supportsNativeSidecars({ major: 1, minor: 28 }), false);
  assert.equal(supportsNativeSidecars({ major: 1, minor: 29 }), true);
  assert.equal(supportsNativeSidecars({ major: 1, minor: 36 }), true);
  assert.equal(supportsNativeSidecars({ major: 2, minor: 0 }), true);
  assert.equal(supportsNativeSidecars({ major: 0, minor: 99 }), false);
});

test('chooseDefaultLayout: always/never force it; auto follows the version, classic when unknown or local', () => {
  const v = (minor: number) => ({ major: 1, minor, gitVersion: `v1.${minor}.0` });
  assert.equal(chooseDefaultLayout('always', 'none').native, true);
  assert.equal(chooseDefaultLayout('always', v(27)).native, true, 'the operator knows best');
  assert.equal(chooseDefaultLayout('never', v(36)).native, false);
  assert.deepEqual(chooseDefaultLayout('auto', v(36)), {
    native: true,
    reason: 'auto: Kubernetes v1.36.0 >= 1.29',
  });
  assert.deepEqual(chooseDefaultLayout('auto', v(28)), {
    native: false,
    reason: 'auto: Kubernetes v1.28.0 < 1.29',
  });
  assert.equal(chooseDefaultLayout('auto', 'none').native, false);
  assert.equal(chooseDefaultLayout('auto', 'none').fellBack, undefined, 'local mode is no fallback');
  assert.deepEqual(chooseDefaultLayout('auto', { unavailable: 'HTTP 403' }), {
    native: false,
    reason: "auto: the API server's version is unknown (HTTP 403): classic",
    fellBack: true,
  });
  assert.equal(isNativeSidecarsMode('auto'), true);
  assert.equal(isNativeSidecarsMode('Auto'), false);
});
