// SMI policy as Envoy RBAC (envoy.config.rbac.v3.RBAC), enforced at the
// destination: SMI mode is deny-by-default (SMI traffic-access-control spec: traffic is denied unless a TrafficTarget allows it).
import { EVERY_SOURCE, type InboundRule } from '../../catalog/types.js';
import { spiffeId } from '../../mesh/identity.js';
import type { HTTPMatch } from '../../model/objects.js';
import type {
  ConfigRbac$RBAC,
  HttpFilter,
  Listener$Filter,
  Permission,
  Policy,
  Principal,
  TypedAny,
} from '../api/envoy.js';
import { RbacAction } from '../common/enums.js';
import { deepFreeze } from '../common/freeze.js';
import { AnyType, ExtName, typed } from '../common/xds.js';

/**
 * SMI pathRegex is anchored at the start only, while RBAC's safe_regex must
 * match the whole path: strip a redundant `^` and allow any suffix.
 */
export function pathRegexToSafeRegex(pathRegex: string): string {
  const body = pathRegex.startsWith('^') ? pathRegex.slice(1) : pathRegex;
  return `(?:${body}).*`;
}

/**
 * A header regex must match the whole value. Envoy's RE2 full match treats
 * `clerk|manager` as one alternation, but grpc-js-xds wraps it as
 * `^clerk|manager$` — which lets `clerk-trainee` through. Grouping makes both
 * read it the same way.
 */
export function headerRegexToSafeRegex(regex: string): string {
  return `(?:${regex})`;
}

/** Envoy RBAC's Principal that every peer matches (its proto field `any`, not a TypeScript any). */
export const EVERY_PEER: Principal = Object.freeze({ any: true }); // proto field, not a TypeScript any
/** Envoy RBAC's Permission that every request matches (its proto field `any`, not a TypeScript any). */
export const EVERY_REQUEST: Permission = Object.freeze({ any: true }); // proto field, not a TypeScript any

function principals(rule: InboundRule, trustDomain: string): Principal[] {
  // EVERY_SOURCE (permissive): the DownstreamTlsContext already demands a client
  // certificate from the mesh CA, so any authenticated peer is a mesh member.
  if (rule.sources === EVERY_SOURCE) return [EVERY_PEER];
  // Exact SPIFFE ids, never regexes: one identity cannot match another's id.
  return rule.sources.map((id) => ({
    authenticated: { principal_name: { exact: spiffeId(id, trustDomain) } },
  }));
}

/** One HTTPMatch: its conditions ANDed (SMI HTTPRouteGroup semantics). */
export function httpMatchPermission(match: HTTPMatch): Permission {
  const parts: Permission[] = [];
  if (match.pathRegex !== undefined && match.pathRegex !== '' && match.pathRegex !== '.*') {
    parts.push({ url_path: { path: { safe_regex: { regex: pathRegexToSafeRegex(match.pathRegex) } } } });
  }
  const methods = match.methods ?? [];
  if (methods.length > 0 && !methods.includes('*')) {
    const byMethod: Permission[] = methods.map((m) => ({
      header: { name: ':method', string_match: { exact: m.toUpperCase() } },
    }));
    parts.push(byMethod.length === 1 && byMethod[0] ? byMethod[0] : { or_rules: { rules: byMethod } });
  }
  const headers = match.headers ?? {};
  for (const name of Object.keys(headers).sort()) {
    // Envoy compares header names lower-cased (HTTP/2 requires lower case).
    parts.push({
      header: {
        name: name.toLowerCase(),
        string_match: { safe_regex: { regex: headerRegexToSafeRegex(headers[name] ?? '') } },
      },
    });
  }
  // An HTTP match with no parts matches every request.
  if (parts.length === 0) return EVERY_REQUEST;
  if (parts.length === 1 && parts[0]) return parts[0];
  return { and_rules: { rules: parts } };
}

/**
 * The `rules` of an RBAC filter: one ALLOW policy per inbound rule (matches
 * ORed within it). No rules gives ALLOW with no policies, which denies all.
 * For TCP (`http: false`) a rule grants the connection, whatever its matches.
 */
export function rbacRules(
  rules: readonly InboundRule[],
  trustDomain: string,
  http: boolean,
): ConfigRbac$RBAC {
  const policies: { [name: string]: Policy } = {};
  rules.forEach((rule, i) => {
    const who = principals(rule, trustDomain);
    // Envoy requires at least one principal and permission per policy; a rule
    // with no sources allows no one, so it gets no policy.
    if (who.length === 0) return;
    const what: Permission[] =
      !http || rule.http === 'all' ? [EVERY_REQUEST] : rule.http.map(httpMatchPermission);
    if (what.length === 0) return;
    const name = rule.origin in policies ? `${rule.origin}#${i}` : rule.origin;
    policies[name] = { permissions: what, principals: who };
  });
  return { action: RbacAction.ALLOW, policies };
}

/** `envoy.filters.http.rbac` for an HTTP connection manager, the policy in the filter itself (proxyless). */
export function httpRbacFilter(rules: readonly InboundRule[], trustDomain: string): HttpFilter {
  return {
    name: ExtName.HttpRbac,
    typed_config: typed(AnyType.HttpRbac, { rules: rbacRules(rules, trustDomain, true) }),
  };
}

/**
 * An RBAC HTTP filter that holds no policy of its own (ALLOW with no policies:
 * it denies all), for an HCM whose route config carries the policy on its
 * virtual hosts (rbacPerRoute). The route config comes over RDS, whose updates
 * the HCM applies to connections already open, where a changed filter chain
 * keeps serving its open connections with the old policy until they are
 * drained (Envoy's listener drain, up to --drain-time-s). So a policy added or
 * removed holds for the next request on every connection, and a request no
 * virtual host overrides for (no route, or a route config without it) is denied.
 * `rulesStatPrefix`: Envoy's `rules_stat_prefix` (stats `<hcm>.rbac.<prefix>.*`).
 */
export function denyAllRbacFilter(rulesStatPrefix?: string): HttpFilter {
  return deepFreeze({
    name: ExtName.HttpRbac,
    typed_config: typed(AnyType.HttpRbac, {
      rules: { action: RbacAction.ALLOW, policies: {} },
      ...(rulesStatPrefix === undefined ? {} : { rules_stat_prefix: rulesStatPrefix }),
    }),
  });
}

/** The RBAC filter of a sidecar's inbound HTTP connection manager; the SMI policy is on its route config. */
export const INBOUND_HTTP_RBAC_FILTER: HttpFilter = denyAllRbacFilter();

/**
 * `typed_per_filter_config` of a virtual host (or route) for the HCM's RBAC
 * filter: `rules` replace the filter's own config for the routes under it (the
 * most specific per-filter config wins, so routes that carry only a rate limit
 * fall back to the virtual host's).
 */
export function rbacPerRoute(
  rules: ConfigRbac$RBAC,
  rulesStatPrefix?: string,
): Record<string, TypedAny<typeof AnyType.HttpRbacPerRoute>> {
  return {
    [ExtName.HttpRbac]: typed(AnyType.HttpRbacPerRoute, {
      rbac: { rules, ...(rulesStatPrefix === undefined ? {} : { rules_stat_prefix: rulesStatPrefix }) },
    }),
  };
}

/** An inbound virtual host's RBAC: its service port's SMI policy (`rules` of every service port behind it). */
export function inboundRbacPerRoute(
  rules: readonly InboundRule[],
  trustDomain: string,
): Record<string, TypedAny<typeof AnyType.HttpRbacPerRoute>> {
  return rbacPerRoute(rbacRules(rules, trustDomain, true));
}

/** `envoy.filters.network.rbac` for an inbound TCP filter chain. */
export function networkRbacFilter(
  rules: readonly InboundRule[],
  trustDomain: string,
  statPrefix: string,
): Listener$Filter {
  return {
    name: ExtName.NetworkRbac,
    typed_config: typed(AnyType.NetworkRbac, {
      rules: rbacRules(rules, trustDomain, false),
      stat_prefix: statPrefix,
    }),
  };
}
