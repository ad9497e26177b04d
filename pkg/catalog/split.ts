import type { TrafficSplit } from '../model/objects.js';
import { compareStrings } from './pods.js';
import type { ProblemList } from './problems.js';
import { CLUSTER_DOMAIN, serviceKey } from './services.js';
import type { MeshService, MeshView } from './types.js';

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

/** One backend of a split apex on one port, with its weight summed across merged splits. */
export interface PortBackend {
  service: MeshService;
  weight: number;
}

function hasReadyEndpoint(mesh: MeshView, serviceKey: string, port: number): boolean {
  return mesh.endpoints(serviceKey, port).some((e) => e.ready);
}

/**
 * The backends that take an apex port's traffic, sorted by service key.
 * Zero-weight backends and backends without that port are left out (SMI:
 * backends serve the apex's ports), and so are backends with no ready endpoint
 * on it while another backend has one: an empty backend would otherwise fail
 * its share of the calls (Envoy: 503 no healthy upstream; grpc-js: "priority
 * policy has empty priority list"), so the others' weights are re-normalised by
 * their proxies. When every backend is empty all stay, and the calls fail as
 * they would without the split rule. Empty result: not a split on this port.
 */
export function splitOnPort(mesh: MeshView, apexKey: string, port: number): PortBackend[] {
  const backends = mesh.split(apexKey);
  if (!backends) return [];
  const byKey = new Map<string, PortBackend>();
  for (const b of backends) {
    if (!(b.weight > 0) || !b.service.ports.some((p) => p.port === port)) continue;
    const seen = byKey.get(b.service.key);
    if (seen) seen.weight += b.weight;
    else byKey.set(b.service.key, { service: b.service, weight: b.weight });
  }
  const all = [...byKey.values()].sort((a, b) => compareStrings(a.service.key, b.service.key));
  const ready = all.filter((b) => hasReadyEndpoint(mesh, b.service.key, port));
  return ready.length > 0 ? ready : all;
}

/**
 * Which backends of an apex have no ready endpoint on which port, as a string:
 * part of the memo keys of everything built from `splitOnPort`, so that config
 * changes when a backend empties or fills, and only then (not on every
 * endpoint change).
 */
export function splitEmptiness(mesh: MeshView, apexKey: string): string {
  const backends = mesh.split(apexKey);
  if (!backends) return '';
  const empty: string[] = [];
  for (const b of backends)
    for (const p of b.service.ports)
      if (!hasReadyEndpoint(mesh, b.service.key, p.port)) empty.push(`${b.service.key}:${p.port}`);
  return empty.sort().join(',');
}
