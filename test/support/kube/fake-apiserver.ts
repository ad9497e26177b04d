// A tiny in-memory Kubernetes API server over HTTP for reflector and registry
// tests: list (limit/continue), watch (JSON lines, bookmarks, timeoutSeconds,
// 410 after compaction), create and merge-patch. Not a conformance fake: it
// models only what the reflector relies on, plus knobs to break it.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { KubeConfig } from '@kubernetes/client-node';

export type Obj = Record<string, unknown>;

interface Logged {
  rv: number;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  object: Obj;
}

interface Collection {
  objects: Map<string, Obj>;
  log: Logged[];
  compactedRv: number;
}

interface Watcher {
  path: string;
  res: http.ServerResponse;
  timer: NodeJS.Timeout | undefined;
  /** Half-open: the connection stays up but nothing reaches the client any more. */
  deaf: boolean;
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  watch: boolean;
  at: number;
  body?: unknown;
}

interface Failure {
  method: string;
  path: string;
  watch: boolean | undefined;
  status: number;
  remaining: number;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function metaOf(o: Obj): Record<string, unknown> {
  const m = o['metadata'];
  if (!isRecord(m)) throw new Error('object without metadata');
  return m;
}

/** `metadata.<field>` of an object as a string ('' when absent), for tests. */
export function metaField(o: Obj, field: string): string {
  const m = o['metadata'];
  const v = isRecord(m) ? m[field] : undefined;
  return typeof v === 'string' ? v : '';
}

function keyOf(o: Obj): string {
  const m = metaOf(o);
  return typeof m['namespace'] === 'string' && m['namespace'] !== ''
    ? `${m['namespace']}/${String(m['name'])}`
    : String(m['name']);
}

function status(code: number, reason: string, message: string): Obj {
  return { kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message };
}

function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isRecord(patch)) return patch;
  const out: Record<string, unknown> = isRecord(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

export class FakeApiServer {
  readonly requests: RecordedRequest[] = [];
  /** How a watch from a compacted resourceVersion is refused. */
  goneAs: 'event' | 'status' = 'event';
  /** Collections answering 404, like a CRD that is not installed. */
  readonly notServed = new Set<string>();
  /** When set, list pages past the first answer 410 (an expired continue token). */
  expireContinue = false;
  private rv = 100;
  private readonly collections = new Map<string, Collection>();
  private readonly watchers = new Set<Watcher>();
  private failures: Failure[] = [];

  private constructor(private readonly server: http.Server) {}

  static async start(): Promise<FakeApiServer> {
    const server = http.createServer();
    const fake = new FakeApiServer(server);
    server.on('request', (req, res) => fake.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return fake;
  }

  get url(): string {
    const address = this.server.address();
    if (address === null || typeof address === 'string') throw new Error('server not listening');
    return `http://127.0.0.1:${address.port}`;
  }

  /** A KubeConfig pointing at this server with a bearer token. */
  kubeConfig(): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'fake', server: this.url, skipTLSVerify: true }],
      users: [{ name: 'tester', token: 'fake-token' }],
      contexts: [{ name: 'fake', cluster: 'fake', user: 'tester' }],
      currentContext: 'fake',
    });
    return kc;
  }

  get resourceVersion(): number {
    return this.rv;
  }

  /** Creates or replaces an object; `quiet` skips the watch event (as if lost to compaction). */
  apply(path: string, object: Obj, options: { quiet?: boolean } = {}): Obj {
    const c = this.collection(path);
    const key = keyOf(object);
    const old = c.objects.get(key);
    const copy = structuredClone(object);
    const meta = metaOf(copy);
    meta['resourceVersion'] = String(++this.rv);
    meta['uid'] = old ? metaOf(old)['uid'] : (meta['uid'] ?? randomUUID());
    c.objects.set(key, copy);
    if (!options.quiet) this.emit(path, c, old ? 'MODIFIED' : 'ADDED', copy);
    return copy;
  }

  /** Deletes an object; `quiet` skips the watch event. */
  remove(path: string, key: string, options: { quiet?: boolean } = {}): void {
    const c = this.collection(path);
    const old = c.objects.get(key);
    if (!old) throw new Error(`${path}: ${key} not found`);
    c.objects.delete(key);
    const gone = structuredClone(old);
    metaOf(gone)['resourceVersion'] = String(++this.rv);
    if (!options.quiet) this.emit(path, c, 'DELETED', gone);
  }

  get(path: string, key: string): Obj | undefined {
    return this.collections.get(path)?.objects.get(key);
  }

  list(path: string): Obj[] {
    return [...(this.collections.get(path)?.objects.values() ?? [])];
  }

  /** Forgets the event history: watches from any earlier resourceVersion get 410 Gone. */
  compact(): void {
    for (const c of this.collections.values()) {
      c.compactedRv = this.rv;
      c.log = [];
    }
  }

  /** Cuts every open watch connection. */
  dropWatches(): void {
    for (const w of this.watchers) {
      clearTimeout(w.timer);
      w.res.socket?.destroy();
    }
    this.watchers.clear();
  }

  /** Open watches stop receiving anything, but stay connected (a half-open TCP connection). */
  deafenWatches(): void {
    for (const w of this.watchers) w.deaf = true;
  }

  /** Ends every open watch with an in-stream ERROR event carrying a Status of `code`. */
  errorWatches(code: number, reason = 'InternalError'): void {
    for (const w of this.watchers) {
      clearTimeout(w.timer);
      w.res.end(
        `${JSON.stringify({ type: 'ERROR', object: status(code, reason, 'injected watch error') })}\n`,
      );
    }
    this.watchers.clear();
  }

  /** Sends a BOOKMARK at the current resourceVersion to every open watch. */
  bookmark(): void {
    for (const w of this.watchers) {
      if (w.deaf) continue;
      w.res.write(
        `${JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: String(this.rv) } } })}\n`,
      );
    }
  }

  /** Makes the next `times` matching requests answer `code`; `watch` limits it to (non-)watch GETs. */
  failNext(method: string, path: string, code: number, times = 1, watch?: boolean): void {
    this.failures.push({ method, path, watch, status: code, remaining: times });
  }

  activeWatches(path?: string): number {
    return [...this.watchers].filter((w) => !w.deaf && (path === undefined || w.path === path)).length;
  }

  /** Requests of one kind: `list` or `watch` GETs of a collection path, or other methods. */
  requestsOf(path: string, what: 'list' | 'watch' | string): RecordedRequest[] {
    return this.requests.filter((r) => {
      if (r.path !== path) return false;
      if (what === 'list') return r.method === 'GET' && !r.watch;
      if (what === 'watch') return r.method === 'GET' && r.watch;
      return r.method === what;
    });
  }

  async close(): Promise<void> {
    this.dropWatches();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private collection(path: string): Collection {
    let c = this.collections.get(path);
    if (!c) {
      c = { objects: new Map(), log: [], compactedRv: 0 };
      this.collections.set(path, c);
    }
    return c;
  }

  private emit(path: string, c: Collection, type: Logged['type'], object: Obj): void {
    c.log.push({ rv: this.rv, type, object });
    for (const w of this.watchers) {
      if (w.path === path && !w.deaf) w.res.write(`${JSON.stringify({ type, object })}\n`);
    }
  }

  private send(res: http.ServerResponse, code: number, body: unknown): void {
    res.writeHead(code, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => {
      text += c;
    });
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      const method = req.method ?? 'GET';
      const watch = url.searchParams.get('watch') === 'true' || url.searchParams.get('watch') === '1';
      const recorded: RecordedRequest = {
        method,
        path: url.pathname,
        query: url.searchParams,
        watch,
        at: performance.now(),
      };
      if (text) recorded.body = JSON.parse(text);
      this.requests.push(recorded);
      const failure = this.failures.find(
        (f) =>
          f.remaining > 0 &&
          f.method === method &&
          f.path === url.pathname &&
          (f.watch === undefined || f.watch === watch),
      );
      if (failure) {
        failure.remaining--;
        this.send(res, failure.status, status(failure.status, 'InternalError', 'injected failure'));
        return;
      }
      if (this.notServed.has(url.pathname)) {
        this.send(res, 404, status(404, 'NotFound', 'the server could not find the requested resource'));
        return;
      }
      if (method === 'GET' && watch) this.watch(url, res);
      else if (method === 'GET') this.listOrGet(url, res);
      else if (method === 'POST') this.create(url.pathname, recorded.body, res);
      else if (method === 'PATCH') this.patch(url.pathname, recorded.body, res);
      else this.send(res, 405, status(405, 'MethodNotAllowed', method));
    });
  }

  private listOrGet(url: URL, res: http.ServerResponse): void {
    const path = url.pathname;
    const slash = path.lastIndexOf('/');
    const parent = this.collections.get(path.slice(0, slash));
    if (!this.collections.has(path) && parent) {
      const item = [...parent.objects.values()].find((o) => metaOf(o)['name'] === path.slice(slash + 1));
      if (item) this.send(res, 200, item);
      else this.send(res, 404, status(404, 'NotFound', 'not found'));
      return;
    }
    const c = this.collection(path);
    const all = [...c.objects.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const limit = Number(url.searchParams.get('limit') ?? '0') || all.length || 1;
    const token = url.searchParams.get('continue');
    if (token && this.expireContinue) {
      this.send(res, 410, status(410, 'Expired', 'The provided continue parameter is too old'));
      return;
    }
    const offset = token ? Number(Buffer.from(token, 'base64').toString()) : 0;
    const page = all.slice(offset, offset + limit).map(([, o]) => {
      // Like the real server, list items of a typed list carry no apiVersion/kind.
      const { apiVersion: _a, kind: _k, ...rest } = o;
      return rest;
    });
    const next =
      offset + limit < all.length ? Buffer.from(String(offset + limit)).toString('base64') : undefined;
    this.send(res, 200, {
      kind: 'List',
      apiVersion: 'v1',
      metadata: { resourceVersion: String(this.rv), ...(next ? { continue: next } : {}) },
      items: page,
    });
  }

  private watch(url: URL, res: http.ServerResponse): void {
    const path = url.pathname;
    const c = this.collection(path);
    const from = Number(url.searchParams.get('resourceVersion') ?? '0');
    if (from !== 0 && from < c.compactedRv) {
      const gone = status(410, 'Expired', `too old resource version: ${from} (${c.compactedRv})`);
      if (this.goneAs === 'status') {
        this.send(res, 410, gone);
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(`${JSON.stringify({ type: 'ERROR', object: gone })}\n`);
      }
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    res.flushHeaders();
    for (const e of c.log)
      if (e.rv > from) res.write(`${JSON.stringify({ type: e.type, object: e.object })}\n`);
    const w: Watcher = { path, res, timer: undefined, deaf: false };
    const timeout = Number(url.searchParams.get('timeoutSeconds') ?? '0');
    if (timeout > 0)
      w.timer = setTimeout(() => {
        this.watchers.delete(w);
        res.end();
      }, timeout * 1000);
    this.watchers.add(w);
    res.on('close', () => {
      clearTimeout(w.timer);
      this.watchers.delete(w);
    });
  }

  private create(path: string, body: unknown, res: http.ServerResponse): void {
    if (!isRecord(body) || !isRecord(body['metadata'])) {
      this.send(res, 400, status(400, 'BadRequest', 'no object'));
      return;
    }
    if (this.collection(path).objects.has(keyOf(body))) {
      this.send(res, 409, status(409, 'AlreadyExists', 'already exists'));
      return;
    }
    this.send(res, 201, this.apply(path, body));
  }

  private patch(path: string, body: unknown, res: http.ServerResponse): void {
    const slash = path.lastIndexOf('/');
    const cpath = path.slice(0, slash);
    const name = path.slice(slash + 1);
    const current = [...(this.collections.get(cpath)?.objects.values() ?? [])].find(
      (o) => metaOf(o)['name'] === name,
    );
    if (!current) {
      this.send(res, 404, status(404, 'NotFound', `${name} not found`));
      return;
    }
    const merged = mergePatch(current, body);
    if (!isRecord(merged)) {
      this.send(res, 400, status(400, 'BadRequest', 'bad patch'));
      return;
    }
    this.send(res, 200, this.apply(cpath, merged));
  }
}
