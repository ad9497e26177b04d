// Test helper: checks that one proxy's resources of all five types reference
// each other consistently, the way Envoy resolves them: route config names in
// listeners, clusters in routes and tcp_proxy, a ClusterLoadAssignment for
// every EDS cluster, and every SDS secret a transport socket names.
import type { ProtoObject, ProtoValue, Resource } from '../../../pkg/envoy/types.js';

export interface ProxyResources {
  listeners: readonly Resource[];
  routes: readonly Resource[];
  clusters: readonly Resource[];
  endpoints: readonly Resource[];
  secrets: readonly Resource[];
}

/** Names one resource set refers to, by the type that must serve them. */
export interface References {
  routes: Set<string>;
  clusters: Set<string>;
  edsClusters: Set<string>;
  secrets: Set<string>;
}

function isObject(v: ProtoValue | undefined): v is { [k: string]: ProtoValue } {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function nameOf(v: ProtoValue | undefined): string | undefined {
  return isObject(v) && typeof v['name'] === 'string' ? v['name'] : undefined;
}

function collect(v: ProtoValue, refs: References): void {
  if (Array.isArray(v)) {
    for (const item of v) collect(item, refs);
    return;
  }
  if (!isObject(v)) return;
  for (const [key, child] of Object.entries(v)) {
    if (key === 'rds' && isObject(child) && typeof child['route_config_name'] === 'string') {
      refs.routes.add(child['route_config_name']);
    } else if (key === 'cluster' && typeof child === 'string') {
      refs.clusters.add(child);
    } else if (key === 'weighted_clusters' && isObject(child) && Array.isArray(child['clusters'])) {
      for (const c of child['clusters']) {
        const n = nameOf(c);
        if (n) refs.clusters.add(n);
      }
    } else if (key === 'tls_certificate_sds_secret_configs' && Array.isArray(child)) {
      for (const c of child) {
        const n = nameOf(c);
        if (n) refs.secrets.add(n);
      }
    } else if (key === 'validation_context_sds_secret_config') {
      const n = nameOf(child);
      if (n) refs.secrets.add(n);
    }
    collect(child, refs);
  }
}

/** Every name the given resources refer to. */
export function referencesOf(resources: readonly Resource[]): References {
  const refs: References = {
    routes: new Set(),
    clusters: new Set(),
    edsClusters: new Set(),
    secrets: new Set(),
  };
  for (const r of resources) {
    // Read as plain data: the field names checked here span all resource types.
    const message: ProtoObject = r.message;
    collect(message, refs);
    const eds = message['eds_cluster_config'];
    if (isObject(eds)) {
      const serviceName = eds['service_name'];
      refs.edsClusters.add(typeof serviceName === 'string' && serviceName !== '' ? serviceName : r.name);
    }
  }
  return refs;
}

function checkList(
  kind: string,
  list: readonly Resource[],
  nameField: string,
  problems: string[],
): Set<string> {
  const names = new Set<string>();
  let previous = '';
  for (const r of list) {
    if (names.has(r.name)) problems.push(`${kind}: duplicate name ${r.name} (xDS rule 9)`);
    if (r.name < previous) problems.push(`${kind}: ${r.name} out of order (generators sort by name)`);
    const message: ProtoObject = r.message;
    if (message[nameField] !== r.name)
      problems.push(`${kind}: ${r.name} has ${nameField} ${String(message[nameField])}`);
    names.add(r.name);
    previous = r.name;
  }
  return names;
}

/** Every dangling reference, duplicate or misnamed resource. */
export function crossReferenceProblems(res: ProxyResources): string[] {
  const problems: string[] = [];
  const routes = checkList('RDS', res.routes, 'name', problems);
  const clusters = checkList('CDS', res.clusters, 'name', problems);
  const endpoints = checkList('EDS', res.endpoints, 'cluster_name', problems);
  const secrets = checkList('SDS', res.secrets, 'name', problems);
  checkList('LDS', res.listeners, 'name', problems);

  const refs = referencesOf([...res.listeners, ...res.routes, ...res.clusters]);
  for (const n of refs.routes)
    if (!routes.has(n)) problems.push(`route config ${n} is referenced but not served`);
  for (const n of refs.clusters)
    if (!clusters.has(n)) problems.push(`cluster ${n} is referenced but not served`);
  for (const n of refs.edsClusters)
    if (!endpoints.has(n)) problems.push(`EDS cluster ${n} has no ClusterLoadAssignment`);
  for (const n of refs.secrets)
    if (!secrets.has(n)) problems.push(`secret ${n} is referenced but not served`);
  return problems;
}
