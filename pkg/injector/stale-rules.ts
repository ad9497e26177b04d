// Pods whose iptables rules no longer match what the injector would give them:
// the rules are fixed at admission (as in OSM), so a MeshConfig list change or
// an annotation edited on a running pod only applies once the pod is recreated.
// The injector records the merged lists on the pod (ANNOTATION_INTERCEPTION);
// this compares them with the mesh's lists now.
import type { Pod } from '../model/objects.js';
import { ANNOTATION_INTERCEPTION } from './constants.js';
import { InjectionError } from './errors.js';
import { type Exclusions, mergeExclusions, parseExclusions } from './exclusions.js';

export interface StaleRules {
  namespace: string;
  name: string;
  /** What its rules were rendered from. */
  admitted: Exclusions;
  /** What a pod with its annotations would get now; absent when its annotations no longer parse. */
  now?: Exclusions;
  /** Why `now` is absent: the admission error a recreated pod would meet. */
  problem?: string;
}

/** The same traffic intercepted: order within a list does not change what the rules match. */
export function sameInterception(a: Exclusions, b: Exclusions): boolean {
  const key = (e: Exclusions) =>
    JSON.stringify([
      [...e.outboundPorts].sort((x, y) => x - y),
      [...e.inboundPorts].sort((x, y) => x - y),
      [...e.outboundIpRanges].sort(),
      [...(e.outboundIpRangeInclusions ?? [])].sort(),
    ]);
  return key(a) === key(b);
}

function recorded(text: string): Exclusions | undefined {
  try {
    const v = JSON.parse(text) as Partial<Exclusions>;
    const nums = (l: unknown) => Array.isArray(l) && l.every((n) => typeof n === 'number');
    const strs = (l: unknown) => Array.isArray(l) && l.every((n) => typeof n === 'string');
    if (!nums(v.outboundPorts) || !nums(v.inboundPorts) || !strs(v.outboundIpRanges)) return undefined;
    if (v.outboundIpRangeInclusions !== undefined && !strs(v.outboundIpRangeInclusions)) return undefined;
    return v as Exclusions;
  } catch {
    return undefined;
  }
}

/**
 * Injected pods whose recorded lists differ from what they would get now,
 * sorted by namespace/name. Pods without a readable record (admitted before
 * skein recorded it, or edited by hand) are left out: their rules are unknown.
 */
export function staleRules(pods: readonly Pod[], mesh: Exclusions): StaleRules[] {
  const out: StaleRules[] = [];
  for (const pod of pods) {
    const annotations = pod.metadata.annotations ?? {};
    const text = annotations[ANNOTATION_INTERCEPTION];
    const admitted = text === undefined ? undefined : recorded(text);
    if (admitted === undefined) continue;
    const where = { namespace: pod.metadata.namespace ?? '', name: pod.metadata.name };
    try {
      const now = mergeExclusions(mesh, parseExclusions(annotations));
      if (!sameInterception(admitted, now)) out.push({ ...where, admitted, now });
    } catch (err) {
      if (!(err instanceof InjectionError)) throw err;
      out.push({ ...where, admitted, problem: err.message });
    }
  }
  return out.sort((a, b) =>
    a.namespace === b.namespace ? (a.name < b.name ? -1 : 1) : a.namespace < b.namespace ? -1 : 1,
  );
}
