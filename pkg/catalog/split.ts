import type { TrafficSplit } from '../model/objects.js';
import { compareStrings } from './pods.js';
import type { ProblemList } from './problems.js';
import { CLUSTER_DOMAIN, serviceKey } from './services.js';

/** A merged split: apex service key → backend service key → summed weight. */
export type SplitTable = Map<string, Map<string, number>>;

/**
 * Normalises a TrafficSplit service reference to a name in the split's
 * namespace. SMI gives a Service name, but FQDNs (`name.ns.svc.cluster.local`,
 * `name.ns.svc`, `name.ns`) are common in the wild; an FQDN naming another
 * namespace is invalid because apex and backends live with the split.
 */
export function normaliseSplitRef(ref: string, namespace: string): string | undefined {
  let r = ref.trim().toLowerCase();
  if (r.endsWith('.')) r = r.slice(0, -1);
  for (const suffix of [`.${namespace}.${CLUSTER_DOMAIN}`, `.${namespace}.svc`, `.${namespace}`]) {
    if (r.endsWith(suffix)) return r.slice(0, -suffix.length) || undefined;
  }
  return r.includes('.') || r === '' ? undefined : r;
}

/**
 * Merges every TrafficSplit of the mesh into one table per apex.
 *
 * Deliberate difference from OSM (which honoured one split per apex): several
 * splits for the same apex are merged — backends unioned, weights of a backend
 * that appears in more than one split summed — so the result never depends on
 * which object was seen first. Backends that do not exist and backends of
 * weight 0 are dropped; an apex whose remaining total weight is 0 has no split.
 * v1alpha4 `matches` (A/B by header) are not modelled: the split applies to all
 * traffic, and a problem says so.
 */
export function mergeSplits(
  splits: readonly TrafficSplit[],
  serviceExists: (key: string) => boolean,
  problems: ProblemList,
): SplitTable {
  const table: SplitTable = new Map();
  const sorted = [...splits].sort((a, b) =>
    compareStrings(
      `${a.metadata.namespace}/${a.metadata.name}`,
      `${b.metadata.namespace}/${b.metadata.name}`,
    ),
  );
  for (const ts of sorted) {
    const ns = ts.metadata.namespace ?? '';
    const report = (reason: string) =>
      problems.add({ kind: 'TrafficSplit', namespace: ns, name: ts.metadata.name, reason });
    const apexName = normaliseSplitRef(ts.spec?.service ?? '', ns);
    if (apexName === undefined) {
      report(
        `apex service ${JSON.stringify(ts.spec?.service)} is not a service of namespace ${ns}; split ignored`,
      );
      continue;
    }
    const apex = serviceKey(ns, apexName);
    if (!serviceExists(apex)) {
      report(`apex service ${apex} does not exist; split ignored`);
      continue;
    }
    if ((ts.spec.matches ?? []).length > 0) {
      report('spec.matches is not supported; the split applies to all traffic to the apex');
    }
    let backends = table.get(apex);
    let contributed = 0;
    for (const b of ts.spec?.backends ?? []) {
      const name = normaliseSplitRef(b.service, ns);
      if (name === undefined) {
        report(`backend ${JSON.stringify(b.service)} is not a service of namespace ${ns}; backend dropped`);
        continue;
      }
      const key = serviceKey(ns, name);
      if (!serviceExists(key)) {
        report(`backend service ${key} does not exist; backend dropped`);
        continue;
      }
      const weight = Number.isFinite(b.weight) && b.weight > 0 ? b.weight : 0;
      if (weight === 0) continue;
      if (!backends) {
        backends = new Map();
        table.set(apex, backends);
      }
      backends.set(key, (backends.get(key) ?? 0) + weight);
      contributed++;
    }
    if (contributed === 0) report('no existing backend with a positive weight; split has no effect');
  }
  return table;
}
