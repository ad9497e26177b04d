// CDS for proxyless gRPC clients: one EDS cluster per service port
// (`<ns>/<svc>|<port>`, the same names the sidecar CDS and the shared EDS use),
// with gRFC A29 mTLS that pins the server's SPIFFE identities.
import type { MeshService, MeshServicePort, MeshView, ProxyContext } from '../../catalog/types.js';
import type { UpstreamSetting } from '../../catalog/upstream.js';
import { upstreamSettingOf } from '../../catalog/view.js';
import { pinnedSans } from '../../mesh/identity.js';
import type { Cluster, EnvoyTypeMatcher$StringMatcher } from '../api/envoy.js';
import { DiscoveryType, LbPolicy } from '../common/enums.js';
import { IdentityMemo, NONE } from '../common/memo.js';
import { byName } from '../common/outbound.js';
import { withProxylessUpstreamSetting } from '../common/upstream.js';
import { AnyType, adsConfigSource, ExtName, typed } from '../common/xds.js';
import { parseUpstreamClusterName } from '../eds/eds.js';
import { PROXYLESS_CERT_PROVIDER, upstreamClusterName } from '../names.js';
import type { GenerationContext, Resource, ResourceGenerator } from '../types.js';
import { TypeUrl } from '../types.js';

/** SAN matchers for a service's identities (pinnedSans: never none, which grpc-js would read as any). */
function sanMatchers(mesh: MeshView, service: MeshService): EnvoyTypeMatcher$StringMatcher[] {
  return pinnedSans(mesh.serviceIdentities(service.key), mesh.trustDomain, service.key).map((exact) => ({
    exact,
  }));
}

export function proxylessCluster(
  mesh: MeshView,
  service: MeshService,
  port: number,
  setting?: UpstreamSetting,
): Cluster {
  const provider = { instance_name: PROXYLESS_CERT_PROVIDER };
  const cluster: Cluster = {
    name: upstreamClusterName(service, port),
    type: DiscoveryType.EDS,
    // grpc-js accepts only EDS clusters fed over ADS.
    eds_cluster_config: { eds_config: adsConfigSource() },
    lb_policy: LbPolicy.ROUND_ROBIN,
    transport_socket: {
      name: ExtName.Tls,
      typed_config: typed(AnyType.UpstreamTlsContext, {
        common_tls_context: {
          tls_certificate_provider_instance: provider,
          validation_context: {
            ca_certificate_provider_instance: provider,
            // grpc-js ignores match_typed_subject_alt_names; only this field works.
            match_subject_alt_names: sanMatchers(mesh, service),
          },
        },
      }),
    },
  };
  return withProxylessUpstreamSetting(cluster, setting);
}

// Keyed on the service and its identities (both the same objects while
// unchanged, MeshView contract), plus the trust domain and port.
const clusters = new IdentityMemo<Cluster>();

function clusterOf(mesh: MeshView, service: MeshService, port: MeshServicePort): Cluster {
  const setting = upstreamSettingOf(mesh, service.key);
  const parts = [service, port, mesh.serviceIdentities(service.key), setting ?? NONE];
  return clusters.get(parts, mesh.trustDomain, () => proxylessCluster(mesh, service, port.port, setting));
}

/**
 * CDS for `identity.kind === 'grpc'` proxies. Clients request clusters by the
 * names their routes reference, so every requested name that exists is
 * returned; without a request list, every service port's cluster (which covers
 * every route target, split backends being services too).
 */
export const proxylessClusterGenerator: ResourceGenerator = {
  typeUrl: TypeUrl.Cluster,
  generate(
    _proxy: ProxyContext,
    ctx: GenerationContext,
    requested: ReadonlySet<string> | undefined,
  ): Resource[] {
    const mesh = ctx.mesh;
    const out: Resource[] = [];
    if (requested === undefined) {
      for (const service of mesh.services()) {
        for (const port of service.ports) {
          out.push({
            name: upstreamClusterName(service, port.port),
            typeUrl: TypeUrl.Cluster,
            message: clusterOf(mesh, service, port),
          });
        }
      }
    } else {
      for (const name of requested) {
        const parsed = parseUpstreamClusterName(name);
        if (!parsed) continue;
        const service = mesh.service(parsed.serviceKey);
        const port = service?.ports.find((p) => p.port === parsed.port);
        if (!service || !port) continue;
        out.push({ name, typeUrl: TypeUrl.Cluster, message: clusterOf(mesh, service, port) });
      }
    }
    return byName(out);
  },
};
