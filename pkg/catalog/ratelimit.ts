// Local rate limits of an UpstreamTrafficSetting (OSM v1.2's `rateLimit.local`
// and `httpRoutes`): checked and compiled to token buckets here, so the
// generators (envoy/common/ratelimit.ts) only turn numbers into Envoy fields.
import type {
  HTTPLocalRateLimitSpec,
  HTTPMatch,
  RateLimitUnit,
  UpstreamTrafficSettingSpec,
} from '../model/objects.js';
import { httpMatchAdmits } from './http-match.js';
import { regexProblem } from './regex.js';
import type { InboundRule, MeshService } from './types.js';

/** A token bucket: `maxTokens` at most, `tokensPerFill` added every `fillSeconds`. */
export interface TokenBucketSetting {
  maxTokens: number;
  tokensPerFill: number;
  fillSeconds: number;
}

export interface HttpLocalLimit {
  bucket: TokenBucketSetting;
  statusCode: number;
  headers: readonly { name: string; value: string }[];
}

export interface RouteLocalLimit {
  /** As written: read like an HTTPRouteGroup pathRegex (anchored at the start). */
  path: string;
  limit: HttpLocalLimit;
}

/** What one service's sidecars enforce on their inbound side. */
export interface LocalRateLimits {
  tcp?: TokenBucketSetting;
  http?: HttpLocalLimit;
  routes?: readonly RouteLocalLimit[];
}

const UNIT_SECONDS: Readonly<Record<RateLimitUnit, number>> = { second: 1, minute: 60, hour: 3600 };
const UINT32_MAX = 4294967295;
/** OSM's and Envoy's local_ratelimit default (`status` unset). */
const DEFAULT_STATUS = 429;

// The 4xx/5xx codes of envoy.type.v3.StatusCode: HttpStatus.code is
// `enum.defined_only` (http_status.proto), so any other code is NACKed.
export const ENVOY_STATUS_CODES: ReadonlySet<number> = new Set([
  400, 401, 402, 403, 404, 405, 406, 407, 408, 409, 410, 411, 412, 413, 414, 415, 416, 417, 421, 422, 423,
  424, 426, 428, 429, 431, 500, 501, 502, 503, 504, 505, 506, 507, 508, 510, 511,
]);
// RFC 7230 token (HTTP_HEADER_NAME, strict); a ':' pseudo-header cannot be added.
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// RFC 7230 field value (HTTP_HEADER_VALUE, strict): no control characters but tab.
const headerValueOk = (v: string) =>
  [...v].every((c) => {
    const code = c.charCodeAt(0);
    return code === 9 || (code >= 32 && code !== 127);
  });
// Envoy's HeaderValueOption list for response_headers_to_add: PGV max_items 10.
const MAX_HEADERS = 10;

function bucketProblems(field: string, rate: number, burst: number | undefined): string[] {
  const out: string[] = [];
  // TokenBucket.max_tokens and tokens_per_fill are uint32, both > 0 (token_bucket.proto).
  if (!Number.isInteger(rate) || rate < 1 || rate > UINT32_MAX)
    out.push(`${field}: must be a whole number from 1 to ${UINT32_MAX}`);
  else if (burst !== undefined && (!Number.isInteger(burst) || burst < 0 || rate + burst > UINT32_MAX))
    out.push(`${field} + burst: the bucket (rate + burst) must be a whole number up to ${UINT32_MAX}`);
  return out;
}

function httpProblems(field: string, h: HTTPLocalRateLimitSpec): string[] {
  const out = bucketProblems(`${field}.requests`, h.requests, h.burst);
  if (!(h.unit in UNIT_SECONDS)) out.push(`${field}.unit: must be second, minute or hour`);
  const code = h.responseStatusCode;
  if (code !== undefined && !ENVOY_STATUS_CODES.has(code))
    out.push(
      `${field}.responseStatusCode: ${code} is not a 4xx/5xx status Envoy knows (envoy.type.v3.StatusCode)`,
    );
  const headers = h.responseHeadersToAdd ?? [];
  if (headers.length > MAX_HEADERS)
    out.push(`${field}.responseHeadersToAdd: at most ${MAX_HEADERS} headers (Envoy's limit)`);
  headers.forEach((hv, i) => {
    if (!HEADER_NAME.test(hv.name))
      out.push(
        `${field}.responseHeadersToAdd[${i}].name: ${JSON.stringify(hv.name)} is not an HTTP header name`,
      );
    if (!headerValueOk(hv.value))
      out.push(`${field}.responseHeadersToAdd[${i}].value: control characters are not allowed`);
  });
  return out;
}

/** Reasons the rate-limit fields cannot be used (beyond the CRD schema). */
export function rateLimitProblems(spec: UpstreamTrafficSettingSpec): string[] {
  const out: string[] = [];
  const tcp = spec.rateLimit?.local?.tcp;
  if (tcp) {
    out.push(...bucketProblems('spec.rateLimit.local.tcp.connections', tcp.connections, tcp.burst));
    if (!(tcp.unit in UNIT_SECONDS))
      out.push('spec.rateLimit.local.tcp.unit: must be second, minute or hour');
  }
  const http = spec.rateLimit?.local?.http;
  if (http) out.push(...httpProblems('spec.rateLimit.local.http', http));
  const seen = new Set<string>();
  (spec.httpRoutes ?? []).forEach((r, i) => {
    const field = `spec.httpRoutes[${i}]`;
    if (r.path === '') out.push(`${field}.path: must not be empty`);
    else {
      const p = regexProblem(r.path);
      if (p) out.push(`${field}.path: ${p}`);
    }
    if (seen.has(r.path)) out.push(`${field}.path: ${JSON.stringify(r.path)} is listed twice`);
    seen.add(r.path);
    const local = r.rateLimit?.local;
    if (!local) out.push(`${field}.rateLimit.local: required (a route entry without a limit does nothing)`);
    else out.push(...httpProblems(`${field}.rateLimit.local`, local));
  });
  return out;
}

function bucket(rate: number, unit: RateLimitUnit, burst: number | undefined): TokenBucketSetting {
  // OSM's form: the bucket holds rate + burst and refills rate per unit.
  return { maxTokens: rate + (burst ?? 0), tokensPerFill: rate, fillSeconds: UNIT_SECONDS[unit] };
}

function httpLimit(h: HTTPLocalRateLimitSpec): HttpLocalLimit {
  return {
    bucket: bucket(h.requests, h.unit, h.burst),
    statusCode: h.responseStatusCode ?? DEFAULT_STATUS,
    headers: (h.responseHeadersToAdd ?? []).map((hv) => ({ name: hv.name, value: hv.value })),
  };
}

/** The compiled limits of a valid spec, or undefined when it sets none. */
export function compileLocalRateLimits(spec: UpstreamTrafficSettingSpec): LocalRateLimits | undefined {
  const out: LocalRateLimits = {};
  const tcp = spec.rateLimit?.local?.tcp;
  if (tcp) out.tcp = bucket(tcp.connections, tcp.unit, tcp.burst);
  const http = spec.rateLimit?.local?.http;
  if (http) out.http = httpLimit(http);
  const routes: RouteLocalLimit[] = [];
  for (const r of spec.httpRoutes ?? []) {
    const local = r.rateLimit?.local;
    if (local) routes.push({ path: r.path, limit: httpLimit(local) });
  }
  if (routes.length > 0) out.routes = routes;
  return Object.keys(out).length > 0 ? out : undefined;
}

const anyPath = (regex: string | undefined) => regex === undefined || regex === '' || regex === '.*';
const unanchored = (regex: string) => (regex.startsWith('^') ? regex.slice(1) : regex);

/**
 * Whether an httpRoutes path falls within an HTTPRouteGroup match's route.
 * OSM compared the two strings, so `/books` never found the route of
 * `/books/.*`. Here the match's pathRegex is applied to the path as Envoy
 * applies it to a request (SMI: anchored at the start, catalog/http-match.ts),
 * and a path written exactly as the pathRegex (a leading `^` aside) still
 * selects it, so OSM manifests keep working.
 */
export function routeSelects(match: HTTPMatch, path: string): boolean {
  if (anyPath(match.pathRegex)) return true;
  if (anyPath(path)) return false;
  const regex = match.pathRegex ?? '';
  if (unanchored(regex) === unanchored(path)) return true;
  return httpMatchAdmits({ name: match.name, pathRegex: regex }, { path, method: 'GET', headers: {} });
}

/**
 * httpRoutes entries of one service that select no route it serves: on every
 * HTTP or gRPC port, no inbound rule allows all requests (permissive mode, a
 * TCPRoute) and no allowed HTTPRouteGroup match selects the path. Such an
 * entry is reported; it stays in the route config and limits as soon as a
 * rule allows its path.
 */
export function unmatchedRoutes(
  service: MeshService,
  routes: readonly RouteLocalLimit[],
  inboundRules: (serviceKey: string, port: number) => readonly InboundRule[],
): string[] {
  const http = service.ports.filter((p) => p.protocol === 'http' || p.protocol === 'grpc');
  if (http.length === 0)
    return routes.length > 0 ? [`spec.httpRoutes: ${service.key} has no HTTP or gRPC port`] : [];
  const out: string[] = [];
  const paths = new Set<string>();
  routes.forEach((r, i) => {
    let selected = false;
    for (const port of http)
      for (const rule of inboundRules(service.key, port.port)) {
        if (rule.http === 'all') selected = true;
        else
          for (const m of rule.http) {
            if (routeSelects(m, r.path)) selected = true;
            paths.add(m.pathRegex ?? '.*');
          }
      }
    if (!selected)
      out.push(
        `spec.httpRoutes[${i}].path ${JSON.stringify(r.path)} matches no route of ${service.key}` +
          ` (HTTPRouteGroup paths allowed there: ${paths.size > 0 ? [...paths].sort().join(', ') : 'none'}); its limit waits for one`,
      );
  });
  return out;
}
