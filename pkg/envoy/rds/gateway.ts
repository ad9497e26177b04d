// RDS for skein's ingress gateway: one virtual host per Ingress host, routes
// in Kubernetes precedence (catalog/gateway.ts), each to the backend's mesh
// cluster(s) as the gateway's outbound plan resolves them (TrafficSplits
// included). A backend the gateway's identity may not call (SMI mode, no
// TrafficTarget) gets a 403 that says so instead of a route: the backend
// would refuse the gateway anyway, and this way no cluster is made for it.
// The gateway is a mesh caller with its own identity, so a Retry whose source
// is its ServiceAccount applies to its routes as to a sidecar's.
import type { GatewayHost, GatewayRoute } from '../../catalog/gateway.js';
import type { UpstreamSetting } from '../../catalog/upstream.js';
import { gatewayPlan, type RetryTable, retryTableOf, upstreamSettings } from '../../catalog/view.js';
import { type Identity, identityKey } from '../../mesh/identity.js';
import type { Route, RouteConfiguration, RouteMatch, VirtualHost } from '../api/envoy.js';
import { TlsRequirement } from '../common/enums.js';
import { servableTls } from '../common/gateway.js';
import { withHashPolicy } from '../common/hash.js';
import { IdentityMemo } from '../common/memo.js';
import { type OutboundPlan, type OutboundPort, proxyOutboundPlan } from '../common/outbound.js';
import { routeRetryPolicy } from '../common/retry.js';
import { GATEWAY_HTTP, GATEWAY_HTTPS } from '../names.js';
import { type Resource, type ResourceGenerator, TypeUrl } from '../types.js';
import { routeAction, withRequestTimeout } from './sidecar.js';

/** The outbound port a route's backend resolves to in the plan, if the gateway may call it. */
export function gatewayTarget(plan: OutboundPlan, route: GatewayRoute): OutboundPort | undefined {
  return plan.ports.find((p) => p.service === route.service && p.port === route.port);
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function routeMatch(host: string, route: GatewayRoute): RouteMatch {
  const p = route.path;
  // Prefix is element-wise in Kubernetes (`/foo` matches `/foo/bar`, not `/foobar`):
  // exactly Envoy's path_separated_prefix.
  const match: RouteMatch = !p
    ? { prefix: '/' }
    : p.type === 'Exact'
      ? { path: p.value }
      : { path_separated_prefix: p.value };
  // Envoy's `*.example.com` domain matches any depth; an Ingress wildcard is one DNS label.
  if (host.startsWith('*.'))
    match.headers = [
      {
        name: ':authority',
        string_match: { safe_regex: { regex: `^[^.]+${escapeRegex(host.slice(1))}$` } },
      },
    ];
  return match;
}

/** What the routes read besides the plan: UpstreamTrafficSettings by service, the gateway's Retry rules. */
interface RoutePolicy {
  settings: ReadonlyMap<string, UpstreamSetting>;
  retries: RetryTable;
}

function route(host: string, r: GatewayRoute, plan: OutboundPlan, own: Identity, policy: RoutePolicy): Route {
  const target = gatewayTarget(plan, r);
  const out: Route = { match: routeMatch(host, r) };
  if (target) {
    const setting = policy.settings.get(r.service.key);
    const action = withHashPolicy(
      withRequestTimeout(routeAction(target, r.port.protocol === 'grpc'), setting),
      setting,
    );
    // As on a sidecar's route: a Retry names the service called (a split apex included).
    const retry = policy.retries.get(r.service.key);
    if (retry) action.retry_policy = routeRetryPolicy(retry);
    out.route = action;
  } else
    out.direct_response = {
      status: 403,
      body: {
        inline_string: `skein ingress gateway: no TrafficTarget allows the gateway (${identityKey(own)}) to call ${r.service.key} (${r.origin})\n`,
      },
    };
  return out;
}

function virtualHost(
  h: GatewayHost,
  plan: OutboundPlan,
  own: Identity,
  redirect: boolean,
  policy: RoutePolicy,
): VirtualHost {
  const vh: VirtualHost = {
    name: h.host,
    domains: [h.host],
    routes: h.routes.map((r) => route(h.host, r, plan, own, policy)),
  };
  // Plaintext for a host with a certificate answers with a redirect to https (as ingress-nginx's ssl-redirect).
  if (redirect) vh.require_tls = TlsRequirement.ALL;
  return vh;
}

const configs = new IdentityMemo<RouteConfiguration>();

/** Serves both route configurations (the gateway's listeners name exactly these). */
export const gatewayRdsGenerator: ResourceGenerator = {
  typeUrl: TypeUrl.RouteConfiguration,
  generate(proxy, ctx): Resource[] {
    if (proxy.identity.kind !== 'gateway') return [];
    const gw = gatewayPlan(ctx.mesh);
    const plan = proxyOutboundPlan(ctx.mesh, proxy);
    const tlsHosts = new Set(servableTls(gw, ctx.secrets).flatMap((t) => t.hosts));
    const own = proxy.identity;
    const key = `${identityKey(own)}|${[...tlsHosts].join(',')}`;
    // Both are the same objects while no UpstreamTrafficSetting or Retry changed.
    const policy = { settings: upstreamSettings(ctx.mesh), retries: retryTableOf(ctx.mesh, own) };
    const build = (name: string, plaintext: boolean) =>
      configs.get([gw, plan, policy.settings, policy.retries], `${name}|${key}`, () => ({
        name,
        virtual_hosts: gw.hosts.map((h) =>
          virtualHost(h, plan, own, plaintext && tlsHosts.has(h.host), policy),
        ),
      }));
    return [
      { name: GATEWAY_HTTP, typeUrl: TypeUrl.RouteConfiguration, message: build(GATEWAY_HTTP, true) },
      { name: GATEWAY_HTTPS, typeUrl: TypeUrl.RouteConfiguration, message: build(GATEWAY_HTTPS, false) },
    ];
  },
};
