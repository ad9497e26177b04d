// Checks beyond the schemas: rules that span fields, which an OpenAPI schema
// cannot express. Shared by both registries; a reference to an object that does
// not exist is never a problem here (the policy engine handles missing refs).
import { isIP } from 'node:net';

import { egressProblems } from '../catalog/egress.js';
import { regexProblem } from '../catalog/regex.js';
import { retryProblems } from '../catalog/retry.js';
import { upstreamTrafficSettingProblems } from '../catalog/upstream.js';
import { ListEntryError, parseIpv4Range, parsePort } from '../injector/exclusions.js';
import { parseDuration } from '../mesh/duration.js';
import type {
  AnyObject,
  HTTPRouteGroup,
  IngressBackend,
  MeshConfig,
  Service,
  TrafficSplit,
  TrafficTarget,
} from '../model/objects.js';
import { type ValidateOptions, type ValidationResult, validateObject } from '../schema/validate.js';

/** Reasons why a schema-valid object still cannot be used; empty when it can. */
export function semanticProblems(obj: AnyObject): string[] {
  switch (obj.kind) {
    case 'TrafficTarget':
      return trafficTargetProblems(obj);
    case 'TrafficSplit':
      return trafficSplitProblems(obj);
    case 'HTTPRouteGroup':
      return httpRouteGroupProblems(obj);
    case 'Service':
      return serviceProblems(obj);
    case 'MeshConfig':
      return meshConfigProblems(obj);
    case 'IngressBackend':
      return ingressBackendProblems(obj);
    case 'Egress':
      return egressProblems(obj);
    case 'Retry':
      return retryProblems(obj);
    case 'UpstreamTrafficSetting':
      return upstreamTrafficSettingProblems(obj);
    default:
      return [];
  }
}

/** Schema validation (pkg/schema) followed by `semanticProblems`. */
export function validateManifest(obj: unknown, options?: ValidateOptions): ValidationResult {
  const result = validateObject(obj, options);
  if (!result.ok) return result;
  const problems = semanticProblems(result.object);
  return problems.length === 0 ? result : { ok: false, reason: problems.join('; ') };
}

function trafficTargetProblems(tt: TrafficTarget): string[] {
  const destNs = tt.spec.destination.namespace;
  const ns = tt.metadata.namespace;
  // SMI access is enforced at the destination; OSM rejected a TrafficTarget
  // outside its destination's namespace, so that only that namespace's owners
  // can open it up.
  if (destNs !== undefined && ns !== undefined && destNs !== ns)
    return [
      `spec.destination.namespace ${JSON.stringify(destNs)} differs from the TrafficTarget's namespace ${JSON.stringify(ns)}; a TrafficTarget must live in its destination's namespace`,
    ];
  return [];
}

function trafficSplitProblems(ts: TrafficSplit): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  for (const b of ts.spec.backends) {
    if (seen.has(b.service)) out.push(`spec.backends: service ${JSON.stringify(b.service)} is listed twice`);
    seen.add(b.service);
  }
  // With every weight zero there is nowhere to send traffic to the apex.
  if (ts.spec.backends.length > 0 && ts.spec.backends.every((b) => b.weight === 0))
    out.push('spec.backends: all weights are 0');
  return out;
}

function httpRouteGroupProblems(g: HTTPRouteGroup): string[] {
  const out: string[] = [];
  const names = new Set<string>();
  (g.spec.matches ?? []).forEach((m, i) => {
    // TrafficTarget rules pick matches by name: a name must mean one match.
    if (names.has(m.name)) out.push(`spec.matches[${i}].name: ${JSON.stringify(m.name)} is used twice`);
    names.add(m.name);
    if (m.pathRegex !== undefined) {
      const p = regexProblem(m.pathRegex);
      if (p) out.push(`spec.matches[${i}].pathRegex: ${p}`);
    }
    for (const [header, value] of Object.entries(m.headers ?? {})) {
      const p = regexProblem(value);
      if (p) out.push(`spec.matches[${i}].headers[${JSON.stringify(header)}]: ${p}`);
    }
  });
  return out;
}

export { regexProblem };

function serviceProblems(svc: Service): string[] {
  const out: string[] = [];
  const ports = svc.spec.ports ?? [];
  const names = new Set<string>();
  const numbers = new Set<string>();
  ports.forEach((p, i) => {
    // The apiserver's rules, which local manifests never went through.
    if (ports.length > 1 && !p.name)
      out.push(`spec.ports[${i}].name: required when a Service has several ports`);
    if (p.name) {
      if (names.has(p.name)) out.push(`spec.ports[${i}].name: ${JSON.stringify(p.name)} is used twice`);
      names.add(p.name);
    }
    const key = `${p.port}/${p.protocol ?? 'TCP'}`;
    if (numbers.has(key)) out.push(`spec.ports[${i}]: port ${key} is used twice`);
    numbers.add(key);
  });
  return out;
}

function meshConfigProblems(mc: MeshConfig): string[] {
  const out: string[] = [];
  const check = (field: string, text: string | undefined, positive: boolean): void => {
    if (text === undefined) return;
    try {
      const ms = parseDuration(text);
      if (positive && ms <= 0) out.push(`${field}: must be longer than 0`);
    } catch (err) {
      out.push(`${field}: ${err instanceof Error ? err.message : String(err)}`);
    }
  };
  check('spec.certificate.validity', mc.spec.certificate?.validity, true);
  check('spec.certificate.bootstrapValidity', mc.spec.certificate?.bootstrapValidity, true);
  check('spec.xds.minPushInterval', mc.spec.xds?.minPushInterval, false);
  check(
    'spec.certificate.ingressGateway.validityDuration',
    mc.spec.certificate?.ingressGateway?.validityDuration,
    true,
  );
  out.push(...trafficListProblems(mc.spec.traffic));
  // Tracing needs somewhere to send spans (the CRD cannot make a field required only when another is true).
  const tracing = mc.spec.observability?.tracing;
  if (tracing?.enable === true && tracing.address === undefined)
    out.push('spec.observability.tracing.address: required when tracing is enabled');
  return out;
}

/** Every bad entry of the interception lists, by field and value (the injector's own parsers). */
function trafficListProblems(t: MeshConfig['spec']['traffic']): string[] {
  const out: string[] = [];
  const check = (parse: () => unknown): void => {
    try {
      parse();
    } catch (err) {
      if (!(err instanceof ListEntryError)) throw err;
      out.push(err.message);
    }
  };
  const where = (field: string, i: number) => `spec.traffic.${field}[${i}]`;
  for (const field of ['outboundIPRangeExclusionList', 'outboundIPRangeInclusionList'] as const)
    (t?.[field] ?? []).forEach((r, i) => {
      check(() => parseIpv4Range(where(field, i), r));
    });
  for (const field of ['outboundPortExclusionList', 'inboundPortExclusionList'] as const)
    (t?.[field] ?? []).forEach((p, i) => {
      check(() => parsePort(where(field, i), p));
    });
  return out;
}

/** `a.b.c.d/n` or an IPv6 prefix; the address alone is a host route. */
export function cidrProblem(text: string): string | undefined {
  const [ip = '', len, extra] = text.split('/');
  const family = isIP(ip);
  if (family === 0 || extra !== undefined) return `${JSON.stringify(text)} is not an IP address or CIDR`;
  if (len === undefined) return undefined;
  const max = family === 4 ? 32 : 128;
  if (!/^\d+$/.test(len) || Number(len) > max)
    return `${JSON.stringify(text)}: prefix length must be 0-${max}`;
  return undefined;
}

/**
 * skein's IngressBackend rules (OSM's webhook had the mTLS check inverted):
 * - an AuthenticatedPrincipal is the SAN of a validated client certificate,
 *   so it needs every backend to be `https` without skipClientCertValidation;
 * - `tls` settings mean nothing on an `http` backend;
 * - the ingress filter chain is selected by source address (Envoy picks
 *   chains by destination port, server name, transport, then source IP —
 *   FilterChainMatch, listener_components.proto), so a Service or IPRange
 *   source is required: without one the chain could not be told from the
 *   mesh's own chain on that port;
 * - `matches` (accepted and ignored by OSM, enforced here): a group named
 *   twice, a match name listed twice, or an empty name list (which would
 *   admit nothing, unlike an omitted one, which admits every match) is a
 *   mistake, never a policy.
 */
function ingressBackendProblems(ib: IngressBackend): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  ib.spec.backends.forEach((b, i) => {
    const key = `${b.name}|${b.port.number}`;
    if (seen.has(key)) out.push(`spec.backends[${i}]: ${b.name} port ${b.port.number} is listed twice`);
    seen.add(key);
    if (b.port.protocol === 'http' && b.tls !== undefined)
      out.push(`spec.backends[${i}].tls: only meaningful with protocol https`);
  });
  const principals = ib.spec.sources.filter((s) => s.kind === 'AuthenticatedPrincipal');
  if (principals.length > 0) {
    ib.spec.backends.forEach((b, i) => {
      if (b.port.protocol !== 'https')
        out.push(
          `spec.backends[${i}]: AuthenticatedPrincipal sources need protocol https (plaintext carries no client certificate)`,
        );
      else if (b.tls?.skipClientCertValidation === true)
        out.push(
          `spec.backends[${i}]: AuthenticatedPrincipal sources need client certificate validation (skipClientCertValidation: true)`,
        );
    });
  }
  ib.spec.sources.forEach((s, i) => {
    if (s.kind !== 'IPRange') return;
    const p = cidrProblem(s.name);
    if (p) out.push(`spec.sources[${i}].name: ${p}`);
  });
  const groups = new Set<string>();
  (ib.spec.matches ?? []).forEach((m, i) => {
    if (groups.has(m.name)) out.push(`spec.matches[${i}]: HTTPRouteGroup ${m.name} is named twice`);
    groups.add(m.name);
    if (m.matches === undefined) return;
    if (m.matches.length === 0)
      out.push(
        `spec.matches[${i}].matches: an empty list admits nothing; omit it to admit every match of ${m.name}`,
      );
    const names = new Set<string>();
    m.matches.forEach((n, j) => {
      if (names.has(n)) out.push(`spec.matches[${i}].matches[${j}]: ${JSON.stringify(n)} is listed twice`);
      names.add(n);
    });
  });
  if (!ib.spec.sources.some((s) => s.kind === 'Service' || s.kind === 'IPRange'))
    out.push(
      'spec.sources: at least one Service or IPRange source is required (ingress is matched by source IP)',
    );
  return out;
}
