// UpstreamTrafficSetting (policy.skein.dev/v1alpha1; OSM v1.2's host and
// connectionSettings, plus skein's outlierDetection, loadBalancer and
// requestTimeout): how every caller treats one destination service. Compiled
// here to plain numbers, one setting per service with conflicts settled and
// reported, so the generators only turn the result into Envoy fields.
import { parseDuration } from '../mesh/duration.js';
import { objectKey, type UpstreamTrafficSetting } from '../model/objects.js';
import { durationProblem } from './durations.js';
import { compileHashOn, type HashKey, hashOnProblems } from './hash.js';
import { compareStrings } from './pods.js';
import type { ProblemList } from './problems.js';
import { compileLocalRateLimits, type LocalRateLimits, rateLimitProblems } from './ratelimit.js';
import { parseServiceHost, serviceKey } from './services.js';

export type LoadBalancerPolicy = 'RoundRobin' | 'LeastRequest' | 'RingHash' | 'Maglev';

/** One service's compiled setting; durations in milliseconds, absent = the proxy's default. */
export interface UpstreamSetting {
  /** `UpstreamTrafficSetting <ns>/<name>` */
  origin: string;
  connectTimeoutMs?: number;
  maxConnections?: number;
  maxRequestsPerConnection?: number;
  maxPendingRequests?: number;
  maxRequests?: number;
  maxRetries?: number;
  outlierDetection?: {
    consecutive5xx?: number;
    consecutiveGatewayErrors?: number;
    intervalMs?: number;
    baseEjectionTimeMs?: number;
    maxEjectionPercent?: number;
    failurePercentage?: { threshold: number; minimumHosts?: number; requestVolume?: number };
  };
  loadBalancer?: { policy: LoadBalancerPolicy; choiceCount?: number; hashOn?: HashKey[] };
  /** 0 disables the timeout. */
  requestTimeoutMs?: number;
  /** Enforced by the service's own sidecars (inbound), not by callers. */
  rateLimit?: LocalRateLimits;
}

/**
 * Reasons an UpstreamTrafficSetting cannot be used (beyond its CRD schema,
 * which bounds the numbers): the host must name a Service of the object's own
 * namespace (OSM's rule: only that namespace's owners tune its callers), and
 * every duration must parse, and the rate limits must make Envoy token
 * buckets (catalog/ratelimit.ts).
 */
export function upstreamTrafficSettingProblems(u: UpstreamTrafficSetting): string[] {
  const out: string[] = [];
  const parsed = parseServiceHost(u.spec.host);
  if (!parsed || u.spec.host !== `${parsed.name}.${parsed.namespace}.svc.cluster.local`)
    out.push(`spec.host: ${JSON.stringify(u.spec.host)} is not <service>.<namespace>.svc.cluster.local`);
  else if (u.metadata.namespace !== undefined && parsed.namespace !== u.metadata.namespace)
    out.push(
      `spec.host: ${JSON.stringify(u.spec.host)} is in namespace ${parsed.namespace}; an UpstreamTrafficSetting must live in its service's namespace (${u.metadata.namespace})`,
    );
  const tcp = u.spec.connectionSettings?.tcp;
  const od = u.spec.outlierDetection;
  for (const p of [
    durationProblem('spec.connectionSettings.tcp.connectTimeout', tcp?.connectTimeout, true),
    durationProblem('spec.outlierDetection.interval', od?.interval, true),
    durationProblem('spec.outlierDetection.baseEjectionTime', od?.baseEjectionTime, true),
    durationProblem('spec.requestTimeout', u.spec.requestTimeout, false),
  ])
    if (p) out.push(p);
  const lb = u.spec.loadBalancer;
  if (lb?.choiceCount !== undefined && lb.policy !== 'LeastRequest')
    out.push(`spec.loadBalancer.choiceCount: only meaningful with policy LeastRequest (not ${lb.policy})`);
  if (lb) out.push(...hashOnProblems(lb));
  out.push(...rateLimitProblems(u.spec));
  return out;
}

const ms = (text: string | undefined): number | undefined =>
  text === undefined ? undefined : parseDuration(text);

/** Drops absent fields, so equal settings serialise alike (lineage pool comparison). */
function defined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

/** The compiled form of one (valid) object. */
export function compileUpstreamSetting(u: UpstreamTrafficSetting): UpstreamSetting {
  const tcp = u.spec.connectionSettings?.tcp;
  const http = u.spec.connectionSettings?.http;
  const od = u.spec.outlierDetection;
  const lb = u.spec.loadBalancer;
  return defined<UpstreamSetting>({
    origin: `UpstreamTrafficSetting ${objectKey(u)}`,
    connectTimeoutMs: ms(tcp?.connectTimeout),
    maxConnections: tcp?.maxConnections,
    maxRequestsPerConnection: http?.maxRequestsPerConnection,
    maxPendingRequests: http?.maxPendingRequests,
    maxRequests: http?.maxRequests,
    maxRetries: http?.maxRetries,
    outlierDetection: od
      ? defined({
          consecutive5xx: od.consecutive5xx,
          consecutiveGatewayErrors: od.consecutiveGatewayErrors,
          intervalMs: ms(od.interval),
          baseEjectionTimeMs: ms(od.baseEjectionTime),
          maxEjectionPercent: od.maxEjectionPercent,
          failurePercentage: od.failurePercentage && defined({ ...od.failurePercentage }),
        })
      : undefined,
    loadBalancer: lb
      ? defined({
          policy: lb.policy,
          choiceCount: lb.choiceCount,
          hashOn: lb.hashOn && compileHashOn(lb.hashOn),
        })
      : undefined,
    requestTimeoutMs: ms(u.spec.requestTimeout),
    rateLimit: compileLocalRateLimits(u.spec),
  });
}

/**
 * Settings by service key (`<ns>/<svc>`). Objects are taken in namespace/name
 * order and the first for a host wins: a deterministic winner, and the others
 * are reported rather than merged (OSM applied whichever it met first). A
 * setting for a service that does not exist is reported and kept (it applies
 * as soon as the service appears).
 */
export function compileUpstreamSettings(
  objects: readonly UpstreamTrafficSetting[],
  serviceExists: (key: string) => boolean,
  problems: ProblemList,
): Map<string, UpstreamSetting> {
  const out = new Map<string, UpstreamSetting>();
  const sorted = [...objects].sort((a, b) => compareStrings(objectKey(a), objectKey(b)));
  for (const u of sorted) {
    const report = (reason: string) =>
      problems.add({
        kind: 'UpstreamTrafficSetting',
        namespace: u.metadata.namespace,
        name: u.metadata.name,
        reason,
      });
    // The registry refuses invalid objects; this guards the local and test paths alike.
    const invalid = upstreamTrafficSettingProblems(u);
    if (invalid.length > 0) {
      report(invalid.join('; '));
      continue;
    }
    const parsed = parseServiceHost(u.spec.host);
    if (!parsed) continue;
    const key = serviceKey(parsed.namespace, parsed.name);
    const winner = out.get(key);
    if (winner) {
      report(
        `spec.host ${u.spec.host} is also set by ${winner.origin}, which applies (the first by namespace/name wins); this one is ignored`,
      );
      continue;
    }
    if (!serviceExists(key)) report(`spec.host ${u.spec.host}: no such Service in the mesh (yet)`);
    out.set(key, compileUpstreamSetting(u));
  }
  return out;
}
