import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import { silentLogger } from '../logger/logger.js';
import type { Pod } from '../model/objects.js';
import { KubeApiError } from '../registry/kube/client.js';
import { MeshStore } from '../registry/store.js';
import { type BootstrapSecretApi, BootstrapSecretGc, KubeBootstrapSecretApi } from './secret-gc.js';

const UUID = '0b6d3c1e-8f2a-4c55-9e1d-7a3b2c4d5e6f';
const OTHER = '11111111-2222-4333-8444-555555555555';

function pod(name: string, labels: Record<string, string> = {}, namespace = 'shop'): Pod {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace, labels }, spec: {} };
}

/** Records calls; answers from scripted results (default: no pod, delete succeeds). */
class FakeApi implements BootstrapSecretApi {
  readonly deletes: string[] = [];
  readonly lists: string[] = [];
  livePods = new Set<string>();
  deleteResults: (Error | undefined)[] = [];

  async deleteSecret(namespace: string, name: string): Promise<void> {
    this.deletes.push(`${namespace}/${name}`);
    const r = this.deleteResults.shift();
    if (r) throw r;
  }

  async podWithProxyUuidExists(namespace: string, proxyUuid: string): Promise<boolean> {
    this.lists.push(`${namespace}/${proxyUuid}`);
    return this.livePods.has(`${namespace}/${proxyUuid}`);
  }

  /** Resolves once `n` calls (lists + deletes) have been made; polls, since the collector's timers are unref'd. */
  async calls(n: number): Promise<void> {
    const deadline = Date.now() + 2000;
    while (this.lists.length + this.deletes.length < n) {
      if (Date.now() > deadline) assert.fail(`${this.lists.length + this.deletes.length} calls, want ${n}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }
}

let gc: BootstrapSecretGc | undefined;
afterEach(async () => {
  await gc?.stop();
  gc = undefined;
});

function setup(o: { orphanGraceMs?: number } = {}) {
  const store = new MeshStore();
  const api = new FakeApi();
  gc = new BootstrapSecretGc({ store, api, logger: silentLogger(), retryBaseMs: 5, maxAttempts: 3, ...o });
  gc.start();
  return { store, api, gc };
}

/** Lets queued jobs and their awaits run. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 30));

test('a deleted labelled pod: its bootstrap Secret is deleted by name in the pod namespace', async () => {
  const { store, api, gc } = setup();
  store.upsert(pod('web', { app: 'web', 'skein.dev/proxy-uuid': UUID }));
  await settle();
  assert.deepEqual(api.lists, [], 'adding a pod collects nothing');
  store.delete('Pod', 'shop/web');
  await api.calls(2);
  await settle();
  assert.deepEqual(api.lists, [`shop/${UUID}`]);
  assert.deepEqual(api.deletes, [`shop/skein-bootstrap-${UUID}`]);
  assert.equal(gc.pending, 0);
});

test('an unlabelled pod, or one whose label is not a UUID: nothing is called', async () => {
  const { store, api } = setup();
  store.upsert(pod('plain', { app: 'plain' }));
  store.upsert(pod('odd', { 'skein.dev/proxy-uuid': '../../etc' }));
  store.delete('Pod', 'shop/plain');
  store.delete('Pod', 'shop/odd');
  await settle();
  assert.deepEqual([api.lists, api.deletes], [[], []]);
});

test('a pod still carrying the UUID (namespace left the mesh, or a copy): the Secret is kept', async () => {
  const { store, api } = setup();
  api.livePods.add(`shop/${UUID}`);
  store.upsert(pod('web', { 'skein.dev/proxy-uuid': UUID }));
  store.delete('Pod', 'shop/web');
  await api.calls(1);
  await settle();
  assert.deepEqual(api.lists, [`shop/${UUID}`]);
  assert.deepEqual(api.deletes, []);
});

test('404 is success: no retry', async () => {
  const { store, api, gc } = setup();
  api.deleteResults = [new KubeApiError(404, 'NotFound', 'secrets "x" not found')];
  store.upsert(pod('web', { 'skein.dev/proxy-uuid': UUID }));
  store.delete('Pod', 'shop/web');
  await api.calls(2);
  await settle();
  assert.equal(api.deletes.length, 1);
  assert.equal(gc.pending, 0);
});

test('500 is retried with backoff, then succeeds; persistent errors give up after maxAttempts', async () => {
  const { store, api, gc } = setup();
  api.deleteResults = [
    new KubeApiError(500, 'InternalError', 'boom'),
    new KubeApiError(503, undefined, 'busy'),
  ];
  store.upsert(pod('web', { 'skein.dev/proxy-uuid': UUID }));
  store.delete('Pod', 'shop/web');
  await api.calls(6);
  await settle();
  assert.deepEqual(api.deletes, Array(3).fill(`shop/skein-bootstrap-${UUID}`));
  assert.equal(gc.pending, 0);

  const err = () => new KubeApiError(500, 'InternalError', 'boom');
  api.deleteResults = [err(), err(), err(), err()];
  store.upsert(pod('db', { 'skein.dev/proxy-uuid': OTHER }));
  store.delete('Pod', 'shop/db');
  await api.calls(12);
  await settle();
  assert.equal(api.deletes.filter((d) => d.endsWith(OTHER)).length, 3, 'maxAttempts = 3');
  assert.equal(api.deleteResults.length, 1, 'the fourth error was never asked for');
  assert.equal(gc.pending, 0);
});

test('a Secret the webhook created is collected after the grace period when no pod carries its UUID', async () => {
  const { api } = setup({ orphanGraceMs: 20 });
  api.livePods.add(`shop/${OTHER}`);
  gc?.created('shop', UUID);
  gc?.created('shop', OTHER);
  assert.deepEqual(api.lists, [], 'nothing before the grace period');
  await api.calls(3);
  await settle();
  assert.deepEqual(api.lists.sort(), [`shop/${OTHER}`, `shop/${UUID}`].sort());
  assert.deepEqual(api.deletes, [`shop/skein-bootstrap-${UUID}`]);
});

test('stop: pending orphan checks and retries are dropped, nothing runs afterwards', async () => {
  const { store, api, gc } = setup({ orphanGraceMs: 20 });
  gc.created('shop', UUID);
  await gc.stop();
  store.upsert(pod('web', { 'skein.dev/proxy-uuid': OTHER }));
  store.delete('Pod', 'shop/web');
  await new Promise((resolve) => setTimeout(resolve, 60));
  assert.deepEqual([api.lists, api.deletes], [[], []]);
});

test('KubeBootstrapSecretApi: DELETE by name; existence from a label-selected pod list', async () => {
  const calls: unknown[] = [];
  let items: unknown[] = [];
  const api = new KubeBootstrapSecretApi({
    request: async (method, path, options) => {
      calls.push([method, path, options?.query]);
      return method === 'GET' ? { items } : {};
    },
  });
  await api.deleteSecret('shop', `skein-bootstrap-${UUID}`);
  assert.equal(await api.podWithProxyUuidExists('shop', UUID), false);
  items = [{}];
  assert.equal(await api.podWithProxyUuidExists('shop', UUID), true);
  assert.deepEqual(calls[0], [
    'DELETE',
    `/api/v1/namespaces/shop/secrets/skein-bootstrap-${UUID}`,
    undefined,
  ]);
  assert.deepEqual(calls[1], [
    'GET',
    '/api/v1/namespaces/shop/pods',
    { labelSelector: `skein.dev/proxy-uuid=${UUID}`, limit: 1 },
  ]);
});

test("a follower remembers pod deletions and collects them once it leads; its own admissions' Secrets whatever the leadership", async () => {
  const store = new MeshStore();
  const api = new FakeApi();
  const leadership = { isLeader: false };
  gc = new BootstrapSecretGc({
    store,
    api,
    logger: silentLogger(),
    retryBaseMs: 5,
    orphanGraceMs: 10,
    leadership,
  });
  gc.start();
  store.upsert(pod('web', { 'skein.dev/proxy-uuid': UUID }));
  store.delete('Pod', 'shop/web');
  gc.created('shop', OTHER);
  await settle();
  // Only this replica knows the admission: collected now. The pod deletion every replica saw waits.
  assert.deepEqual(api.deletes, [`shop/skein-bootstrap-${OTHER}`]);
  assert.equal(gc.backlog, 1);
  leadership.isLeader = true;
  gc.leadershipGained();
  await api.calls(4);
  await settle();
  assert.deepEqual(api.deletes, [`shop/skein-bootstrap-${OTHER}`, `shop/skein-bootstrap-${UUID}`]);
  assert.equal(gc.backlog, 0);
});

test('a follower forgets the oldest pod deletions beyond its backlog bound', async () => {
  const store = new MeshStore();
  const api = new FakeApi();
  gc = new BootstrapSecretGc({
    store,
    api,
    logger: silentLogger(),
    leadership: { isLeader: false },
    followerBacklog: 2,
  });
  gc.start();
  for (const id of [UUID, OTHER, '22222222-3333-4444-8555-666666666666']) {
    store.upsert(pod(`p-${id}`, { 'skein.dev/proxy-uuid': id }));
    store.delete('Pod', `shop/p-${id}`);
  }
  await settle();
  assert.equal(gc.backlog, 2);
  assert.deepEqual(api.lists, [], 'a follower asks the API nothing');
});
