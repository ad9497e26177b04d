import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defaultSidecarLayout } from './injection.js';

test('defaultSidecarLayout: auto asks GET /version once; errors and odd answers mean classic; local mode classic', async () => {
  const calls: string[] = [];
  const answering = (answer: () => unknown) => ({
    request: async (method: string, path: string) => {
      calls.push(`${method} ${path}`);
      return answer();
    },
  });
  const v136 = answering(() => ({ major: '1', minor: '36', gitVersion: 'v1.36.0' }));
  assert.deepEqual(await defaultSidecarLayout('auto', v136), {
    native: true,
    reason: 'auto: Kubernetes v1.36.0 >= 1.29',
  });
  assert.deepEqual(calls, ['GET /version']);
  const v128 = answering(() => ({ major: '1', minor: '28', gitVersion: 'v1.28.15' }));
  assert.equal((await defaultSidecarLayout('auto', v128)).native, false);
  const failing = answering(() => {
    throw new Error('HTTP 403: forbidden');
  });
  assert.deepEqual(await defaultSidecarLayout('auto', failing), {
    native: false,
    reason: "auto: the API server's version is unknown (HTTP 403: forbidden): classic",
    fellBack: true,
  });
  const odd = await defaultSidecarLayout(
    'auto',
    answering(() => 'ok'),
  );
  assert.equal(odd.native, false);
  assert.equal(odd.fellBack, true);
  // Forced modes and local mode never ask.
  calls.length = 0;
  assert.equal((await defaultSidecarLayout('never', v136)).native, false);
  assert.equal((await defaultSidecarLayout('always', v128)).native, true);
  assert.equal((await defaultSidecarLayout('always', undefined)).native, true);
  assert.equal((await defaultSidecarLayout('auto', undefined)).native, false);
  assert.deepEqual(calls, []);
});
