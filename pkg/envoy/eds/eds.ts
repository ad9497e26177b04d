// EDS for sidecars and proxyless gRPC alike: one ClusterLoadAssignment per
// requested upstream cluster name `<ns>/<svc>|<port>` (names.ts).
import type { Endpoint } from '../../catalog/types.js';
import type { ClusterLoadAssignment, LbEndpoint } from '../api/envoy.js';
import { HealthStatus } from '../common/enums.js';
import { IdentityMemo } from '../common/memo.js';
import { byName } from '../common/outbound.js';
import { socketAddress } from '../common/xds.js';
import { type Resource, type ResourceGenerator, TypeUrl } from '../types.js';

const CLUSTER_NAME = /^([^/|]+\/[^/|]+)\|([0-9]{1,5})$/;

/** Parses an upstream cluster name `<ns>/<svc>|<port>`; local and other clusters give undefined. */
export function parseUpstreamClusterName(name: string): { serviceKey: string; port: number } | undefined {
  const m = CLUSTER_NAME.exec(name);
  if (!m?.[1] || !m[2]) return undefined;
  const port = Number(m[2]);
  return port >= 1 && port <= 65535 ? { serviceKey: m[1], port } : undefined;
}

/**
 * A ClusterLoadAssignment with a single locality. The locality carries
 * `load_balancing_weight` because grpc-js-xds silently drops localities
 * without one (grpc-js-xds 1.14, `src/load-balancer-xds-wrr-locality.ts`). Only ready endpoints are listed.
 */
export function clusterLoadAssignment(
  clusterName: string,
  endpoints: readonly Endpoint[],
): ClusterLoadAssignment {
  const lbEndpoints: LbEndpoint[] = [];
  for (const ep of endpoints) {
    if (!ep.ready) continue;
    lbEndpoints.push({
      endpoint: { address: socketAddress(ep.ip, ep.port) },
      health_status: HealthStatus.HEALTHY,
    });
  }
  return {
    cluster_name: clusterName,
    endpoints: [{ locality: {}, load_balancing_weight: { value: 1 }, lb_endpoints: lbEndpoints }],
  };
}

// Keyed on the endpoints array (the same object while unchanged, MeshView
// contract) and the cluster name: an unchanged service keeps its message.
const assignments = new IdentityMemo<ClusterLoadAssignment>();

function assignmentOf(name: string, endpoints: readonly Endpoint[]): ClusterLoadAssignment {
  return assignments.get([endpoints], name, () => clusterLoadAssignment(name, endpoints));
}

/**
 * Serves exactly the requested names that resolve to a service port; unknown or
 * unparseable names are omitted and sent once they appear (xDS rule 8). EDS
 * has no wildcard (xDS rule 6), so an undefined `requested` yields nothing.
 * Endpoints are not filtered by policy: SMI is enforced at the destination,
 * so nothing here depends on the proxy and every proxy asking for the same
 * names shares one generation (`shared`).
 */
export const edsGenerator: ResourceGenerator = {
  typeUrl: TypeUrl.ClusterLoadAssignment,
  shared: true,
  generate(_proxy, ctx, requested): Resource[] {
    if (!requested) return [];
    const out: Resource[] = [];
    for (const name of requested) {
      const parsed = parseUpstreamClusterName(name);
      if (!parsed) continue;
      const service = ctx.mesh.service(parsed.serviceKey);
      if (!service?.ports.some((p) => p.port === parsed.port)) continue;
      out.push({
        name,
        typeUrl: TypeUrl.ClusterLoadAssignment,
        message: assignmentOf(name, ctx.mesh.endpoints(service.key, parsed.port)),
      });
    }
    return byName(out);
  },
};
