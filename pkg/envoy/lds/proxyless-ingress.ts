// Ingress into a proxyless gRPC server: the IngressBackend answer of a target
// port (catalog/ingress.ts) as one more filter chain of the server Listener
// (lds/proxyless.ts), next to the mesh's mTLS chain. What grpc-js-xds 1.14
// can enforce decides the shape (its server.js, rbac.js, gRFC A36/A41):
// - the chain is picked by source prefix (FilterChainMatch.source_prefix_ranges,
//   most specific wins over the mesh chain, which matches any source); SNI,
//   destination port and ALPN matches make grpc-js drop the chain, so none is set;
// - `http` is plaintext (the app's XdsServerCredentials fallback), `https`
//   TLS with the workload's own certificate provider, the client certificate
//   required and checked against the mesh CA unless skipClientCertValidation;
// - the RBAC HTTP filter is the sidecar's (rbac/ingress.ts): direct_remote_ip,
//   authenticated principal_name, :authority, url_path, headers all evaluate
//   in grpc-js-xds; requested_server_name always sees an empty SNI there, so a
//   policy with sniHosts admits nothing (fail closed; not reported: the catalog
//   cannot tell proxyless pods from sidecars, docs/policy.md).
// Measured limit (test/e2e/proxyless-ingress.test.ts): XdsServer listens on
// `::` (net.Server.listen(port)), so on a dual-stack host an IPv4 client's
// address is `::ffff:a.b.c.d`; grpc-js-xds's cidr.js compares IPv4 ranges
// only with IPv4 addresses, so the chain is never selected (fail closed), and
// it throws parsing that address against any IPv6 range, which would crash
// the server on every IPv4 connection: IPv6 ranges are left out.
import type { IngressPort } from '../../catalog/ingress.js';
import type { MeshService, MeshView } from '../../catalog/types.js';
import { anyIngress, ingressPort } from '../../catalog/view.js';
import type { CommonTlsContext, FilterChain, HttpFilter, TransportSocket } from '../api/envoy.js';
import { AnyType, ExtName, typed } from '../common/xds.js';
import { ingressFilterChainName, PROXYLESS_CERT_PROVIDER } from '../names.js';
import { cidrRange, ingressRbacFilter } from '../rbac/ingress.js';

// grpc-js-xds requires the router filter last (gRFC A39).
const ROUTER_FILTER: HttpFilter = { name: ExtName.Router, typed_config: typed(AnyType.Router) };

/**
 * The ingress answer for a server's target port: the first service (by key)
 * of the pod with one that admits some source, as a sidecar picks it
 * (lds/ingress.ts). Undefined when none does.
 */
export function proxylessIngress(
  mesh: MeshView,
  services: readonly MeshService[],
  targetPort: number,
): IngressPort | undefined {
  // Most meshes have no ingress policy: one question for the mesh, none per port.
  if (!anyIngress(mesh)) return undefined;
  const keys = services
    .filter((s) => s.ports.some((p) => p.targetPort === targetPort))
    .map((s) => s.key)
    .sort();
  for (const key of keys) {
    const answer = ingressPort(mesh, key, targetPort);
    if (answer && answer.cidrs.length > 0) return answer;
  }
  return undefined;
}

/** https: the workload's certificate (gRFC A29 provider); the client's checked against the mesh CA unless skipped. */
function ingressTls(skipClientCertValidation: boolean): TransportSocket {
  const provider = { instance_name: PROXYLESS_CERT_PROVIDER };
  const common: CommonTlsContext = { tls_certificate_provider_instance: provider };
  if (skipClientCertValidation)
    // No require_client_certificate at all: grpc-js-xds 1.14 rejects the field
    // when set, even to false, without a validation context
    // (listener-resource-type.js tests the BoolValue message, not its value).
    return {
      name: ExtName.Tls,
      typed_config: typed(AnyType.DownstreamTlsContext, { common_tls_context: common }),
    };
  common.validation_context = { ca_certificate_provider_instance: provider };
  return {
    // grpc-js-xds rejects any other transport socket name on a server Listener.
    name: ExtName.Tls,
    typed_config: typed(AnyType.DownstreamTlsContext, {
      common_tls_context: common,
      require_client_certificate: { value: true },
    }),
  };
}

/** The filter chain admitting one target port's ingress sources on a proxyless server Listener. */
export function proxylessIngressChain(targetPort: number, ingress: IngressPort): FilterChain | undefined {
  // IPv6 ranges crash grpc-js-xds 1.14 on IPv4-mapped peers (above): IPv4 only.
  const cidrs = ingress.cidrs.filter((c) => !c.includes(':'));
  if (cidrs.length === 0) return undefined;
  // The protocol is in the HCM's names: grpc-js-xds 1.14 takes a chain whose
  // TLS toggled but whose HCM bytes did not as unchanged (reference §4).
  const name = ingressFilterChainName(targetPort, ingress.protocol);
  const chain: FilterChain = {
    name,
    filter_chain_match: {
      source_prefix_ranges: cidrs.map(cidrRange),
      // grpc-js-xds skips a match whose transport_protocol is not literally
      // `raw_buffer` (server.js normalizeFilterChainMatch); TLS is decided by
      // the chain's transport socket, not by this field.
      transport_protocol: 'raw_buffer',
    },
    filters: [
      {
        name: ExtName.HttpConnectionManager,
        typed_config: typed(AnyType.HttpConnectionManager, {
          stat_prefix: name,
          // Servers only take non_forwarding_action routes (grpc-js-xds).
          route_config: {
            name,
            virtual_hosts: [
              {
                name: 'ingress',
                domains: ['*'],
                routes: [{ match: { prefix: '/' }, non_forwarding_action: {} }],
              },
            ],
          },
          http_filters: [ingressRbacFilter(ingress), ROUTER_FILTER],
        }),
      },
    ],
  };
  if (ingress.protocol === 'https') chain.transport_socket = ingressTls(ingress.skipClientCertValidation);
  return chain;
}
