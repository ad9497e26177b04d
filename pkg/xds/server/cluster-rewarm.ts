// A Cluster whose content changes is rebuilt by Envoy and "warms" until its
// endpoints arrive: the new cluster waits for an EDS response before it takes
// traffic (Envoy's xDS protocol, "Eventual consistency considerations", and
// cluster warming in the cluster manager docs). Envoy does not ask again in a
// way a version-comparing SotW server answers, so a server that sends EDS only
// when endpoints change leaves the cluster warming until `initial_fetch_timeout`
// (15 s) and only then does the new setting apply (envoyproxy/envoy#31535).
// The stream therefore resends the ClusterLoadAssignment of every cluster whose
// content changed, right after the CDS response (push order: CDS then EDS).
// skein's EDS clusters leave `eds_cluster_config.service_name` unset, so a
// cluster's ClusterLoadAssignment has the cluster's name (cds/sidecar.ts).
import type { EncodedResource } from '../cache/encoded.js';

/** Names of clusters in `current` that `held` has with other content (new ones need no rewarming: their EDS name is new). */
export function changedClusters(
  held: readonly EncodedResource[],
  current: readonly EncodedResource[],
): string[] {
  const before = new Map<string, string>();
  for (const r of held) before.set(r.name, r.hash);
  const out: string[] = [];
  for (const r of current) {
    const h = before.get(r.name);
    if (h !== undefined && h !== r.hash) out.push(r.name);
  }
  return out;
}

/** The resources of `current` named in `pending`, which is emptied: each is resent once. */
export function takeRewarmed(pending: Set<string>, current: readonly EncodedResource[]): EncodedResource[] {
  if (pending.size === 0) return [];
  const out = current.filter((r) => pending.has(r.name));
  pending.clear();
  return out;
}

/** `changed` plus the rewarmed resources it does not carry already. */
export function withRewarmed(
  changed: EncodedResource[],
  rewarmed: readonly EncodedResource[],
): EncodedResource[] {
  if (rewarmed.length === 0) return changed;
  const names = new Set(changed.map((r) => r.name));
  for (const r of rewarmed) if (!names.has(r.name)) changed.push(r);
  return changed;
}
