// Ingress policy as Envoy RBAC (envoy.config.rbac.v3): one ALLOW policy per
// IngressBackend, its sources as principals and the Ingress routes and
// HTTPRouteGroup matches as permissions, ANDed (catalog/ingress.ts).
import type { IngressPolicy, IngressPort, IngressRoute } from '../../catalog/ingress.js';
import type { CidrRange, ConfigRbac$RBAC, HttpFilter, Permission, Policy, Principal } from '../api/envoy.js';
import { RbacAction } from '../common/enums.js';
import { AnyType, ExtName, typed } from '../common/xds.js';
import { EVERY_REQUEST, httpMatchPermission } from './rbac.js';

function escapeRe2(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&');
}

/** `cidr` as an Envoy CidrRange. */
export function cidrRange(cidr: string): CidrRange {
  const [address = '', len] = cidr.split('/');
  const max = address.includes(':') ? 128 : 32;
  return { address_prefix: address, prefix_len: { value: len === undefined ? max : Number(len) } };
}

/**
 * The `:authority` a host rule admits, with any port. Kubernetes: a host is
 * matched exactly, `*.example.com` matches one DNS label (`a.example.com`,
 * not `example.com` nor `a.b.example.com`); hosts are case-insensitive.
 */
export function hostRegex(host: string): string {
  const name = host.startsWith('*.') ? `[^.:]+\\.${escapeRe2(host.slice(2))}` : escapeRe2(host);
  return `(?i)${name}(:[0-9]+)?`;
}

function anyOf(rules: Permission[]): Permission {
  const [only] = rules;
  return rules.length === 1 && only ? only : { or_rules: { rules } };
}
function allOf(rules: Permission[]): Permission {
  const [only] = rules;
  // No rules, no limit.
  if (rules.length === 0) return EVERY_REQUEST;
  return rules.length === 1 && only ? only : { and_rules: { rules } };
}

/**
 * One Ingress route. url_path ignores the query string. Prefix is
 * element-wise (Kubernetes Ingress pathType Prefix): the path itself or the
 * path followed by `/`.
 */
export function ingressRoutePermission(route: IngressRoute): Permission {
  const parts: Permission[] = [];
  if (route.host !== undefined)
    parts.push({
      header: { name: ':authority', string_match: { safe_regex: { regex: hostRegex(route.host) } } },
    });
  const p = route.path;
  if (p?.type === 'Exact') parts.push({ url_path: { path: { exact: p.value } } });
  else if (p?.type === 'Prefix')
    parts.push(
      anyOf([{ url_path: { path: { exact: p.value } } }, { url_path: { path: { prefix: `${p.value}/` } } }]),
    );
  return allOf(parts);
}

function policyPrincipal(policy: IngressPolicy): Principal {
  // direct_remote_ip: the connection's peer, never a forwarded-for header.
  const ips: Principal[] = policy.cidrs.map((c) => ({ direct_remote_ip: cidrRange(c) }));
  const ids: Principal[] = [ips.length === 1 && ips[0] ? ips[0] : { or_ids: { ids: ips } }];
  if (policy.principals.length > 0) {
    // Exact names as given: a principal_name is matched against the URI SAN,
    // then the DNS SAN (rbac.proto). Nothing is appended (OSM appended the
    // trust domain, and users saw rbac_access_denied_matched_policy[none]).
    const who: Principal[] = policy.principals.map((name) => ({
      authenticated: { principal_name: { exact: name } },
    }));
    ids.push(who.length === 1 && who[0] ? who[0] : { or_ids: { ids: who } });
  }
  const [only] = ids;
  return ids.length === 1 && only ? only : { and_ids: { ids } };
}

function policyPermission(port: IngressPort, policy: IngressPolicy): Permission {
  const parts: Permission[] = [];
  if (port.routes !== 'all') parts.push(anyOf(port.routes.map(ingressRoutePermission)));
  if (policy.matches !== 'all') {
    // spec.matches naming no existing match admits nothing: a never-matching rule.
    parts.push(
      policy.matches.length === 0
        ? { not_rule: EVERY_REQUEST }
        : anyOf(policy.matches.map(httpMatchPermission)),
    );
  }
  if (policy.sniHosts.length > 0)
    parts.push(anyOf(policy.sniHosts.map((h) => ({ requested_server_name: { exact: h } }))));
  return allOf(parts);
}

/** The `rules` of the ingress chain's RBAC filter; the chain's source ranges already narrowed who connects. */
export function ingressRbacRules(port: IngressPort): ConfigRbac$RBAC {
  const policies: { [name: string]: Policy } = {};
  for (const policy of port.policies) {
    if (policy.cidrs.length === 0) continue;
    policies[policy.origin] = {
      principals: [policyPrincipal(policy)],
      permissions: [policyPermission(port, policy)],
    };
  }
  return { action: RbacAction.ALLOW, policies };
}

export function ingressRbacFilter(port: IngressPort): HttpFilter {
  return { name: ExtName.HttpRbac, typed_config: typed(AnyType.HttpRbac, { rules: ingressRbacRules(port) }) };
}
