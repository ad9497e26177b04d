import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { listenTcp } from '../net/listen.js';

/** A named readiness condition; `ready()` returns undefined when ready, else why not. */
export interface ReadinessCheck {
  name: string;
  notReadyReason(): string | undefined;
}

export type RouteHandler = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * The controller's HTTP port (default 9091): `/healthz` (the process is alive and its
 * event loop turns) and `/readyz` (every readiness check passes). Other parts of
 * skein may mount extra GET routes (metrics, debug) with `route()`.
 */
export class HealthServer {
  private readonly server: Server;
  private readonly routes = new Map<string, RouteHandler>();

  constructor(private readonly checks: ReadinessCheck[]) {
    this.server = createServer((req, res) => this.handle(req, res));
    this.route('/healthz', (_req, res) => send(res, 200, 'ok\n'));
    this.route('/readyz', (_req, res) => {
      const failing = this.failing();
      if (failing.length === 0) send(res, 200, 'ok\n');
      else send(res, 503, failing.map((f) => `${f.name}: ${f.reason}`).join('\n') + '\n');
    });
  }

  route(path: string, handler: RouteHandler): void {
    this.routes.set(path, handler);
  }

  failing(): { name: string; reason: string }[] {
    const out: { name: string; reason: string }[] = [];
    for (const c of this.checks) {
      const reason = c.notReadyReason();
      if (reason !== undefined) out.push({ name: c.name, reason });
    }
    return out;
  }

  async listen(port: number, host: string): Promise<number> {
    return listenTcp(this.server, port, host);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const handler = this.routes.get(path);
    if (!handler) {
      send(res, 404, 'not found\n');
      return;
    }
    try {
      handler(req, res);
    } catch (err) {
      send(res, 500, `${err instanceof Error ? err.message : String(err)}\n`);
    }
  }
}

function send(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
  res.end(body);
}
