import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KubeApiError } from '../registry/kube/client.js';
import { BuiltinCA } from './builtin.js';
import { CAStoreError, loadOrCreateCA } from './ca-store.js';
import { type KubeRequester, KubeSecretCAStore } from './kube-secret-store.js';

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Secrets by path, with the API server's create semantics (409 on an existing name). */
class FakeSecrets implements KubeRequester {
  readonly secrets = new Map<string, unknown>();
  readonly calls: string[] = [];
  /** Holds every GET until released, so two loaders both see "absent" before either creates. */
  gate: Promise<void> | undefined;

  async request(method: string, path: string, options: { body?: unknown } = {}): Promise<unknown> {
    this.calls.push(`${method} ${path}`);
    if (method === 'GET') {
      await this.gate;
      const s = this.secrets.get(path);
      if (s === undefined) throw new KubeApiError(404, 'NotFound', 'secrets not found');
      return s;
    }
    if (method === 'POST') {
      const body = options.body;
      const name = isRecord(body) && isRecord(body['metadata']) ? String(body['metadata']['name']) : '';
      const key = `${path}/${name}`;
      if (this.secrets.has(key)) throw new KubeApiError(409, 'AlreadyExists', 'already exists');
      this.secrets.set(key, body);
      return body;
    }
    throw new Error(`unexpected ${method}`);
  }
}

describe('loadOrCreateCA with KubeSecretCAStore', () => {
  it('creates the Secret (ca.crt, ca.key as base64 data) once and loads it afterwards', async () => {
    const api = new FakeSecrets();
    const store = new KubeSecretCAStore(api, 'skein-system', 'skein-ca');
    const first = await loadOrCreateCA(store);
    assert.deepEqual(api.calls, [
      'GET /api/v1/namespaces/skein-system/secrets/skein-ca',
      'POST /api/v1/namespaces/skein-system/secrets',
    ]);
    const stored = api.secrets.get('/api/v1/namespaces/skein-system/secrets/skein-ca');
    assert.ok(isRecord(stored) && isRecord(stored['data']));
    assert.equal(stored['type'], 'Opaque');
    assert.equal(Buffer.from(String(stored['data']['ca.crt']), 'base64').toString(), first.rootCertPem);
    assert.equal(Buffer.from(String(stored['data']['ca.key']), 'base64').toString(), first.rootKeyPem);

    const again = await loadOrCreateCA(store);
    assert.equal(again.rootCertPem, first.rootCertPem);
    assert.equal(api.calls.filter((c) => c.startsWith('POST')).length, 1);
  });

  it('settles a creation race: the replica whose create gets 409 adopts the winner root', async () => {
    const api = new FakeSecrets();
    let open = () => {};
    api.gate = new Promise((r) => {
      open = r;
    });
    const a = loadOrCreateCA(new KubeSecretCAStore(api, 'cp', 'skein-ca'));
    const b = loadOrCreateCA(new KubeSecretCAStore(api, 'cp', 'skein-ca'));
    // Both initial GETs are waiting: both will find nothing and both will try to create.
    await new Promise((r) => setTimeout(r, 10));
    api.gate = undefined;
    open();
    const [ca1, ca2] = await Promise.all([a, b]);
    assert.equal(ca1.rootCertPem, ca2.rootCertPem);
    assert.equal(api.calls.filter((c) => c.startsWith('POST')).length, 2);
    // A certificate issued by the loser verifies against the winner's root.
    const leaf = await ca2.issue({ commonName: 'x', validityMs: 60_000 });
    assert.equal(leaf.caPem, ca1.rootCertPem);
  });

  it('refuses an incomplete or unusable Secret instead of replacing it', async () => {
    const api = new FakeSecrets();
    const path = '/api/v1/namespaces/cp/secrets/skein-ca';
    const other = await BuiltinCA.create();
    api.secrets.set(path, { data: { 'ca.crt': Buffer.from(other.rootCertPem).toString('base64') } });
    const store = new KubeSecretCAStore(api, 'cp', 'skein-ca');
    await assert.rejects(loadOrCreateCA(store), (err: unknown) => {
      assert.ok(err instanceof CAStoreError);
      assert.match(err.message, /Secret cp\/skein-ca has no ca\.key/);
      return true;
    });
    const mismatched = await BuiltinCA.create();
    api.secrets.set(path, {
      data: {
        'ca.crt': Buffer.from(other.rootCertPem).toString('base64'),
        'ca.key': Buffer.from(mismatched.rootKeyPem).toString('base64'),
      },
    });
    await assert.rejects(
      loadOrCreateCA(store),
      /cannot use the CA in Secret cp\/skein-ca: CA key does not match/,
    );
    assert.equal(api.calls.filter((c) => c.startsWith('POST')).length, 0);
  });

  it('passes other API errors (e.g. 403 Forbidden) to the caller', async () => {
    const store = new KubeSecretCAStore(
      {
        request: async () => {
          throw new KubeApiError(403, 'Forbidden', 'secrets "skein-ca" is forbidden');
        },
      },
      'cp',
      'skein-ca',
    );
    await assert.rejects(loadOrCreateCA(store), /forbidden/);
  });
});
