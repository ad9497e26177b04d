// RDS for the ingress chains of a sidecar's inbound listener (lds/ingress.ts):
// `rds-ingress.<targetPort>.<protocol>` forwards to the local app, with the
// service's rate limits, and carries the IngressBackends' policy (sources,
// Ingress hosts and paths, HTTPRouteGroup matches, SNI) as an RBACPerRoute
// for the chain's deny-all RBAC filter: on the route config, so an edit
// reaches the connections already open.
import type { LocalRateLimits } from '../../catalog/ratelimit.js';
import type { RouteConfiguration } from '../api/envoy.js';
import { localAppRoute } from '../common/inbound.js';
import type { IngressChainInput } from '../common/ingress.js';
import { limitedVirtualHost } from '../common/ratelimit.js';
import { ingressFilterChainName } from '../names.js';
import { ingressRbacRules } from '../rbac/ingress.js';
import { rbacPerRoute } from '../rbac/rbac.js';

export function ingressRouteConfig(
  name: string,
  input: IngressChainInput,
  limits: LocalRateLimits | undefined,
): RouteConfiguration {
  const { port: p, ingress } = input;
  // The chain's name as the rate limits' stat prefix, as when the routes were inline.
  const chain = ingressFilterChainName(p.port.targetPort, ingress.protocol);
  const vhost = limitedVirtualHost(chain, chain, () => localAppRoute(p), limits);
  vhost.typed_per_filter_config = {
    ...vhost.typed_per_filter_config,
    ...rbacPerRoute(ingressRbacRules(ingress)),
  };
  return { name, virtual_hosts: [vhost] };
}
