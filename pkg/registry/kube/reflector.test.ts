import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { eventually } from '../../../test/support/kube/eventually.js';
import { FakeApiServer, metaField, type Obj } from '../../../test/support/kube/fake-apiserver.js';
import { silentLogger } from '../../logger/logger.js';
import { TokenBucket } from '../../ratelimit/token-bucket.js';
import { KubeClient } from './client.js';
import { type RawObject, Reflector, type ReflectorOptions } from './reflector.js';

const PODS = '/api/v1/pods';

function pod(ns: string, name: string, phase = 'Running'): Obj {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: ns }, spec: {}, status: { phase } };
}

interface Seen {
  key: string;
  phase: string | undefined;
}

/** Decodes to `{key, phase}` and records every handler call. */
function recorder() {
  const calls: string[] = [];
  const decode = (raw: RawObject): Seen => {
    const m = raw['metadata'];
    const s = raw['status'];
    const name = typeof m === 'object' && m !== null && 'name' in m ? String(m.name) : '?';
    const ns = typeof m === 'object' && m !== null && 'namespace' in m ? String(m.namespace) : '';
    const phase = typeof s === 'object' && s !== null && 'phase' in s ? String(s.phase) : undefined;
    return { key: `${ns}/${name}`, phase };
  };
  return {
    calls,
    decode,
    handler: {
      upsert: (key: string, v: Seen, old: Seen | undefined) =>
        calls.push(`${old ? 'update' : 'add'} ${key} ${v.phase}`),
      delete: (key: string) => calls.push(`delete ${key}`),
    },
  };
}

describe('Reflector', () => {
  let server: FakeApiServer;
  let reflector: Reflector<Seen> | undefined;
  let rec: ReturnType<typeof recorder>;

  beforeEach(async () => {
    server = await FakeApiServer.start();
    rec = recorder();
  });
  afterEach(async () => {
    await reflector?.stop();
    reflector = undefined;
    await server.close();
  });

  function start(options: Partial<ReflectorOptions<Seen>> = {}): Reflector<Seen> {
    reflector = new Reflector<Seen>({
      name: 'Pod',
      client: new KubeClient({ kubeConfig: server.kubeConfig(), requestTimeoutMs: 2000 }),
      path: PODS,
      decode: rec.decode,
      handler: rec.handler,
      logger: silentLogger(),
      backoff: { initialMs: 20, maxMs: 200 },
      ...options,
    });
    reflector.start();
    return reflector;
  }

  /** The reflector's cache as `key → phase`, to compare with the server's objects. */
  function cacheState(r: Reflector<Seen>): Record<string, string | undefined> {
    return Object.fromEntries([...r.cache].map(([k, v]) => [k, v.phase]));
  }
  function serverState(): Record<string, string | undefined> {
    return Object.fromEntries(
      server.list(PODS).map((o) => {
        const s = o['status'];
        const phase = typeof s === 'object' && s !== null && 'phase' in s ? String(s.phase) : undefined;
        return [`${metaField(o, 'namespace')}/${metaField(o, 'name')}`, phase];
      }),
    );
  }

  it('lists page by page, then watches from the list resourceVersion with bookmarks', async () => {
    for (let i = 0; i < 7; i++) server.apply(PODS, pod('a', `p${i}`));
    const r = start({ pageSize: 3, watchTimeoutSeconds: [40, 50] });
    await r.whenSynced();
    assert.equal(r.size, 7);
    const lists = server.requestsOf(PODS, 'list');
    assert.deepEqual(
      lists.map((q) => [q.query.get('limit'), q.query.get('continue') !== null]),
      [
        ['3', false],
        ['3', true],
        ['3', true],
      ],
    );
    await eventually(() => assert.equal(server.activeWatches(PODS), 1));
    const w = server.requestsOf(PODS, 'watch')[0];
    assert.equal(w?.query.get('resourceVersion'), String(server.resourceVersion));
    assert.equal(w?.query.get('allowWatchBookmarks'), 'true');
    const timeout = Number(w?.query.get('timeoutSeconds'));
    assert.ok(timeout >= 40 && timeout <= 50, `timeoutSeconds ${timeout}`);
    assert.equal(server.requests.find((q) => q.path === PODS)?.query.get('watch'), null);
  });

  it('applies ADDED, MODIFIED and DELETED in order and follows bookmarks', async () => {
    server.apply(PODS, pod('a', 'x', 'Pending'));
    const r = start();
    await r.whenSynced();
    await eventually(() => assert.equal(server.activeWatches(PODS), 1));
    server.apply(PODS, pod('a', 'y'));
    server.apply(PODS, pod('a', 'x', 'Running'));
    server.remove(PODS, 'a/y');
    await eventually(() =>
      assert.deepEqual(rec.calls, ['add a/x Pending', 'add a/y Running', 'update a/x Running', 'delete a/y']),
    );
    server.bookmark();
    await eventually(() => assert.equal(r.lastResourceVersion, String(server.resourceVersion)));
  });

  for (const goneAs of ['event', 'status'] as const) {
    it(`relists on 410 Gone (${goneAs === 'event' ? 'watch ERROR event' : 'HTTP status'}) and drops what vanished meanwhile`, async () => {
      server.goneAs = goneAs;
      server.apply(PODS, pod('a', 'stays', 'Pending'));
      server.apply(PODS, pod('a', 'goes'));
      const r = start();
      await r.whenSynced();
      await eventually(() => assert.equal(server.activeWatches(PODS), 1));
      // Changes the watch never sees, then their history is compacted away.
      server.dropWatches();
      server.remove(PODS, 'a/goes', { quiet: true });
      server.apply(PODS, pod('a', 'stays', 'Running'), { quiet: true });
      server.apply(PODS, pod('b', 'new'), { quiet: true });
      server.compact();
      await eventually(() => assert.deepEqual(cacheState(r), serverState()));
      assert.equal(r.stats.expired, 1);
      assert.equal(r.stats.lists, 2);
      assert.ok(rec.calls.includes('delete a/goes'));
      await eventually(() => assert.equal(server.activeWatches(PODS), 1));
      // And it keeps watching after the relist.
      server.apply(PODS, pod('b', 'later'));
      await eventually(() => assert.deepEqual(cacheState(r), serverState()));
    });
  }

  it('re-watches from the last resourceVersion after a dropped connection, without relisting', async () => {
    const r = start();
    await r.whenSynced();
    await eventually(() => assert.equal(server.activeWatches(PODS), 1));
    server.apply(PODS, pod('a', 'one'));
    await eventually(() => assert.equal(r.size, 1));
    server.dropWatches();
    // Made while no watch is open: replayed from the history on re-watch.
    server.apply(PODS, pod('a', 'two'));
    server.remove(PODS, 'a/one');
    await eventually(() => assert.deepEqual(cacheState(r), serverState()));
    assert.equal(r.stats.lists, 1);
    assert.equal(r.stats.expired, 0);
    const watches = server.requestsOf(PODS, 'watch');
    assert.ok(watches.length >= 2);
  });

  it('backs off exponentially (with jitter) while the list fails, then syncs', async () => {
    server.failNext('GET', PODS, 500, 4, false);
    server.apply(PODS, pod('a', 'x'));
    const r = start({ backoff: { initialMs: 40, maxMs: 1000 } });
    await r.whenSynced();
    const at = server.requestsOf(PODS, 'list').map((q) => q.at);
    assert.equal(at.length, 5);
    const gaps = at.slice(1).map((t, i) => t - (at[i] ?? 0));
    // Delays are drawn from [d/2, d] with d = 40, 80, 160, 320 ms.
    const floors = [20, 40, 80, 160];
    const ceilings = [40, 80, 160, 320];
    gaps.forEach((g, i) => {
      assert.ok(g >= (floors[i] ?? 0) - 2, `gap ${i} = ${g}`);
      assert.ok(g <= (ceilings[i] ?? 0) + 150, `gap ${i} = ${g}`);
    });
    assert.equal(r.stats.errors, 4);
    assert.equal(r.size, 1);
  });

  it('retries a failing watch (500) with backoff and keeps its cache', async () => {
    server.failNext('GET', PODS, 500, 3, true);
    server.apply(PODS, pod('a', 'x'));
    const r = start();
    await r.whenSynced();
    await eventually(() => assert.equal(server.activeWatches(PODS), 1));
    assert.equal(server.requestsOf(PODS, 'watch').length, 4);
    assert.equal(r.stats.lists, 1);
    server.apply(PODS, pod('a', 'y'));
    await eventually(() => assert.deepEqual(cacheState(r), serverState()));
  });

  it('relists after a watch ERROR event other than 410, but not after a transport error', async () => {
    const r = start();
    await r.whenSynced();
    await eventually(() => assert.equal(server.activeWatches(PODS), 1));
    server.failNext('GET', PODS, 500, 1, true);
    server.dropWatches();
    await eventually(() => assert.equal(server.requestsOf(PODS, 'watch').length, 3));
    await eventually(() => assert.equal(server.activeWatches(PODS), 1));
    assert.equal(r.stats.lists, 1, 'a dropped connection and an HTTP 500 re-watch without relisting');
    server.errorWatches(500);
    await eventually(() => assert.equal(r.stats.lists, 2));
    assert.equal(r.stats.expired, 0);
  });

  it('restarts a watch that went silent (half-open connection)', async () => {
    const r = start({ idleTimeoutMs: 250 });
    await r.whenSynced();
    await eventually(() => assert.equal(server.activeWatches(PODS), 1));
    server.deafenWatches();
    server.apply(PODS, pod('a', 'unseen'));
    await new Promise((res) => setTimeout(res, 100));
    assert.equal(r.size, 0, 'the deaf watch delivered nothing');
    await eventually(() => assert.equal(r.size, 1), 3000);
    assert.equal(r.stats.idle, 1);
    assert.equal(r.stats.lists, 1);
  });

  it('keeps a quiet watch that gets bookmarks', async () => {
    const r = start({ idleTimeoutMs: 300 });
    await r.whenSynced();
    await eventually(() => assert.equal(server.activeWatches(PODS), 1));
    for (let i = 0; i < 5; i++) {
      await new Promise((res) => setTimeout(res, 100));
      server.bookmark();
    }
    assert.equal(r.stats.idle, 0);
    assert.equal(server.requestsOf(PODS, 'watch').length, 1);
  });

  it('re-watches when the server ends the watch at timeoutSeconds', async () => {
    const r = start({ watchTimeoutSeconds: [1, 1] });
    await r.whenSynced();
    await eventually(() => assert.equal(server.requestsOf(PODS, 'watch').length, 2), 3000);
    assert.equal(r.stats.errors, 0);
    assert.equal(r.stats.lists, 1);
  });

  it('counts a resource that is not served (missing CRD) as empty and synced, and picks it up later', async () => {
    const path = '/apis/split.smi-spec.io/v1alpha4/trafficsplits';
    server.notServed.add(path);
    const r = start({ path });
    await r.whenSynced();
    assert.equal(r.size, 0);
    server.apply(path, pod('a', 'ts'));
    server.notServed.delete(path);
    await eventually(() => assert.equal(r.size, 1), 3000);
  });

  it('restarts a list whose continue token expired', async () => {
    for (let i = 0; i < 4; i++) server.apply(PODS, pod('a', `p${i}`));
    server.expireContinue = true;
    const r = start({ pageSize: 2 });
    await eventually(() => assert.ok(server.requestsOf(PODS, 'list').length >= 4));
    assert.equal(r.synced, false);
    server.expireContinue = false;
    await r.whenSynced();
    assert.equal(r.size, 4);
  });

  it('stop() ends a pending backoff promptly and rejects whenSynced', async () => {
    server.failNext('GET', PODS, 500, 100, false);
    const r = start({ backoff: { initialMs: 10_000, maxMs: 10_000 } });
    const synced = r.whenSynced();
    await eventually(() => assert.equal(server.requestsOf(PODS, 'list').length, 1));
    const t0 = Date.now();
    await r.stop();
    assert.ok(Date.now() - t0 < 500);
    await assert.rejects(synced, /stopped before sync/);
  });

  it('rate-limits requests through a shared token bucket', async () => {
    const limiter = new TokenBucket(20, 2);
    const client = new KubeClient({ kubeConfig: server.kubeConfig(), limiter });
    const t0 = performance.now();
    await Promise.all(Array.from({ length: 6 }, () => client.request('GET', PODS)));
    const at = server.requestsOf(PODS, 'list').map((q) => q.at - t0);
    assert.equal(at.length, 6);
    // Two at once (burst), then one every 50 ms: the sixth no sooner than 200 ms.
    assert.ok((at[1] ?? 0) < 40, `second at ${at[1]}`);
    assert.ok((at[5] ?? 0) >= 190, `sixth at ${at[5]}`);
  });
});
