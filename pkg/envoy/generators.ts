// The generator of each xDS type, chosen by the kind of proxy asking: Envoy
// sidecars and proxyless gRPC clients share EDS but differ everywhere else.
import type { ProxyContext } from '../catalog/types.js';
import type { ProxyKind } from '../mesh/constants.js';
import { proxylessClusterGenerator } from './cds/proxyless.js';
import { sidecarCdsGenerator } from './cds/sidecar.js';
import { edsGenerator } from './eds/eds.js';
import { proxylessListenerGenerator } from './lds/proxyless.js';
import { sidecarLdsGenerator } from './lds/sidecar.js';
import { proxylessRouteGenerator } from './rds/proxyless.js';
import { sidecarRdsGenerator } from './rds/sidecar.js';
import { sdsGenerator } from './sds/sds.js';
import type { GenerationContext, Resource, ResourceGenerator, TypeUrl } from './types.js';
import { TypeUrl as T } from './types.js';

const none: ResourceGenerator = { typeUrl: T.Secret, generate: () => [] };

const BY_KIND: Record<ProxyKind, Record<TypeUrl, ResourceGenerator>> = {
  sidecar: {
    [T.Listener]: sidecarLdsGenerator,
    [T.RouteConfiguration]: sidecarRdsGenerator,
    [T.Cluster]: sidecarCdsGenerator,
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
  return {
    typeUrl,
    generate(
      proxy: ProxyContext,
      ctx: GenerationContext,
      requested: ReadonlySet<string> | undefined,
    ): Resource[] {
      return BY_KIND[proxy.identity.kind][typeUrl].generate(proxy, ctx, requested);
    },
  };
}

/** One generator per xDS type, dispatching on the proxy's kind. */
export function meshGenerators(): ReadonlyMap<string, ResourceGenerator> {
  return new Map(Object.values(T).map((t) => [t, dispatch(t)]));
}
