// What a state-of-the-world response of one type must carry. Envoy's xDS
// protocol ("Grouping Resources into Responses",
// https://www.envoyproxy.io/docs/envoy/latest/api-docs/xds_protocol#grouping-resources-into-responses):
// Listener and Cluster responses carry every resource the client needs (one
// left out is deleted); for every other type the server groups resources as in
// incremental xDS, so a response may carry only those that changed and the
// client keeps the ones it leaves out. RDS, EDS and SDS are therefore sent as
// the changes since what the stream holds: an endpoint change costs one
// ClusterLoadAssignment per proxy instead of all of them.
import { TypeUrl } from '../../envoy/types.js';
import type { EncodedResource } from '../cache/encoded.js';

/** Whether every SotW response of the type must carry the full set (LDS, CDS). */
export function carriesFullSet(typeUrl: string): boolean {
  return typeUrl === TypeUrl.Listener || typeUrl === TypeUrl.Cluster;
}

/**
 * The resources of `current` that `held` lacks or holds with other content.
 * Both are sorted by name (GeneratedSet order; a pruned `held` keeps it), so
 * one merge walk; interned resources of equal content are the same object.
 */
export function changedSince(
  held: readonly EncodedResource[],
  current: readonly EncodedResource[],
): EncodedResource[] {
  const out: EncodedResource[] = [];
  let i = 0;
  for (const r of current) {
    while (i < held.length && (held[i]?.name ?? '') < r.name) i++;
    const h = held[i];
    if (h === r) continue;
    if (h !== undefined && h.name === r.name && h.hash === r.hash) continue;
    out.push(r);
  }
  return out;
}
