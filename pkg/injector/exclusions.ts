import { isIPv4, isIPv6 } from 'node:net';
import {
  ANNOTATION_INBOUND_PORT_EXCLUSIONS,
  ANNOTATION_OUTBOUND_IP_RANGE_EXCLUSIONS,
  ANNOTATION_OUTBOUND_PORT_EXCLUSIONS,
} from './constants.js';
import { InjectionError } from './errors.js';

/** Per-pod traffic the proxy must not intercept, from the pod's annotations. */
export interface Exclusions {
  outboundPorts: number[];
  inboundPorts: number[];
  /** IPv4 CIDRs in `a.b.c.d/n` form. */
  outboundIpRanges: string[];
}

function entries(value: string | undefined): string[] {
  if (value === undefined) return [];
  // Empty entries ("80,,443", a trailing comma) carry no meaning; skip them.
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function invalid(annotation: string, value: string, why: string): InjectionError {
  return new InjectionError(`annotation ${annotation}: ${JSON.stringify(value)} ${why}`);
}

export function parsePortList(annotation: string, value: string | undefined): number[] {
  const ports = new Set<number>();
  for (const e of entries(value)) {
    // Digits only: Number() would accept "0x50", "1e3" and " 80 ".
    if (!/^[0-9]{1,5}$/.test(e)) throw invalid(annotation, e, 'is not a port number');
    const port = Number(e);
    if (port < 1 || port > 65535) throw invalid(annotation, e, 'is not a port in 1-65535');
    ports.add(port);
  }
  return [...ports];
}

export function parseIpv4Ranges(annotation: string, value: string | undefined): string[] {
  const ranges = new Set<string>();
  for (const e of entries(value)) {
    const slash = e.indexOf('/');
    const address = slash < 0 ? e : e.slice(0, slash);
    const prefix = slash < 0 ? '32' : e.slice(slash + 1);
    if (isIPv6(address)) {
      throw invalid(annotation, e, 'is IPv6; only IPv4 ranges are supported (the rules are IPv4 iptables)');
    }
    if (!isIPv4(address)) throw invalid(annotation, e, 'is not an IPv4 address or CIDR');
    if (!/^[0-9]{1,2}$/.test(prefix) || Number(prefix) > 32) {
      throw invalid(annotation, e, 'has a prefix length outside 0-32');
    }
    ranges.add(`${address}/${Number(prefix)}`);
  }
  return [...ranges];
}

/** Reads and validates the three exclusion annotations; throws InjectionError on the first bad value. */
export function parseExclusions(annotations: Readonly<Record<string, string>> | undefined): Exclusions {
  const a = annotations ?? {};
  return {
    outboundPorts: parsePortList(ANNOTATION_OUTBOUND_PORT_EXCLUSIONS, a[ANNOTATION_OUTBOUND_PORT_EXCLUSIONS]),
    inboundPorts: parsePortList(ANNOTATION_INBOUND_PORT_EXCLUSIONS, a[ANNOTATION_INBOUND_PORT_EXCLUSIONS]),
    outboundIpRanges: parseIpv4Ranges(
      ANNOTATION_OUTBOUND_IP_RANGE_EXCLUSIONS,
      a[ANNOTATION_OUTBOUND_IP_RANGE_EXCLUSIONS],
    ),
  };
}

export const NO_EXCLUSIONS: Exclusions = { outboundPorts: [], inboundPorts: [], outboundIpRanges: [] };
