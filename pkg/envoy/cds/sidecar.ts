// CDS for Envoy sidecars: mTLS EDS clusters for every service port the proxy
// may call (split backends included), STATIC local clusters for the ports its
// pod serves, and the ORIGINAL_DST passthrough cluster in permissive mode or
// the endpoint-less blackhole cluster in SMI mode (lds/sidecar.ts).
import type { RetryRule } from '../../catalog/retry.js';
import type { MeshServicePort, MeshView } from '../../catalog/types.js';
import type { UpstreamSetting } from '../../catalog/upstream.js';
import { retryTableOf, upstreamSettingOf } from '../../catalog/view.js';
import { pinnedSans } from '../../mesh/identity.js';
import type { Cluster } from '../api/envoy.js';
import { DiscoveryType, LbPolicy } from '../common/enums.js';
import { inboundPorts } from '../common/inbound.js';
import { IdentityMemo, NONE } from '../common/memo.js';
import { byName, proxyUpstreamClusters, type UpstreamCluster } from '../common/outbound.js';
import { durationMs, retryBudgetBreakers } from '../common/retry.js';
import { upstreamTlsSocket } from '../common/tls.js';
import { tracingClusterOf, tracingSetting } from '../common/tracing.js';
import { withUpstreamSetting } from '../common/upstream.js';
import { adsConfigSource, durationSeconds, httpProtocolOptions, socketAddress } from '../common/xds.js';
import { egressDnsCluster } from '../egress/egress.js';
import { egressPlan } from '../egress/plan.js';
import { BLACKHOLE_CLUSTER, PASSTHROUGH_CLUSTER, TRACING_CLUSTER } from '../names.js';
import { type Resource, type ResourceGenerator, TypeUrl } from '../types.js';

// OSM's value: fail fast so Envoy retries another endpoint.
const CONNECT_TIMEOUT_S = 1;

function withProtocol(cluster: Cluster, port: MeshServicePort): Cluster {
  // gRPC needs HTTP/2 to the upstream; plain HTTP stays on Envoy's HTTP/1.1 default.
  if (port.protocol === 'grpc') cluster.typed_extension_protocol_options = httpProtocolOptions(true);
  return cluster;
}

/**
 * `sans`: the SPIFFE ids the destination's servers may present (pinnedSans);
 * `setting`: its UpstreamTrafficSetting (catalog/upstream.ts), if any.
 */
export function upstreamCluster(
  up: UpstreamCluster,
  sans: readonly string[],
  setting?: UpstreamSetting,
): Cluster {
  const cluster = withProtocol(
    {
      name: up.name,
      type: DiscoveryType.EDS,
      // EDS over ADS; the service name defaults to the cluster name (eds/eds.ts).
      eds_cluster_config: { eds_config: adsConfigSource() },
      connect_timeout: durationSeconds(CONNECT_TIMEOUT_S),
      transport_socket: upstreamTlsSocket(up.service, sans),
    },
    up.port,
  );
  return withUpstreamSetting(cluster, setting, up.port.protocol);
}

/**
 * A Retry's budget on the source's cluster for its destination (common/retry.ts),
 * merged into the default-priority thresholds an UpstreamTrafficSetting set, so
 * its connection and request limits stay in force. With a budget Envoy ignores
 * `max_retries` (cluster/v3/circuit_breaker.proto, `retry_budget`).
 */
export function withRetryBudget(cluster: Cluster, retry: RetryRule | undefined): Cluster {
  const budget = retry && retryBudgetBreakers(retry)?.thresholds?.[0];
  if (!budget) return cluster;
  const [first, ...rest] = cluster.circuit_breakers?.thresholds ?? [];
  cluster.circuit_breakers = { thresholds: [{ ...first, ...budget }, ...rest] };
  return cluster;
}

// Idle connections to the app are closed by the sidecar before the app's own
// keep-alive timeout can (Node 5 s, uvicorn 5 s, gunicorn 2 s): when the app
// closes first, a request Envoy has just put on that pooled connection fails
// with "upstream connect error … connection termination" (Envoy's FAQ on
// upstream idle timeouts). Reconnecting on loopback costs far less.
export const LOCAL_APP_IDLE_TIMEOUT_MS = 1000;

/** HTTP options for the app's cluster: the idle timeout above, and the app's protocol. */
function localHttpOptions(port: MeshServicePort): Cluster['typed_extension_protocol_options'] {
  if (port.protocol === 'tcp') return undefined;
  // gRPC needs HTTP/2 to the app; plain HTTP stays on HTTP/1.1, Envoy's default.
  return httpProtocolOptions(port.protocol === 'grpc', {
    idle_timeout: durationMs(LOCAL_APP_IDLE_TIMEOUT_MS),
  });
}

export function localCluster(name: string, port: MeshServicePort): Cluster {
  const options = localHttpOptions(port);
  return {
    name,
    type: DiscoveryType.STATIC,
    connect_timeout: durationSeconds(CONNECT_TIMEOUT_S),
    // The app listens on the target port; the sidecar reaches it on loopback
    // (iptables skips loopback, so this does not loop back into Envoy).
    load_assignment: {
      cluster_name: name,
      endpoints: [{ lb_endpoints: [{ endpoint: { address: socketAddress('127.0.0.1', port.targetPort) } }] }],
    },
    ...(options && { typed_extension_protocol_options: options }),
  };
}

// Messages keyed on the MeshService they describe and its identities (the
// same objects while unchanged, MeshView contract) plus the scalars they
// embed, so an unrelated change leaves every cluster message — and its
// encoding — as it was. Nothing in them names the caller (common/tls.ts), so
// every proxy group, and the gateway, shares them.
const upstreamClusters = new IdentityMemo<Cluster>();

/** The mesh cluster `up` with the caller's Retry budget toward it, if any. */
export function upstreamClusterOf(
  mesh: MeshView,
  up: UpstreamCluster,
  retry: RetryRule | undefined,
): Cluster {
  const key = up.service.key;
  // The setting is the same object while unchanged (lineage pool), so it keys the memo too.
  const setting = upstreamSettingOf(mesh, key);
  const ids = mesh.serviceIdentities(key);
  const parts = [up.service, up.port, ids, retry ?? NONE, setting ?? NONE];
  return upstreamClusters.get(parts, mesh.trustDomain, () =>
    withRetryBudget(upstreamCluster(up, pinnedSans(ids, mesh.trustDomain, key), setting), retry),
  );
}
const localClusters = new IdentityMemo<Cluster>();
// Egress clusters depend on the host and port alone (their name): shared by every proxy.
const egressClusters = new Map<string, Cluster>();
let passthrough: Cluster | undefined;
let blackhole: Cluster | undefined;

export function passthroughCluster(): Cluster {
  return {
    name: PASSTHROUGH_CLUSTER,
    type: DiscoveryType.ORIGINAL_DST,
    // ORIGINAL_DST clusters must let the cluster pick the host.
    lb_policy: LbPolicy.CLUSTER_PROVIDED,
    connect_timeout: durationSeconds(CONNECT_TIMEOUT_S),
  };
}

/**
 * Where the SMI outbound listener sends TCP it denies: with no endpoint,
 * tcp_proxy closes the connection at once (cluster.blackhole.upstream_cx_none_healthy).
 */
export function blackholeCluster(): Cluster {
  return {
    name: BLACKHOLE_CLUSTER,
    type: DiscoveryType.STATIC,
    connect_timeout: durationSeconds(CONNECT_TIMEOUT_S),
  };
}

/** Always returns the full set: CDS is state-of-the-world (xDS rule 7). */
export const sidecarCdsGenerator: ResourceGenerator = {
  typeUrl: TypeUrl.Cluster,
  generate(proxy, ctx): Resource[] {
    if (proxy.identity.kind !== 'sidecar') return [];
    const out: Resource[] = [];
    const add = (message: Cluster, name: string): void => {
      out.push({ name, typeUrl: TypeUrl.Cluster, message });
    };
    const retries = retryTableOf(ctx.mesh, proxy.identity);
    // The clusters alone, not the whole plan: a split weight change does not reach CDS.
    for (const up of proxyUpstreamClusters(ctx.mesh, proxy).values()) {
      // up.name follows from the service and port.
      add(upstreamClusterOf(ctx.mesh, up, retries.get(up.service.key)), up.name);
    }
    for (const p of inboundPorts(proxy)) {
      const message = localClusters.get([p.service, p.port], p.localCluster, () =>
        localCluster(p.localCluster, p.port),
      );
      add(message, p.localCluster);
    }
    if (ctx.mesh.permissive || proxy.outsideMesh) {
      passthrough ??= passthroughCluster();
      add(passthrough, PASSTHROUGH_CLUSTER);
    } else {
      blackhole ??= blackholeCluster();
      add(blackhole, BLACKHOLE_CLUSTER);
      // SMI mode: the identity's Egress destinations (egress/egress.ts).
      const egress = egressPlan(ctx.mesh, proxy.identity);
      if (egress.passthrough || egress.originalDst) {
        passthrough ??= passthroughCluster();
        add(passthrough, PASSTHROUGH_CLUSTER);
      }
      for (const c of egress.passthrough ? [] : egress.clusters) {
        let message = egressClusters.get(c.name);
        if (!message) {
          message = egressDnsCluster(c);
          // Bounded like the plan interner: an evicted message is only rebuilt.
          if (egressClusters.size >= 4096) egressClusters.clear();
          egressClusters.set(c.name, message);
        }
        add(message, c.name);
      }
    }
    // The collector the HCMs' tracer reports to (common/tracing.ts).
    const tracing = tracingSetting(ctx.mesh);
    if (tracing) add(tracingClusterOf(tracing), TRACING_CLUSTER);
    return byName(out);
  },
};
