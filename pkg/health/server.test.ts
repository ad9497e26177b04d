import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HealthServer } from './server.js';

test('healthz is always ok; readyz reports failing checks by name', async () => {
  let caLoaded = false;
  const server = new HealthServer([
    { name: 'ca', notReadyReason: () => (caLoaded ? undefined : 'root not loaded') },
    { name: 'ads', notReadyReason: () => undefined },
  ]);
  const port = await server.listen(0, '127.0.0.1');
  try {
    const base = `http://127.0.0.1:${port}`;
    assert.equal((await fetch(`${base}/healthz`)).status, 200);
    const notReady = await fetch(`${base}/readyz`);
    assert.equal(notReady.status, 503);
    assert.match(await notReady.text(), /ca: root not loaded/);
    caLoaded = true;
    assert.equal((await fetch(`${base}/readyz`)).status, 200);
    assert.equal((await fetch(`${base}/nope`)).status, 404);
  } finally {
    await server.close();
  }
});
