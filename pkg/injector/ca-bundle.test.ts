import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { silentLogger } from '../logger/logger.js';
import { KubeApiError, type Query } from '../registry/kube/client.js';
import { CaBundleSync, type KubeWatchClient, MUTATING_WEBHOOKS_PATH, staleWebhooks } from './ca-bundle.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');

interface Call {
  method: string;
  path: string;
  query?: Query;
  body?: unknown;
  contentType?: string;
}

/** A scripted API: `lists` answers each LIST in turn; watches stay open until the test feeds or ends them. */
class FakeApi implements KubeWatchClient {
  readonly calls: Call[] = [];
  lists: (() => unknown)[] = [];
  watchQueries: Query[] = [];
  #onLine: ((line: unknown) => void) | undefined;
  #watchWaiters: (() => void)[] = [];

  async request(
    method: string,
    path: string,
    options: { query?: Query; body?: unknown; contentType?: string } = {},
  ): Promise<unknown> {
    this.calls.push({ method, path, ...options });
    if (method === 'GET') {
      const next = this.lists.shift();
      if (!next) throw new Error('unscripted list');
      return next();
    }
    return {};
  }

  watch(
    _path: string,
    query: Query,
    options: { signal?: AbortSignal; onLine: (line: unknown) => void },
  ): Promise<void> {
    this.watchQueries.push(query);
    this.#onLine = options.onLine;
    for (const w of this.#watchWaiters.splice(0)) w();
    return new Promise((_resolve, reject) => {
      options.signal?.addEventListener('abort', () => reject(options.signal?.reason), { once: true });
    });
  }

  /** Resolves once a watch is open (the n-th one overall). */
  async watching(n: number): Promise<void> {
    while (this.watchQueries.length < n) await new Promise<void>((r) => this.#watchWaiters.push(r));
  }

  event(type: string, object: unknown): void {
    this.#onLine?.({ type, object });
  }

  patches(): Call[] {
    return this.calls.filter((c) => c.method === 'PATCH');
  }
}

function config(bundles: (string | undefined)[]) {
  return {
    metadata: { name: 'skein-sidecar-injector-m', resourceVersion: '7' },
    webhooks: bundles.map((caBundle, i) => ({
      name: `w${i}.skein.dev`,
      clientConfig: { url: 'https://127.0.0.1:1/mutate-pod-creation', ...(caBundle ? { caBundle } : {}) },
    })),
  };
}

async function until(what: string, pred: () => boolean): Promise<void> {
  const deadline = Date.now() + 2000;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('CaBundleSync', () => {
  it('finds stale webhook entries by name', () => {
    assert.deepEqual(staleWebhooks(config([b64('A'), undefined, b64('B')]), b64('A')), [
      'w1.skein.dev',
      'w2.skein.dev',
    ]);
    assert.deepEqual(staleWebhooks({}, 'x'), []);
  });

  it('survives RBAC refusal and a missing object, then patches every stale entry once it appears', async () => {
    const api = new FakeApi();
    let pem = 'CA-1';
    api.lists.push(
      () => {
        throw new KubeApiError(403, 'Forbidden', 'mutatingwebhookconfigurations is forbidden');
      },
      () => ({ metadata: { resourceVersion: '5' }, items: [] }),
    );
    const sync = new CaBundleSync({
      client: api,
      name: 'skein-sidecar-injector-m',
      caBundlePem: () => pem,
      logger: silentLogger(),
      backoff: { initialMs: 5, maxMs: 20 },
    });
    sync.start();
    try {
      await api.watching(1);
      assert.equal(sync.state, 'missing');
      assert.equal(api.calls.filter((c) => c.method === 'GET').length, 2);
      assert.deepEqual(api.watchQueries[0]?.['fieldSelector'], 'metadata.name=skein-sidecar-injector-m');
      assert.equal(api.watchQueries[0]?.['resourceVersion'], '5');

      // Installed after the controller: both entries lack the bundle.
      api.event('ADDED', config([undefined, b64('old')]));
      await until('a patch', () => api.patches().length === 1);
      const patch = api.patches()[0];
      assert.equal(patch?.path, `${MUTATING_WEBHOOKS_PATH}/skein-sidecar-injector-m`);
      assert.equal(patch?.contentType, 'application/strategic-merge-patch+json');
      assert.deepEqual(patch?.body, {
        webhooks: [
          { name: 'w0.skein.dev', clientConfig: { caBundle: b64('CA-1') } },
          { name: 'w1.skein.dev', clientConfig: { caBundle: b64('CA-1') } },
        ],
      });
      // Our own change comes back as MODIFIED: nothing more to do.
      api.event('MODIFIED', config([b64('CA-1'), b64('CA-1')]));
      await until('current', () => sync.state === 'current');
      assert.equal(api.patches().length, 1);

      // A new bundle: a resync re-lists at once and patches.
      pem = 'CA-2';
      api.lists.push(() => ({
        metadata: { resourceVersion: '9' },
        items: [config([b64('CA-1'), b64('CA-1')])],
      }));
      sync.resync();
      await until('second patch', () => api.patches().length === 2);
      assert.deepEqual(api.patches()[1]?.body, {
        webhooks: [
          { name: 'w0.skein.dev', clientConfig: { caBundle: b64('CA-2') } },
          { name: 'w1.skein.dev', clientConfig: { caBundle: b64('CA-2') } },
        ],
      });
      await api.watching(2);
      assert.equal(api.watchQueries[1]?.['resourceVersion'], '9');
    } finally {
      await sync.stop();
    }
  });
});
