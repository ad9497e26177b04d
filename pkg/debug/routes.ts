import type { IncomingMessage, ServerResponse } from 'node:http';
import type { MeshView } from '../catalog/types.js';
import type { ManagedCertificateInfo } from '../certificate/manager.js';
import type { RotationStatus } from '../certificate/rotation.js';
import type { HealthServer } from '../health/server.js';
import type { Exclusions } from '../injector/exclusions.js';
import type { StaleRules } from '../injector/stale-rules.js';
import type { ProxyIdentity } from '../mesh/identity.js';
import type { BookEntry } from '../registry/problem-book.js';
import type { EdgeSummary, ProxyStats } from '../stats/collector.js';
import type { EncodedResource } from '../xds/cache/encoded.js';
import type { StreamStatus } from '../xds/server/types.js';
import { buildCerts } from './certs.js';
import { buildConfigDump } from './config-dump.js';
import { buildPolicies } from './policies.js';
import { buildProxies, findStream, type PodRef } from './proxies.js';

/** What the debug endpoints read from the controller. */
export interface DebugSource {
  /** Checked on every request: local mode, or MeshConfig observability.enableDebugServer. */
  enabled(): boolean;
  streams(): StreamStatus[];
  sentResources(streamId: string): ReadonlyMap<string, readonly EncodedResource[]> | undefined;
  podOf(identity: ProxyIdentity): PodRef | undefined;
  certificates(): ManagedCertificateInfo[];
  /** The CA's roots and the root rotation's stage and progress (undefined before the CA is loaded). */
  caRotation?(): RotationStatus | undefined;
  view(): MeshView;
  /** Every problem in force: invalid objects and policy problems. */
  problems(): BookEntry[];
  /** The mesh's interception lists now and the pods whose iptables rules predate them (Kubernetes mode). */
  interception?(): InterceptionReport;
  /** Per-edge figures the sidecars' metrics streams reported (pkg/stats). */
  edgeStats?: EdgeStatsSource;
}

export interface EdgeStatsSource {
  windowMs: number;
  edges(): EdgeSummary[];
  proxy(uuid: string): ProxyStats | undefined;
}

export interface InterceptionReport {
  /** MeshConfig `spec.traffic` lists, as pods admitted now get them. */
  mesh: Exclusions;
  /** Running pods whose rules differ from what they would get if recreated now. */
  stalePods: StaleRules[];
}

/** Mounts `/debug/{proxies,config_dump,certs,policies,problems,interception,stats}`; each answers 404 while disabled. */
export function mountDebugRoutes(health: HealthServer, src: DebugSource): void {
  const guarded = (build: (req: IncomingMessage, res: ServerResponse) => void) => {
    return (req: IncomingMessage, res: ServerResponse) => {
      // Off means indistinguishable from an unknown path: the mesh layout stays private.
      if (!src.enabled()) return text(res, 404, 'not found\n');
      build(req, res);
    };
  };
  health.route(
    '/debug/proxies',
    guarded((_req, res) =>
      json(
        res,
        200,
        buildProxies(src.streams(), (s) => src.podOf(s.identity)),
      ),
    ),
  );
  health.route(
    '/debug/config_dump',
    guarded((req, res) => {
      const id = new URL(req.url ?? '/', 'http://debug').searchParams.get('proxy');
      if (!id) return text(res, 400, 'missing ?proxy=<stream id or proxy uuid>\n');
      const status = findStream(src.streams(), id);
      const sent = status && src.sentResources(status.streamId);
      if (status === undefined || sent === undefined)
        return text(res, 404, `no connected proxy with stream id or UUID "${id}"\n`);
      json(res, 200, buildConfigDump(status, sent));
    }),
  );
  health.route(
    '/debug/certs',
    guarded((_req, res) =>
      json(res, 200, { ca: src.caRotation?.() ?? null, certificates: buildCerts(src.certificates()) }),
    ),
  );
  health.route(
    '/debug/problems',
    guarded((_req, res) => json(res, 200, src.problems())),
  );
  const { interception } = src;
  if (interception) {
    health.route(
      '/debug/interception',
      guarded((_req, res) => json(res, 200, interception.call(src))),
    );
  }
  const { edgeStats } = src;
  if (edgeStats) {
    // Every edge, or with ?proxy=<stream id or UUID> one proxy's figures per destination.
    health.route(
      '/debug/stats',
      guarded((req, res) => {
        const id = new URL(req.url ?? '/', 'http://debug').searchParams.get('proxy');
        const windowSeconds = edgeStats.windowMs / 1000;
        if (!id) return json(res, 200, { windowSeconds, edges: edgeStats.edges() });
        const uuid = findStream(src.streams(), id)?.identity.uuid ?? id;
        const stats = edgeStats.proxy(uuid);
        if (stats === undefined)
          return text(res, 404, `no figures from proxy "${id}" in the last ${windowSeconds} s\n`);
        json(res, 200, { windowSeconds, ...stats });
      }),
    );
  }
  health.route(
    '/debug/policies',
    guarded((_req, res) => json(res, 200, buildPolicies(src.view()))),
  );
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(`${JSON.stringify(body, null, 2)}\n`);
}

function text(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
  res.end(body);
}
