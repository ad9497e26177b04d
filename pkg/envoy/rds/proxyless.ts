// RDS for proxyless gRPC clients: one RouteConfiguration per service port,
// named like its client Listener's canonical name and referenced by every
// alias Listener of that port.

import type { RetryRule } from '../../catalog/retry.js';
import { splitEmptiness } from '../../catalog/split.js';
import type { MeshService, MeshServicePort, MeshView, ProxyContext } from '../../catalog/types.js';
import type { UpstreamSetting } from '../../catalog/upstream.js';
import { retryTableOf, upstreamSettings } from '../../catalog/view.js';
import type { RouteAction, RouteConfiguration } from '../api/envoy.js';
import { withProxylessHashPolicy } from '../common/hash.js';
import { IdentityMemo, NONE } from '../common/memo.js';
import { byName } from '../common/outbound.js';
import { proxylessRetryPolicy } from '../common/retry.js';
import { proxylessClientListenerName } from '../names.js';
import { clientTargetAliases, resolveClientTarget, routeDestinations } from '../proxyless/targets.js';
import type { GenerationContext, Resource, ResourceGenerator } from '../types.js';
import { TypeUrl } from '../types.js';

function routeAction(mesh: MeshView, service: MeshService, port: number): RouteAction {
  const destinations = routeDestinations(mesh, service, port);
  const only = destinations.length === 1 ? destinations[0] : undefined;
  if (only && only.weight === undefined) return { cluster: only.cluster };
  // Every entry carries a weight: grpc-js counts a missing weight as 0.
  return {
    weighted_clusters: {
      clusters: destinations.map((d) => ({ name: d.cluster, weight: { value: d.weight ?? 0 } })),
    },
  };
}

export function proxylessRouteConfiguration(
  mesh: MeshView,
  service: MeshService,
  port: MeshServicePort,
  retry?: RetryRule,
  setting?: UpstreamSetting,
): RouteConfiguration {
  const name = proxylessClientListenerName(service, port.port);
  const action = withProxylessHashPolicy(routeAction(mesh, service, port.port), setting);
  // The subset grpc-js-xds applies (gRFC A44, common/retry.ts).
  const retryPolicy = retry && proxylessRetryPolicy(retry);
  if (retryPolicy) action.retry_policy = retryPolicy;
  return {
    name,
    virtual_hosts: [
      {
        name,
        // The client picks the virtual host by its target authority, which is
        // whichever alias it dialled.
        domains: clientTargetAliases(service, port),
        routes: [{ match: { prefix: '/' }, route: action }],
      },
    ],
  };
}

// Keyed on the service, its split, the client's Retry rule for it and the
// service's UpstreamTrafficSetting (its hashOn; the same objects while
// unchanged, MeshView contract): routeDestinations reads nothing else. The
// configuration's name is per service port; its retry policy is per client
// identity (each client has its own stream).
const configs = new IdentityMemo<RouteConfiguration>();

/** RDS for `identity.kind === 'grpc'` proxies. */
export const proxylessRouteGenerator: ResourceGenerator = {
  typeUrl: TypeUrl.RouteConfiguration,
  generate(
    proxy: ProxyContext,
    ctx: GenerationContext,
    requested: ReadonlySet<string> | undefined,
  ): Resource[] {
    const ports: { service: MeshService; port: MeshServicePort }[] = [];
    if (requested === undefined) {
      for (const service of ctx.mesh.services())
        for (const port of service.ports) ports.push({ service, port });
    } else {
      for (const name of requested) {
        const t = resolveClientTarget(ctx.mesh, name);
        // Only canonical names are route configurations; aliases are Listeners.
        if (t && proxylessClientListenerName(t.service, t.port.port) === name) ports.push(t);
      }
    }
    const retries = retryTableOf(ctx.mesh, proxy.identity);
    const settings = upstreamSettings(ctx.mesh);
    const out: Resource[] = ports.map(({ service, port }) => {
      const retry = retries.get(service.key);
      const setting = settings.get(service.key);
      return {
        name: proxylessClientListenerName(service, port.port),
        typeUrl: TypeUrl.RouteConfiguration,
        // port is one of service's ports.
        message: configs.get(
          [service, ctx.mesh.split(service.key) ?? NONE, retry ?? NONE, setting ?? NONE],
          `${port.port}|${splitEmptiness(ctx.mesh, service.key)}`,
          () => proxylessRouteConfiguration(ctx.mesh, service, port, retry, setting),
        ),
      };
    });
    return byName(out);
  },
};
