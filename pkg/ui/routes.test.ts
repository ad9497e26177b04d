import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { get, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { HealthServer } from '../health/server.js';
import type { MeshGraph } from './graph-types.js';
import { mountUiRoutes } from './routes.js';

function graph(version: number, padding = ''): MeshGraph {
  return {
    mesh: padding ? `skein-${padding}` : 'skein',
    version,
    permissive: false,
    namespaces: [],
    problems: [],
    services: [],
    identities: [],
    external: [],
    ingressSources: [],
    edges: [],
    counts: {
      namespaces: 0,
      services: 0,
      proxies: 0,
      edges: 0,
      egress: 0,
      ingress: 0,
      traffic: 0,
      byState: { SYNCED: 0, STALE: 0, NACKED: 0, DISCONNECTED: 0 },
    },
  };
}

/** An open `/debug/events` stream: the graph versions received, and the raw text. */
class EventStream {
  versions: number[] = [];
  raw = '';
  ended = false;
  private buffer = '';
  private waiters = new Set<() => void>();
  constructor(readonly res: IncomingMessage) {
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      this.raw += chunk;
      this.buffer += chunk;
      let i = this.buffer.indexOf('\n\n');
      while (i >= 0) {
        const block = this.buffer.slice(0, i);
        this.buffer = this.buffer.slice(i + 2);
        const data = block.split('\n').find((l) => l.startsWith('data: '));
        if (block.includes('event: graph') && data) this.versions.push(JSON.parse(data.slice(6)).version);
        i = this.buffer.indexOf('\n\n');
      }
      for (const w of this.waiters) w();
    });
    res.on('end', () => {
      this.ended = true;
      for (const w of this.waiters) w();
    });
  }

  static open(port: number): Promise<EventStream> {
    return new Promise((resolve, reject) => {
      get(`http://127.0.0.1:${port}/debug/events`, (res) => resolve(new EventStream(res))).on(
        'error',
        reject,
      );
    });
  }

  until(what: string, pred: () => boolean, ms = 2000): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!pred()) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`timed out waiting for ${what}; got ${JSON.stringify(this.versions)}`));
      }, ms);
      this.waiters.add(check);
      check();
    });
  }
}

async function serve(
  enabled: () => boolean,
  build: () => MeshGraph,
  opts: { assetsDir?: string; heartbeatMs?: number } = {},
) {
  const health = new HealthServer([]);
  const feed = mountUiRoutes(health, { enabled, graph: build }, { debounceMs: 50, ...opts });
  const port = await health.listen(0, '127.0.0.1');
  return {
    feed,
    port,
    async close() {
      feed.close();
      await health.close();
    },
  };
}

test('every UI route answers 404 while the debug gate is closed (checked per request)', async () => {
  let enabled = false;
  const dir = await mkdtemp(path.join(tmpdir(), 'skein-ui-'));
  await writeFile(path.join(dir, 'index.html'), '<title>skein</title>');
  const s = await serve(
    () => enabled,
    () => graph(1),
    { assetsDir: dir },
  );
  try {
    for (const p of ['/ui', '/ui/', '/ui/app.js', '/debug/graph', '/debug/events'])
      assert.equal((await fetch(`http://127.0.0.1:${s.port}${p}`)).status, 404, p);
    enabled = true;
    const page = await fetch(`http://127.0.0.1:${s.port}/ui/`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /text\/html/);
    assert.equal(await page.text(), '<title>skein</title>');
    const redirect = await fetch(`http://127.0.0.1:${s.port}/ui`, { redirect: 'manual' });
    assert.equal(redirect.status, 301);
    assert.equal(redirect.headers.get('location'), '/ui/');
    // Not bundled: a clear 503, not an empty page.
    const js = await fetch(`http://127.0.0.1:${s.port}/ui/app.js`);
    assert.equal(js.status, 503);
    assert.match(await js.text(), /make build/);
    const g = await fetch(`http://127.0.0.1:${s.port}/debug/graph`);
    assert.equal(g.status, 200);
    assert.deepEqual(await g.json(), graph(1));
  } finally {
    await s.close();
    await rm(dir, { recursive: true, force: true });
  }
});

test('/debug/events: the graph on connect, one graph per debounce window, nothing when unchanged', async () => {
  let version = 1;
  let builds = 0;
  const s = await serve(
    () => true,
    () => {
      builds++;
      return graph(version);
    },
  );
  const stream = await EventStream.open(s.port);
  try {
    assert.match(stream.res.headers['content-type'] ?? '', /text\/event-stream/);
    await stream.until('the first graph', () => stream.versions.length === 1);
    assert.deepEqual(stream.versions, [1]);
    assert.match(stream.raw, /^retry: 2000\n\n/);
    // A burst of changes inside one window: one build, one message, the last state.
    const before = builds;
    for (version = 2; version <= 5; version++) s.feed.notify();
    version = 5;
    await stream.until('version 5', () => stream.versions.includes(5));
    assert.equal(builds - before, 1);
    // A notification that changes nothing sends nothing.
    s.feed.notify();
    await new Promise((r) => setTimeout(r, 200));
    assert.deepEqual(stream.versions, [1, 5]);
    assert.equal(s.feed.clientCount, 1);
  } finally {
    await s.close();
  }
  await stream.until('the stream to end on close', () => stream.ended);
});

test('/debug/events: heartbeats while idle; closing the client frees it', async () => {
  const s = await serve(
    () => true,
    () => graph(1),
    { heartbeatMs: 30 },
  );
  try {
    const stream = await EventStream.open(s.port);
    await stream.until('two heartbeats', () => stream.raw.split(': keepalive\n\n').length > 2);
    assert.deepEqual(stream.versions, [1]);
    stream.res.destroy();
    const deadline = Date.now() + 2000;
    while (s.feed.clientCount > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    assert.equal(s.feed.clientCount, 0);
  } finally {
    await s.close();
  }
});

test('/debug/events: a client that does not read gets the newest graph, not every one queued', async () => {
  // 1 MB graphs: a few fill the socket buffers, so writes start reporting back-pressure.
  const pad = 'x'.repeat(1 << 20);
  let version = 1;
  const s = await serve(
    () => true,
    () => graph(version, pad),
  );
  const stream = await EventStream.open(s.port);
  try {
    await stream.until('the first graph', () => stream.versions.length === 1, 5000);
    stream.res.pause();
    for (version = 2; version <= 40; version++) {
      s.feed.notify();
      await new Promise((r) => setTimeout(r, 60));
    }
    version = 40;
    stream.res.resume();
    await stream.until('the newest graph', () => stream.versions.at(-1) === 40, 10_000);
    // Unbounded buffering would deliver all 40; the kernel's buffers hold a few.
    assert.ok(stream.versions.length < 30, `${stream.versions.length} graphs delivered: ${stream.versions}`);
    assert.deepEqual(
      stream.versions,
      [...stream.versions].sort((a, b) => a - b),
    );
  } finally {
    await s.close();
  }
});
