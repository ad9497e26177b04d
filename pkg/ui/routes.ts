import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import type { HealthServer } from '../health/server.js';
import { GraphFeed, type GraphFeedOptions } from './feed.js';
import type { MeshGraph } from './graph-types.js';

/** What the web view reads from the controller. */
export interface UiSource {
  /** The same gate as /debug/*, checked on every request. */
  enabled(): boolean;
  graph(): MeshGraph;
}

export interface UiRouteOptions extends Pick<GraphFeedOptions, 'debounceMs' | 'heartbeatMs' | 'maxClients'> {
  /** Where index.html, app.js and app.css are; default the bundle next to this module (dist/pkg/ui/web). */
  assetsDir?: string;
}

const ASSETS: Record<string, { file: string; type: string }> = {
  '/ui/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/ui/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/ui/app.css': { file: 'app.css', type: 'text/css; charset=utf-8' },
};

/**
 * Mounts the web view: `/ui/` (the page, bundled at build time so it works
 * offline), `/debug/graph` (the graph as JSON) and `/debug/events` (the graph
 * as Server-Sent Events). Each answers 404 while the debug gate is closed.
 * Returns the feed: call `notify()` when the mesh or a proxy changes, and
 * `close()` on shutdown.
 */
export function mountUiRoutes(health: HealthServer, src: UiSource, opts: UiRouteOptions = {}): GraphFeed {
  const dir = opts.assetsDir ?? fileURLToPath(new URL('./web/', import.meta.url));
  const feed = new GraphFeed({ ...opts, build: () => src.graph() });
  const guarded = (handle: (req: IncomingMessage, res: ServerResponse) => void) => {
    return (req: IncomingMessage, res: ServerResponse) => {
      if (!src.enabled()) return text(res, 404, 'not found\n');
      handle(req, res);
    };
  };
  health.route(
    '/ui',
    guarded((_req, res) => {
      res.writeHead(301, { location: '/ui/' });
      res.end();
    }),
  );
  const cache = new Map<string, Buffer>();
  for (const [route, asset] of Object.entries(ASSETS)) {
    health.route(
      route,
      guarded((_req, res) => {
        const cached = cache.get(asset.file);
        const served = cached ? Promise.resolve(cached) : readFile(`${dir}/${asset.file}`);
        served.then(
          (body) => {
            cache.set(asset.file, body);
            res.writeHead(200, { 'content-type': asset.type, 'cache-control': 'no-cache' });
            res.end(body);
          },
          () => text(res, 503, `web view not built (${asset.file} missing in ${dir}): run \`make build\`\n`),
        );
      }),
    );
  }
  health.route(
    '/debug/graph',
    guarded((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`${JSON.stringify(src.graph(), null, 2)}\n`);
    }),
  );
  health.route(
    '/debug/events',
    guarded((req, res) => feed.attach(req, res)),
  );
  return feed;
}

function text(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
  res.end(body);
}
