// The bootstrap settings of one sidecar: the mesh's defaults (MeshConfig
// `spec.sidecar`, read by pkg/controller/settings.ts) under the pod's own
// annotations. They are read at admission and written into the pod's bootstrap
// Secret, so a change applies to pods created afterwards; a running pod keeps
// what it was admitted with until it is recreated.
import {
  DEFAULT_MAX_DOWNSTREAM_CONNECTIONS,
  DEFAULT_XDS_TRANSPORT,
  MAX_DOWNSTREAM_CONNECTIONS_LIMIT,
  XDS_TRANSPORTS,
  type XdsTransport,
} from './bootstrap.js';
import { ANNOTATION_MAX_DOWNSTREAM_CONNECTIONS, ANNOTATION_XDS_TRANSPORT } from './constants.js';
import { badAnnotation } from './errors.js';
import type { PodInfo } from './pod.js';

export interface SidecarSettings {
  xdsTransport: XdsTransport;
  maxDownstreamConnections: number;
  /** Envoy's --log-level (MeshConfig spec.sidecar.logLevel, OSM v1.2's field). */
  logLevel: EnvoyLogLevel;
}

/** What Envoy's --log-level accepts (Envoy's command line options: `warning` and `warn` are one level). */
export const ENVOY_LOG_LEVELS = [
  'trace',
  'debug',
  'info',
  'warning',
  'warn',
  'error',
  'critical',
  'off',
] as const;
export type EnvoyLogLevel = (typeof ENVOY_LOG_LEVELS)[number];

export const DEFAULT_SIDECAR_SETTINGS: Readonly<SidecarSettings> = {
  xdsTransport: DEFAULT_XDS_TRANSPORT,
  maxDownstreamConnections: DEFAULT_MAX_DOWNSTREAM_CONNECTIONS,
  logLevel: 'warn',
};

export function isEnvoyLogLevel(v: unknown): v is EnvoyLogLevel {
  return ENVOY_LOG_LEVELS.some((l) => l === v);
}

export const ENVOY_LOG_LEVEL_RULE = `use one of ${ENVOY_LOG_LEVELS.join(', ')}`;

export function isXdsTransport(v: unknown): v is XdsTransport {
  return XDS_TRANSPORTS.some((t) => t === v);
}

/** Envoy requires a limit above 0 (PGV `int64 gt 0`); the ceiling keeps it exact in JSON. */
export function isConnectionLimit(v: unknown): v is number {
  return Number.isInteger(v) && typeof v === 'number' && v >= 1 && v <= MAX_DOWNSTREAM_CONNECTIONS_LIMIT;
}

export const CONNECTION_LIMIT_RULE = `use a whole number from 1 to ${MAX_DOWNSTREAM_CONNECTIONS_LIMIT}`;

/**
 * The pod's settings: each annotation present replaces the mesh's value.
 * Throws InjectionError for a malformed annotation, so the pod is refused
 * rather than started with a setting it did not ask for.
 */
export function podSidecarSettings(
  pod: Pick<PodInfo, 'name' | 'annotations'>,
  mesh: Readonly<SidecarSettings> = DEFAULT_SIDECAR_SETTINGS,
): SidecarSettings {
  const where = `pod ${pod.name}`;
  const out: SidecarSettings = { ...mesh };
  const transport = pod.annotations[ANNOTATION_XDS_TRANSPORT];
  if (transport !== undefined) {
    if (!isXdsTransport(transport))
      throw badAnnotation(ANNOTATION_XDS_TRANSPORT, where, transport, 'use "sotw" or "delta"');
    out.xdsTransport = transport;
  }
  const limit = pod.annotations[ANNOTATION_MAX_DOWNSTREAM_CONNECTIONS];
  if (limit !== undefined) {
    // Digits only: Number() would accept "1e3", "0x10" and " 5 ".
    const n = /^[0-9]{1,10}$/.test(limit) ? Number(limit) : Number.NaN;
    if (!isConnectionLimit(n))
      throw badAnnotation(ANNOTATION_MAX_DOWNSTREAM_CONNECTIONS, where, limit, CONNECTION_LIMIT_RULE);
    out.maxDownstreamConnections = n;
  }
  return out;
}
