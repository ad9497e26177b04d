import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeApiError, KubeClient, retryAfterMs } from './client.js';

describe('retryAfterMs', () => {
  it('repeats only 429/503 that carry a Retry-After, capped', () => {
    assert.equal(retryAfterMs(429, '1'), 1000);
    assert.equal(retryAfterMs(503, '2'), 2000);
    assert.equal(retryAfterMs(429, '0'), 100);
    assert.equal(retryAfterMs(429, '600'), 5000);
    assert.equal(retryAfterMs(429, undefined), undefined);
    assert.equal(retryAfterMs(429, 'soon'), undefined);
    assert.equal(retryAfterMs(500, '1'), undefined);
    assert.equal(retryAfterMs(409, '1'), undefined);
  });
});

describe('KubeClient.request with Retry-After', () => {
  // Answers from a script per path: the API server refusing with 429 + Retry-After
  // ("storage is (re)initializing" right after a CRD changes), then the real answer.
  const script = new Map<string, { status: number; retryAfter?: string }[]>();
  const hits = new Map<string, number>();
  let server: http.Server;
  let client: KubeClient;

  before(async () => {
    server = http.createServer((req, res) => {
      const path = req.url ?? '';
      hits.set(path, (hits.get(path) ?? 0) + 1);
      const next = script.get(path)?.shift() ?? { status: 200 };
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (next.retryAfter !== undefined) headers['retry-after'] = next.retryAfter;
      const body =
        next.status === 200
          ? { kind: 'Namespace', metadata: { name: 'ok' } }
          : { kind: 'Status', reason: 'TooManyRequests', message: 'storage is (re)initializing' };
      res.writeHead(next.status, headers).end(JSON.stringify(body));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [
        {
          name: 'c',
          server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
          skipTLSVerify: true,
        },
      ],
      users: [{ name: 'u', token: 't' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    client = new KubeClient({ kubeConfig: kc, requestTimeoutMs: 5_000 });
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('waits and repeats a 429 with Retry-After until it succeeds', async () => {
    script.set('/a', [
      { status: 429, retryAfter: '0' },
      { status: 429, retryAfter: '0' },
    ]);
    const body = await client.request('POST', '/a', { body: {} });
    assert.deepEqual(body, { kind: 'Namespace', metadata: { name: 'ok' } });
    assert.equal(hits.get('/a'), 3);
  });

  it('gives up after five attempts with the server message', async () => {
    script.set(
      '/b',
      Array.from({ length: 9 }, () => ({ status: 429, retryAfter: '0' })),
    );
    await assert.rejects(client.request('GET', '/b'), (err: unknown) => {
      assert.ok(err instanceof KubeApiError);
      assert.equal(err.status, 429);
      assert.match(err.message, /storage is \(re\)initializing/);
      return true;
    });
    assert.equal(hits.get('/b'), 5);
  });

  it('does not repeat a 429 without Retry-After', async () => {
    script.set('/c', [{ status: 429 }]);
    await assert.rejects(client.request('GET', '/c'), KubeApiError);
    assert.equal(hits.get('/c'), 1);
  });
});
