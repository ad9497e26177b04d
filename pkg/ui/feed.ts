import type { IncomingMessage, ServerResponse } from 'node:http';
import type { MeshGraph } from './graph-types.js';

export interface GraphFeedOptions {
  /** Builds the current graph; called at most once per debounce window, plus once per new client. */
  build(): MeshGraph;
  /** Changes within this window are sent as one graph (default 200 ms). */
  debounceMs?: number;
  /** An SSE comment this often keeps proxies and browsers from timing the stream out (default 15 s). */
  heartbeatMs?: number;
  /** Further clients are refused with 503 (default 64). */
  maxClients?: number;
}

interface Client {
  res: ServerResponse;
  /** The last graph message written to it, to skip unchanged graphs. */
  last?: string;
  /** The socket's buffer is full: hold only the newest message until it drains. */
  blocked: boolean;
  pending?: string;
}

/**
 * `/debug/events`: Server-Sent Events carrying the mesh graph. Each client gets
 * the graph on connect, then a new one whenever `notify()` was called and the
 * graph differs from what it last received. A slow client never queues more
 * than one graph beyond its socket buffer: while blocked, a newer graph
 * replaces the one waiting (latest wins — each message is the whole graph).
 */
export class GraphFeed {
  private readonly clients = new Set<Client>();
  private readonly debounceMs: number;
  private readonly maxClients: number;
  private timer: NodeJS.Timeout | undefined;
  private readonly heartbeat: NodeJS.Timeout;
  private closed = false;

  constructor(private readonly opts: GraphFeedOptions) {
    this.debounceMs = opts.debounceMs ?? 200;
    this.maxClients = opts.maxClients ?? 64;
    this.heartbeat = setInterval(() => {
      for (const c of this.clients) if (!c.blocked) c.res.write(': keepalive\n\n');
    }, opts.heartbeatMs ?? 15_000);
    this.heartbeat.unref();
  }

  get clientCount(): number {
    return this.clients.size;
  }

  /** Something the graph shows may have changed. Leading edge starts the window; later calls join it. */
  notify(): void {
    if (this.closed || this.timer !== undefined || this.clients.size === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.broadcast();
    }, this.debounceMs);
    this.timer.unref();
  }

  attach(req: IncomingMessage, res: ServerResponse): void {
    if (this.closed || this.clients.size >= this.maxClients) {
      res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('too many event streams\n');
      return;
    }
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      // nginx-style proxies (kubectl port-forward is fine) must not buffer the stream.
      'x-accel-buffering': 'no',
    });
    const client: Client = { res, blocked: false };
    this.clients.add(client);
    const drop = () => this.clients.delete(client);
    req.once('close', drop);
    res.once('close', drop);
    // EventSource reconnects after this many ms when the stream breaks.
    res.write('retry: 2000\n\n');
    this.send(client, message(this.opts.build()));
  }

  /** Ends every stream (controller stop); later notifications and clients are ignored. */
  close(): void {
    this.closed = true;
    clearInterval(this.heartbeat);
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    for (const c of this.clients) c.res.end();
    this.clients.clear();
  }

  private broadcast(): void {
    if (this.clients.size === 0) return;
    const msg = message(this.opts.build());
    for (const c of this.clients) this.send(c, msg);
  }

  private send(c: Client, msg: string): void {
    if (c.blocked) {
      c.pending = msg;
      return;
    }
    if (c.last === msg) return;
    c.last = msg;
    if (c.res.write(msg)) return;
    c.blocked = true;
    c.res.once('drain', () => {
      c.blocked = false;
      const next = c.pending;
      c.pending = undefined;
      if (next !== undefined && this.clients.has(c)) this.send(c, next);
    });
  }
}

function message(graph: MeshGraph): string {
  // JSON.stringify never emits a raw newline, so the payload is one `data:` line.
  return `event: graph\ndata: ${JSON.stringify(graph)}\n\n`;
}
