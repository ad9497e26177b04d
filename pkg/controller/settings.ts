// The MeshConfig settings the controller applies at runtime, with their
// defaults. A value that does not parse is reported and the default used:
// a typo in MeshConfig must not stop the mesh.
import type { MeshView } from '../catalog/types.js';
import { meshConfigOf } from '../catalog/view.js';
import { DEFAULT_CERT_VALIDITY_MS, DEFAULT_MIN_PUSH_INTERVAL_MS } from '../mesh/constants.js';
import { parseDuration } from '../mesh/duration.js';

export interface MeshSettings {
  validityMs: number;
  minPushIntervalMs: number;
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
    minPushIntervalMs: duration(
      spec?.xds?.minPushInterval,
      DEFAULT_MIN_PUSH_INTERVAL_MS,
      'xds.minPushInterval',
      ignored,
    ),
  };
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
