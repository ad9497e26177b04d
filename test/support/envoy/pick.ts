// Test helper: navigate generated ProtoObjects without casts.
import type { ProtoObject, ProtoValue, Resource } from '../../../pkg/envoy/types.js';

export function isProtoObject(v: ProtoValue | undefined): v is ProtoObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A typed message seen as plain data, for walking fields by name (a widening, not a cast). */
export function plain(message: ProtoObject): ProtoObject {
  return message;
}

/** The value at a path of keys / array indexes, or undefined. */
export function at(v: ProtoValue | undefined, ...path: (string | number)[]): ProtoValue | undefined {
  let cur = v;
  for (const step of path) {
    if (typeof step === 'number') cur = Array.isArray(cur) ? cur[step] : undefined;
    else cur = isProtoObject(cur) ? cur[step] : undefined;
  }
  return cur;
}

export function list(v: ProtoValue | undefined, ...path: (string | number)[]): ProtoValue[] {
  const found = at(v, ...path);
  return Array.isArray(found) ? found : [];
}

export function named(resources: readonly Resource[], name: string): ProtoObject {
  const r = resources.find((x) => x.name === name);
  if (!r) throw new Error(`no resource ${name} in [${resources.map((x) => x.name).join(', ')}]`);
  return r.message;
}

/** The element of a list of `{name}` objects with that name. */
export function byNameIn(items: readonly ProtoValue[], name: string): ProtoObject {
  const found = items.find((x) => isProtoObject(x) && x['name'] === name);
  if (!isProtoObject(found)) throw new Error(`no element named ${name}`);
  return found;
}

export function names(items: readonly ProtoValue[]): string[] {
  return items.map((x) => (isProtoObject(x) && typeof x['name'] === 'string' ? x['name'] : '?'));
}

/**
 * The outbound virtual hosts of one port across a proxy's route configs:
 * each service's own `rds-outbound.<port>.<svc>` (names.ts) and, for
 * headless services, the port's `rds-outbound.<port>`, in name order.
 */
export function outboundHosts(routes: readonly Resource[], port: number): ProtoValue[] {
  const own = `rds-outbound.${port}.`;
  return routes
    .filter((r) => r.name.startsWith(own) || r.name === `rds-outbound.${port}`)
    .flatMap((r) => list(r.message, 'virtual_hosts'));
}
