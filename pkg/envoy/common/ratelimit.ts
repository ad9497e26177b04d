// Local rate limits (catalog/ratelimit.ts) as Envoy filters on the
// destination's own sidecar, OSM v1.2's form: a network local_ratelimit per
// inbound filter chain, and an HTTP local_ratelimit whose token buckets live
// on the inbound virtual host and routes (typed_per_filter_config).
import {
  ENVOY_STATUS_CODES,
  type HttpLocalLimit,
  type LocalRateLimits,
  type TokenBucketSetting,
} from '../../catalog/ratelimit.js';
import type {
  HttpFilter,
  HttpLocalRatelimit$LocalRateLimit,
  Listener$Filter,
  Route,
  RouteAction,
  RuntimeFractionalPercent,
  StatusCode,
  TokenBucket,
  TypedAny,
  VirtualHost,
} from '../api/envoy.js';
import { pathRegexToSafeRegex } from '../rbac/rbac.js';
import { Denominator, HeaderAppendAction } from './enums.js';
import { AnyType, ExtName, typed } from './xds.js';

export function tokenBucket(b: TokenBucketSetting): TokenBucket {
  return {
    max_tokens: b.maxTokens,
    tokens_per_fill: { value: b.tokensPerFill },
    fill_interval: { seconds: b.fillSeconds },
  };
}

/**
 * Closes new connections beyond the bucket (counted in
 * `local_rate_limit.<statPrefix>.rate_limited`). Placed before tcp_proxy or
 * the HCM: it acts when the connection is accepted, before any byte is proxied.
 */
export function networkLocalRateLimitFilter(statPrefix: string, b: TokenBucketSetting): Listener$Filter {
  return {
    name: ExtName.NetworkLocalRateLimit,
    typed_config: typed(AnyType.NetworkLocalRateLimit, {
      stat_prefix: statPrefix,
      token_bucket: tokenBucket(b),
    }),
  };
}

/**
 * The HCM's local_ratelimit filter with no bucket of its own: filter_enabled
 * unset is 0 %, so it passes everything except where a virtual host or route
 * carries a config (the most specific one replaces it, Envoy's per-route rule).
 */
export function httpLocalRateLimitFilter(statPrefix: string): HttpFilter {
  return {
    name: ExtName.HttpLocalRateLimit,
    typed_config: typed(AnyType.HttpLocalRateLimit, { stat_prefix: statPrefix }),
  };
}

// The catalog refuses codes outside envoy.type.v3.StatusCode (HttpStatus.code is defined_only).
const isEnvoyStatus = (code: number): code is Extract<StatusCode, number> => ENVOY_STATUS_CODES.has(code);

function percent100(runtimeKey: string): RuntimeFractionalPercent {
  return { default_value: { numerator: 100, denominator: Denominator.HUNDRED }, runtime_key: runtimeKey };
}

/** A virtual host's or route's bucket: every request checked and enforced (100 %). */
export function httpLocalRateLimit(
  statPrefix: string,
  l: HttpLocalLimit,
): TypedAny<typeof AnyType.HttpLocalRateLimit> {
  const config: HttpLocalRatelimit$LocalRateLimit = {
    stat_prefix: statPrefix,
    token_bucket: tokenBucket(l.bucket),
    filter_enabled: percent100('local_rate_limit_enabled'),
    filter_enforced: percent100('local_rate_limit_enforced'),
    // Envoy answers 429 when `status` is unset; always explicit so the config says what callers see.
    status: { code: isEnvoyStatus(l.statusCode) ? l.statusCode : 429 },
  };
  // response_headers_to_add: only on limited responses (local_rate_limit.proto).
  if (l.headers.length > 0)
    config.response_headers_to_add = l.headers.map((h) => ({
      header: { key: h.name, value: h.value },
      append_action: HeaderAppendAction.OVERWRITE_IF_EXISTS_OR_ADD,
    }));
  return typed(AnyType.HttpLocalRateLimit, config);
}

/** `typed_per_filter_config` of a virtual host or route with this limit. */
export function perFilterRateLimit(
  statPrefix: string,
  l: HttpLocalLimit,
): Record<string, TypedAny<typeof AnyType.HttpLocalRateLimit>> {
  return { [ExtName.HttpLocalRateLimit]: httpLocalRateLimit(statPrefix, l) };
}

/** Whether a service's inbound HCM needs the HTTP filter and a route config of its own. */
export function hasHttpLimits(l: LocalRateLimits | undefined): l is LocalRateLimits {
  return l?.http !== undefined || l?.routes !== undefined;
}

/**
 * A virtual host to the local app with the service's HTTP limits: one route
 * per httpRoutes entry in front of the catch-all, its path read as an
 * HTTPRouteGroup pathRegex is (the same safe_regex as the RBAC permission),
 * each with a bucket that replaces the virtual host's for its requests.
 * Stat prefixes: `<statPrefix>` (virtual host), `<statPrefix>_route<i>`.
 */
export function limitedVirtualHost(
  name: string,
  statPrefix: string,
  toApp: () => RouteAction,
  limits: LocalRateLimits | undefined,
): VirtualHost {
  const routes: Route[] = (limits?.routes ?? []).map((r, i) => ({
    match: { safe_regex: { regex: pathRegexToSafeRegex(r.path) } },
    route: toApp(),
    typed_per_filter_config: perFilterRateLimit(`${statPrefix}_route${i}`, r.limit),
  }));
  routes.push({ match: { prefix: '/' }, route: toApp() });
  const vhost: VirtualHost = { name, domains: ['*'], routes };
  if (limits?.http) vhost.typed_per_filter_config = perFilterRateLimit(statPrefix, limits.http);
  return vhost;
}
