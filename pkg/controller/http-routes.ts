// What the controller's HTTP port serves next to /healthz and /readyz:
// /metrics always; /debug/* and the web view (/ui/, /debug/graph,
// /debug/events) behind one gate, checked per request.
import type { DisconnectedProxy } from '../catalog/proxies.js';
import type { DebugSource } from '../debug/routes.js';
import { mountDebugRoutes } from '../debug/routes.js';
import type { HealthServer } from '../health/server.js';
import type { MeshMetrics } from '../metrics/metrics.js';
import type { GraphFeed } from '../ui/feed.js';
import { buildGraph } from '../ui/graph.js';
import { mountUiRoutes } from '../ui/routes.js';

export interface HttpRouteSources extends DebugSource {
  meshName: string;
  metrics: MeshMetrics;
  recentlyDisconnected(): readonly DisconnectedProxy[];
}

/** Mounts the routes; the returned feed is told when the graph may have changed. */
export function mountHttpRoutes(health: HealthServer, src: HttpRouteSources): GraphFeed {
  mountDebugRoutes(health, src);
  const feed = mountUiRoutes(health, {
    enabled: () => src.enabled(),
    graph: () =>
      buildGraph({
        meshName: src.meshName,
        view: src.view(),
        streams: src.streams(),
        disconnected: src.recentlyDisconnected(),
        problems: src.problems(),
        ...(src.edgeStats ? { edgeStats: src.edgeStats.edges() } : {}),
      }),
  });
  health.route('/metrics', (_req, res) => {
    src.metrics.text().then(
      (body) => {
        res.writeHead(200, { 'content-type': src.metrics.contentType });
        res.end(body);
      },
      (err: unknown) => {
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
        res.end(`${err instanceof Error ? err.message : String(err)}\n`);
      },
    );
  });
  return feed;
}
