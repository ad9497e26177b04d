import http from 'node:http';
import https from 'node:https';
import type { TokenBucket } from '../../ratelimit/token-bucket.js';
import type { KubeConfig } from './kubeconfig.js';

/** A non-2xx answer from the API server, with the Status it sent when there was one. */
export class KubeApiError extends Error {
  override name = 'KubeApiError';
  constructor(
    readonly status: number,
    /** `Status.reason`, e.g. `Expired`, `NotFound`, `AlreadyExists`. */
    readonly reason: string | undefined,
    message: string,
  ) {
    super(message);
  }
}

export type Query = Record<string, string | number | boolean | undefined>;

export interface RequestOptions {
  query?: Query;
  body?: unknown;
  /** Default application/json; PATCH callers pass e.g. application/merge-patch+json. */
  contentType?: string;
  signal?: AbortSignal;
}

export interface WatchOptions {
  signal?: AbortSignal;
  /** Called for every JSON line of the stream, in order. A throw ends the watch with that error. */
  onLine: (line: unknown) => void;
}

export interface KubeClientOptions {
  kubeConfig: KubeConfig;
  /** Shared by every request of this client (lists, watch starts, writes). */
  limiter?: TokenBucket;
  /** Time to a complete answer (requests) or to the response headers (watches), in ms (default 30 000). */
  requestTimeoutMs?: number;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function apiError(status: number, text: string): KubeApiError {
  let reason: string | undefined;
  let message = `HTTP ${status}`;
  try {
    const body: unknown = JSON.parse(text);
    if (isRecord(body)) {
      if (typeof body['reason'] === 'string') reason = body['reason'];
      if (typeof body['message'] === 'string') message = `HTTP ${status}: ${body['message']}`;
    }
  } catch {
    if (text) message = `HTTP ${status}: ${text.slice(0, 200)}`;
  }
  return new KubeApiError(status, reason, message);
}

/** As client-go: a request refused with Retry-After is tried again, this many times in all. */
const MAX_RETRY_AFTER_ATTEMPTS = 5;
const MAX_RETRY_AFTER_MS = 5_000;

/**
 * How long to wait before repeating a refused request, or undefined when it
 * must not be repeated. The API server sends 429 + Retry-After for a request
 * it did not process (priority-and-fairness, or "storage is (re)initializing"
 * right after a CRD changes) and 503 + Retry-After while shutting down, so
 * repeating is safe for every verb, as client-go does.
 */
export function retryAfterMs(status: number, header: string | string[] | undefined): number | undefined {
  if (status !== 429 && status !== 503) return undefined;
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined) return undefined;
  const seconds = Number(value);
  if (!Number.isFinite(seconds) || seconds < 0) return undefined;
  return Math.min(Math.max(seconds * 1000, 100), MAX_RETRY_AFTER_MS);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Minimal JSON client for the Kubernetes API over node:http(s), authenticated
 * by a KubeConfig (kubeconfig.ts: certs, bearer tokens, token files; exec plugins
 * through client-node).
 * Unlike client-node's Watch it has no inactivity timer of its own: the
 * reflector decides when a watch is silent (bookmarks arrive about once a minute).
 */
export class KubeClient {
  readonly kubeConfig: KubeConfig;
  private readonly limiter: TokenBucket | undefined;
  private readonly requestTimeoutMs: number;

  constructor(options: KubeClientOptions) {
    this.kubeConfig = options.kubeConfig;
    this.limiter = options.limiter;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
  }

  /** The API server's base URL (the current context's cluster). */
  get server(): string {
    const cluster = this.kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('kubeconfig has no current cluster');
    return cluster.server;
  }

  /** One request; resolves with the parsed JSON body, rejects with KubeApiError on non-2xx. */
  async request(method: string, path: string, options: RequestOptions = {}): Promise<unknown> {
    const timeout = AbortSignal.timeout(this.requestTimeoutMs);
    // AbortSignal.any: aborted when the first of these is (a DOM API, not a TypeScript any).
    const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
    for (let attempt = 1; ; attempt++) {
      await this.limiter?.take(signal);
      const res = await this.send(method, path, options, signal);
      const text = await readAll(res);
      const status = res.statusCode ?? 0;
      if (status >= 200 && status < 300) return text === '' ? undefined : JSON.parse(text);
      const delayMs = retryAfterMs(status, res.headers['retry-after']);
      if (delayMs === undefined || attempt >= MAX_RETRY_AFTER_ATTEMPTS) throw apiError(status, text);
      await sleep(delayMs, signal);
    }
  }

  /**
   * Opens a watch (`watch=true` is added) and feeds each JSON line to `onLine`.
   * Resolves when the server ends the stream (e.g. at `timeoutSeconds`); rejects
   * on a non-200 answer (KubeApiError), a broken connection, a line that is not
   * JSON, or abort.
   */
  async watch(path: string, query: Query, options: WatchOptions): Promise<void> {
    const { signal } = options;
    await this.limiter?.take(signal);
    // Only the wait for the response headers is bounded here; an open watch
    // may legitimately stay quiet between bookmarks.
    const connect = new AbortController();
    const headerTimer = setTimeout(
      () => connect.abort(new Error(`no response within ${this.requestTimeoutMs} ms`)),
      this.requestTimeoutMs,
    );
    // AbortSignal.any: aborted when the first of these is (a DOM API, not a TypeScript any).
    const combined = signal ? AbortSignal.any([signal, connect.signal]) : connect.signal;
    let res: http.IncomingMessage;
    try {
      res = await this.send('GET', path, { query: { ...query, watch: true } }, combined);
    } finally {
      clearTimeout(headerTimer);
    }
    const status = res.statusCode ?? 0;
    if (status !== 200) throw apiError(status, await readAll(res));
    await new Promise<void>((resolve, reject) => {
      let buffered = '';
      let failed = false;
      const fail = (err: unknown) => {
        if (failed) return;
        failed = true;
        res.destroy();
        reject(err);
      };
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffered += chunk;
        let nl = buffered.indexOf('\n');
        while (nl >= 0 && !failed) {
          const line = buffered.slice(0, nl).trim();
          buffered = buffered.slice(nl + 1);
          nl = buffered.indexOf('\n');
          if (line === '') continue;
          try {
            options.onLine(JSON.parse(line));
          } catch (err) {
            fail(err);
          }
        }
      });
      res.on('end', () => {
        if (failed) return;
        const rest = buffered.trim();
        if (rest !== '') {
          try {
            options.onLine(JSON.parse(rest));
          } catch (err) {
            fail(err);
            return;
          }
        }
        resolve();
      });
      res.on('error', fail);
      res.on('aborted', () => fail(new Error('watch connection aborted')));
      // 'close' without 'end' means the connection broke mid-stream.
      res.on('close', () => {
        if (!res.complete) fail(new Error('watch connection closed before the end of the stream'));
      });
    });
  }

  private async send(
    method: string,
    path: string,
    options: RequestOptions,
    signal: AbortSignal,
  ): Promise<http.IncomingMessage> {
    const url = new URL(this.server.replace(/\/+$/, '') + path);
    for (const [k, v] of Object.entries(options.query ?? {}))
      if (v !== undefined) url.searchParams.set(k, String(v));
    const opts: https.RequestOptions = { method, headers: { accept: 'application/json' } };
    // Certificates, bearer token (re-read from token files), agent.
    await this.kubeConfig.applyToHTTPSOptions(opts);
    if (opts.agent instanceof https.Agent) opts.agent = keepAliveAgent(opts.agent);
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    const headers: http.OutgoingHttpHeaders = {};
    if (opts.headers && !isHeaderList(opts.headers)) Object.assign(headers, opts.headers);
    headers['accept'] = 'application/json';
    if (body !== undefined) {
      headers['content-type'] = options.contentType ?? 'application/json';
      headers['content-length'] = Buffer.byteLength(body);
    }
    const transport = url.protocol === 'http:' ? http : https;
    return new Promise<http.IncomingMessage>((resolve, reject) => {
      const req = transport.request(url, { ...opts, headers, signal }, resolve);
      req.on('error', reject);
      req.end(body);
    });
  }
}

/** One keep-alive twin per agent client-node made (it caches one per cluster and user). */
const keepAliveAgents = new WeakMap<https.Agent, https.Agent>();

/**
 * client-node's agent has Node's default `keepAlive: false`, so every request
 * (a Lease renewal every few seconds, each Event and status write) paid a new
 * TCP and TLS handshake on both ends. Its twin keeps the same TLS options and
 * reuses idle connections; watches hold their own connection as before.
 */
function keepAliveAgent(agent: https.Agent): https.Agent {
  let twin = keepAliveAgents.get(agent);
  if (twin === undefined) {
    twin = new https.Agent({ ...agent.options, keepAlive: true, scheduling: 'lifo' });
    keepAliveAgents.set(agent, twin);
  }
  return twin;
}

// https.RequestOptions allows raw [name, value, ...] header lists; KubeConfig never produces them.
function isHeaderList(h: http.OutgoingHttpHeaders | readonly string[]): h is readonly string[] {
  return Array.isArray(h);
}

function readAll(res: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (c: string) => {
      text += c;
    });
    res.on('end', () => resolve(text));
    res.on('error', reject);
    res.on('close', () => {
      if (!res.complete) reject(new Error('connection closed before the end of the response'));
    });
  });
}
