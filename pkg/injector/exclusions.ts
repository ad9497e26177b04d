// Which of a pod's traffic the sidecar intercepts: the mesh's lists (MeshConfig
// `spec.traffic`, OSM v1.2's fields) merged with the pod's annotations at
// admission. The result becomes the init container's iptables rules, so a
// change applies to pods admitted afterwards; running pods keep their rules.
import { isIPv4, isIPv6 } from 'node:net';
import {
  ANNOTATION_INBOUND_PORT_EXCLUSIONS,
  ANNOTATION_OUTBOUND_IP_RANGE_EXCLUSIONS,
  ANNOTATION_OUTBOUND_IP_RANGE_INCLUSIONS,
  ANNOTATION_OUTBOUND_PORT_EXCLUSIONS,
} from './constants.js';
import { InjectionError } from './errors.js';

/** Traffic the proxy must not intercept, and optionally the only destinations it intercepts. */
export interface Exclusions {
  outboundPorts: number[];
  inboundPorts: number[];
  /** IPv4 CIDRs in `a.b.c.d/n` form. */
  outboundIpRanges: string[];
  /**
   * When set and non-empty, outbound TCP is intercepted only towards these
   * IPv4 CIDRs (after the exclusions above, which still win). Unset or empty:
   * every destination is intercepted. Unset and empty differ only when merging:
   * a pod's list, even empty, replaces the mesh's.
   */
  outboundIpRangeInclusions?: string[];
}

export const NO_EXCLUSIONS: Exclusions = { outboundPorts: [], inboundPorts: [], outboundIpRanges: [] };

/** A malformed entry: `where` names the annotation or MeshConfig field, then the value and why. */
export class ListEntryError extends InjectionError {
  constructor(
    readonly where: string,
    readonly value: string,
    readonly why: string,
  ) {
    super(`${where}: ${JSON.stringify(value)} ${why}`);
  }
}

function entries(value: string | undefined): string[] {
  if (value === undefined) return [];
  // Empty entries ("80,,443", a trailing comma) carry no meaning; skip them.
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** One port in 1-65535, from annotation text or a MeshConfig number. Throws ListEntryError. */
export function parsePort(where: string, entry: string | number): number {
  const text = String(entry);
  // Digits only: Number() would accept "0x50", "1e3" and " 80 ".
  if (!/^[0-9]{1,5}$/.test(text)) throw new ListEntryError(where, text, 'is not a port number');
  const port = Number(text);
  if (port < 1 || port > 65535) throw new ListEntryError(where, text, 'is not a port in 1-65535');
  return port;
}

/** One IPv4 address or CIDR, normalised to `a.b.c.d/n`. Throws ListEntryError. */
export function parseIpv4Range(where: string, entry: string): string {
  const slash = entry.indexOf('/');
  const address = slash < 0 ? entry : entry.slice(0, slash);
  const prefix = slash < 0 ? '32' : entry.slice(slash + 1);
  if (isIPv6(address))
    throw new ListEntryError(
      where,
      entry,
      'is IPv6; only IPv4 ranges are supported (the rules are IPv4 iptables)',
    );
  if (!isIPv4(address)) throw new ListEntryError(where, entry, 'is not an IPv4 address or CIDR');
  if (!/^[0-9]{1,2}$/.test(prefix) || Number(prefix) > 32)
    throw new ListEntryError(where, entry, 'has a prefix length outside 0-32');
  return `${address}/${Number(prefix)}`;
}

export function parsePortList(annotation: string, value: string | undefined): number[] {
  return [...new Set(entries(value).map((e) => parsePort(`annotation ${annotation}`, e)))];
}

export function parseIpv4Ranges(annotation: string, value: string | undefined): string[] {
  return [...new Set(entries(value).map((e) => parseIpv4Range(`annotation ${annotation}`, e)))];
}

/** Reads and validates the pod's interception annotations; throws InjectionError on the first bad value. */
export function parseExclusions(annotations: Readonly<Record<string, string>> | undefined): Exclusions {
  const a = annotations ?? {};
  const out: Exclusions = {
    outboundPorts: parsePortList(ANNOTATION_OUTBOUND_PORT_EXCLUSIONS, a[ANNOTATION_OUTBOUND_PORT_EXCLUSIONS]),
    inboundPorts: parsePortList(ANNOTATION_INBOUND_PORT_EXCLUSIONS, a[ANNOTATION_INBOUND_PORT_EXCLUSIONS]),
    outboundIpRanges: parseIpv4Ranges(
      ANNOTATION_OUTBOUND_IP_RANGE_EXCLUSIONS,
      a[ANNOTATION_OUTBOUND_IP_RANGE_EXCLUSIONS],
    ),
  };
  const inclusions = a[ANNOTATION_OUTBOUND_IP_RANGE_INCLUSIONS];
  // Present, even empty, is the pod's own choice: it replaces the mesh's list.
  if (inclusions !== undefined)
    out.outboundIpRangeInclusions = parseIpv4Ranges(ANNOTATION_OUTBOUND_IP_RANGE_INCLUSIONS, inclusions);
  return out;
}

/** The MeshConfig `spec.traffic` lists, as the API stores them (OSM v1.2's field names). */
export interface MeshTrafficLists {
  outboundIPRangeExclusionList?: readonly string[];
  outboundIPRangeInclusionList?: readonly string[];
  outboundPortExclusionList?: readonly number[];
  inboundPortExclusionList?: readonly number[];
}

/**
 * The mesh's lists, validated. Throws ListEntryError naming the field
 * (`spec.traffic.<list>[i]`) and the value of the first bad entry.
 */
export function parseMeshExclusions(t: MeshTrafficLists | undefined): Exclusions {
  const ports = (field: string, list: readonly unknown[] | undefined): number[] => [
    ...new Set(
      (list ?? []).map((p, i) =>
        parsePort(`spec.traffic.${field}[${i}]`, typeof p === 'number' ? p : String(p)),
      ),
    ),
  ];
  const ranges = (field: string, list: readonly unknown[] | undefined): string[] => [
    ...new Set((list ?? []).map((r, i) => parseIpv4Range(`spec.traffic.${field}[${i}]`, String(r)))),
  ];
  const out: Exclusions = {
    outboundPorts: ports('outboundPortExclusionList', t?.outboundPortExclusionList),
    inboundPorts: ports('inboundPortExclusionList', t?.inboundPortExclusionList),
    outboundIpRanges: ranges('outboundIPRangeExclusionList', t?.outboundIPRangeExclusionList),
  };
  const inclusions = ranges('outboundIPRangeInclusionList', t?.outboundIPRangeInclusionList);
  if (inclusions.length > 0) out.outboundIpRangeInclusions = inclusions;
  return out;
}

const union = <T>(a: readonly T[], b: readonly T[]): T[] => [...new Set([...a, ...b])];

/**
 * What one pod gets: the union of the mesh's and the pod's exclusions (mesh
 * first), and the pod's inclusion list if it has the annotation, else the mesh's.
 */
export function mergeExclusions(mesh: Exclusions, pod: Exclusions): Exclusions {
  const out: Exclusions = {
    outboundPorts: union(mesh.outboundPorts, pod.outboundPorts),
    inboundPorts: union(mesh.inboundPorts, pod.inboundPorts),
    outboundIpRanges: union(mesh.outboundIpRanges, pod.outboundIpRanges),
  };
  const inclusions = pod.outboundIpRangeInclusions ?? mesh.outboundIpRangeInclusions;
  if (inclusions !== undefined && inclusions.length > 0) out.outboundIpRangeInclusions = [...inclusions];
  return out;
}
