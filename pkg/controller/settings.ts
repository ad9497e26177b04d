// The MeshConfig settings the controller applies at runtime, with their
// defaults. A value that does not parse is reported and the default used:
// a typo in MeshConfig must not stop the mesh.
import type { MeshView } from '../catalog/types.js';
import { meshConfigOf } from '../catalog/view.js';
import {
  type Exclusions,
  ListEntryError,
  NO_EXCLUSIONS,
  parseMeshExclusions,
} from '../injector/exclusions.js';
import {
  CONNECTION_LIMIT_RULE,
  DEFAULT_SIDECAR_SETTINGS,
  ENVOY_LOG_LEVEL_RULE,
  isConnectionLimit,
  isEnvoyLogLevel,
  isXdsTransport,
  type SidecarSettings,
} from '../injector/sidecar-settings.js';
import { DEFAULT_CERT_VALIDITY_MS, DEFAULT_MIN_PUSH_INTERVAL_MS } from '../mesh/constants.js';
import { parseDuration } from '../mesh/duration.js';

export interface MeshSettings {
  validityMs: number;
  /** Validity of the ADS client certificates in bootstrap Secrets (issued and rotated from now on). */
  bootstrapValidityMs: number;
  minPushIntervalMs: number;
  /** What the injector writes into the bootstrap of pods admitted from now on. */
  sidecar: SidecarSettings;
  /** The interception lists (spec.traffic) the injector merges into pods admitted from now on. */
  exclusions: Exclusions;
}

/** Told about each MeshConfig field that was ignored, and why. */
export type IgnoredSetting = (field: string, reason: string) => void;

export function meshSettings(view: MeshView, ignored: IgnoredSetting): MeshSettings {
  const spec = meshConfigOf(view)?.spec;
  return {
    validityMs: duration(
      spec?.certificate?.validity,
      DEFAULT_CERT_VALIDITY_MS,
      'certificate.validity',
      ignored,
    ),
    bootstrapValidityMs: duration(
      spec?.certificate?.bootstrapValidity,
      DEFAULT_CERT_VALIDITY_MS,
      'certificate.bootstrapValidity',
      ignored,
    ),
    minPushIntervalMs: duration(
      spec?.xds?.minPushInterval,
      DEFAULT_MIN_PUSH_INTERVAL_MS,
      'xds.minPushInterval',
      ignored,
    ),
    sidecar: {
      // The registries' schema check (the CRD) already refuses bad values; checked again
      // because a default is better than a bootstrap Envoy would reject.
      xdsTransport: checked(
        spec?.sidecar?.xdsTransport,
        isXdsTransport,
        DEFAULT_SIDECAR_SETTINGS.xdsTransport,
        'sidecar.xdsTransport',
        'use "sotw" or "delta"',
        ignored,
      ),
      maxDownstreamConnections: checked(
        spec?.sidecar?.maxDownstreamConnections,
        isConnectionLimit,
        DEFAULT_SIDECAR_SETTINGS.maxDownstreamConnections,
        'sidecar.maxDownstreamConnections',
        CONNECTION_LIMIT_RULE,
        ignored,
      ),
      logLevel: checked(
        spec?.sidecar?.logLevel,
        isEnvoyLogLevel,
        DEFAULT_SIDECAR_SETTINGS.logLevel,
        'sidecar.logLevel',
        ENVOY_LOG_LEVEL_RULE,
        ignored,
      ),
    },
    exclusions: exclusions(spec?.traffic, ignored),
  };
}

/**
 * The registries refuse a MeshConfig with a bad entry (pkg/registry/validate.ts), so
 * its last valid version is what arrives here; checked again rather than trusted, and
 * on a bad entry none of the lists apply: a partial set could intercept what a pod
 * relies on bypassing.
 */
function exclusions(traffic: Parameters<typeof parseMeshExclusions>[0], ignored: IgnoredSetting): Exclusions {
  try {
    return parseMeshExclusions(traffic);
  } catch (err) {
    if (!(err instanceof ListEntryError)) throw err;
    ignored(err.where.replace(/^spec\./, ''), `${JSON.stringify(err.value)} ${err.why}`);
    return NO_EXCLUSIONS;
  }
}

function checked<T>(
  value: unknown,
  valid: (v: unknown) => v is T,
  fallback: T,
  field: string,
  rule: string,
  ignored: IgnoredSetting,
): T {
  if (value === undefined) return fallback;
  if (valid(value)) return value;
  ignored(field, `${JSON.stringify(value)}: ${rule}`);
  return fallback;
}

function duration(
  text: string | undefined,
  fallback: number,
  field: string,
  ignored: IgnoredSetting,
): number {
  if (text === undefined) return fallback;
  try {
    return parseDuration(text);
  } catch (err) {
    ignored(field, err instanceof Error ? err.message : String(err));
    return fallback;
  }
}
