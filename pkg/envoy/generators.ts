// The generator of each xDS type, chosen by the kind of proxy asking: Envoy
// sidecars, skein's ingress gateway and proxyless gRPC clients share EDS but
// differ elsewhere.
import type { ProxyContext } from '../catalog/types.js';
import type { ProxyKind } from '../mesh/constants.js';
import { gatewayCdsGenerator } from './cds/gateway.js';
import { proxylessClusterGenerator } from './cds/proxyless.js';
import { sidecarCdsGenerator } from './cds/sidecar.js';
import { edsGenerator } from './eds/eds.js';
import { gatewayLdsGenerator } from './lds/gateway.js';
import { proxylessListenerGenerator } from './lds/proxyless.js';
import { sidecarLdsGenerator } from './lds/sidecar.js';
import { gatewayRdsGenerator } from './rds/gateway.js';
import { proxylessRouteGenerator } from './rds/proxyless.js';
import { sidecarRdsGenerator } from './rds/sidecar.js';
import { sdsGenerator } from './sds/sds.js';
import type { GenerationContext, Resource, ResourceGenerator, TypeUrl } from './types.js';
import { TypeUrl as T } from './types.js';

const none: ResourceGenerator = {
  typeUrl: T.Secret,
  generate: () => [],
  // Proxyless workloads read their certificates from files: any SDS name is one they may not have.
  refusal: () => 'no-sds',
};

const BY_KIND: Record<ProxyKind, Record<TypeUrl, ResourceGenerator>> = {
  sidecar: {
    [T.Listener]: sidecarLdsGenerator,
    [T.RouteConfiguration]: sidecarRdsGenerator,
    [T.Cluster]: sidecarCdsGenerator,
    [T.ClusterLoadAssignment]: edsGenerator,
    [T.Secret]: sdsGenerator,
  },
  // skein's ingress gateway: its own listeners, routes and clusters; EDS and SDS as a sidecar's.
  gateway: {
    [T.Listener]: gatewayLdsGenerator,
    [T.RouteConfiguration]: gatewayRdsGenerator,
    [T.Cluster]: gatewayCdsGenerator,
    [T.ClusterLoadAssignment]: edsGenerator,
    [T.Secret]: sdsGenerator,
  },
  grpc: {
    [T.Listener]: proxylessListenerGenerator,
    [T.RouteConfiguration]: proxylessRouteGenerator,
    [T.Cluster]: proxylessClusterGenerator,
    [T.ClusterLoadAssignment]: edsGenerator,
    // Proxyless workloads read their certificates from files (gRFC A29
    // file_watcher), never over SDS.
    [T.Secret]: none,
  },
};

function dispatch(typeUrl: TypeUrl): ResourceGenerator {
  // Shared only if every kind's generator is: the cache shares across kinds.
  const shared = Object.values(BY_KIND).every((kind) => kind[typeUrl].shared === true);
  return {
    typeUrl,
    shared,
    generate(
      proxy: ProxyContext,
      ctx: GenerationContext,
      requested: ReadonlySet<string> | undefined,
    ): Resource[] {
      return BY_KIND[proxy.identity.kind][typeUrl].generate(proxy, ctx, requested);
    },
    refusal(name, proxy) {
      return BY_KIND[proxy.kind][typeUrl].refusal?.(name, proxy);
    },
  };
}

/** One generator per xDS type, dispatching on the proxy's kind. */
export function meshGenerators(): ReadonlyMap<string, ResourceGenerator> {
  return new Map(Object.values(T).map((t) => [t, dispatch(t)]));
}
