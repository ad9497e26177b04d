// RDS for the chains of a sidecar's inbound listener that take traffic from
// outside the mesh (lds/ingress.ts). Both forward to the local app with the
// service's rate limits, stat prefixes the chain's name as when the routes were
// inline: `rds-inbound-plaintext.<targetPort>` for permissive mode's plaintext
// chain, and `rds-ingress.<targetPort>.<protocol>`, which also carries the
// IngressBackends' policy (sources, Ingress hosts and paths, HTTPRouteGroup
// matches, SNI) as an RBACPerRoute for the chain's deny-all RBAC filter: on the
// route config, so an edit reaches the connections already open.
import type { LocalRateLimits } from '../../catalog/ratelimit.js';
import type { RouteConfiguration, VirtualHost } from '../api/envoy.js';
import { type InboundPort, localAppRoute } from '../common/inbound.js';
import type { IngressChainInput } from '../common/ingress.js';
import { limitedVirtualHost } from '../common/ratelimit.js';
import { inboundPlaintextChainName, ingressFilterChainName } from '../names.js';
import { ingressRbacRules } from '../rbac/ingress.js';
import { rbacPerRoute } from '../rbac/rbac.js';

/** The app behind the port, with the service's limits; the chain's name as stat prefix. */
function localAppHost(chain: string, p: InboundPort, limits: LocalRateLimits | undefined): VirtualHost {
  return limitedVirtualHost(chain, chain, () => localAppRoute(p), limits);
}

export function plaintextRouteConfig(
  name: string,
  p: InboundPort,
  limits: LocalRateLimits | undefined,
): RouteConfiguration {
  return { name, virtual_hosts: [localAppHost(inboundPlaintextChainName(p.port.targetPort), p, limits)] };
}

export function ingressRouteConfig(
  name: string,
  input: IngressChainInput,
  limits: LocalRateLimits | undefined,
): RouteConfiguration {
  const { port: p, ingress } = input;
  const vhost = localAppHost(ingressFilterChainName(p.port.targetPort, ingress.protocol), p, limits);
  vhost.typed_per_filter_config = {
    ...vhost.typed_per_filter_config,
    ...rbacPerRoute(ingressRbacRules(ingress)),
  };
  return { name, virtual_hosts: [vhost] };
}
