// Inbound filter chains for traffic from outside the mesh (an ingress
// controller), next to the mesh's mTLS chains on the inbound listener
// (sidecar.ts). OSM's form: per backend port, a chain matched on the target
// port and the allowed source prefixes; `http` is plaintext, `https` presents
// the backend's own certificate and (unless skipClientCertValidation) demands
// a client certificate from the mesh CA. Envoy picks the most specific match
// criterion by criterion — destination port, server names, transport
// protocol, then source IP (FilterChainMatch, listener_components.proto) — so
// a plaintext ingress chain never meets the mesh's (transport `tls`), and an
// https one wins over the mesh chain only for its source prefixes.
import type { LocalRateLimits } from '../../catalog/ratelimit.js';
import { type Identity, identityKey } from '../../mesh/identity.js';
import type {
  CommonTlsContext,
  FilterChain,
  FilterChainMatch,
  Listener$Filter,
  LocalReplyConfig,
  SdsSecretConfig,
  TransportSocket,
} from '../api/envoy.js';
import { ComparisonOp } from '../common/enums.js';
import { type InboundPort, isHttpLike, permissivePlaintextPorts } from '../common/inbound.js';
import type { IngressChainInput } from '../common/ingress.js';
import { httpLocalRateLimitFilter, networkLocalRateLimitFilter } from '../common/ratelimit.js';
import { AnyType, adsConfigSource, ExtName, typed } from '../common/xds.js';
import {
  inboundPlaintextChainName,
  inboundPlaintextRouteConfigName,
  ingressFilterChainName,
  ingressRootSecretName,
  ingressRouteConfigName,
  OWN_SERVICE_CERT,
} from '../names.js';
import { cidrRange } from '../rbac/ingress.js';
import { INBOUND_HTTP_RBAC_FILTER } from '../rbac/rbac.js';
import { httpConnectionManager, rds } from './hcm.js';
import { tcpProxy } from './tcp-proxy.js';

function sds(name: string): SdsSecretConfig {
  return { name, sds_config: adsConfigSource() };
}

/** https: the backend's certificate; the client's checked against the mesh CA unless skipped. */
function ingressTlsSocket(own: Identity, skipClientCertValidation: boolean): TransportSocket {
  const common: CommonTlsContext = { tls_certificate_sds_secret_configs: [sds(OWN_SERVICE_CERT)] };
  if (!skipClientCertValidation)
    common.validation_context_sds_secret_config = sds(ingressRootSecretName(identityKey(own)));
  return {
    name: ExtName.Tls,
    typed_config: typed(AnyType.DownstreamTlsContext, {
      common_tls_context: common,
      require_client_certificate: { value: !skipClientCertValidation },
    }),
  };
}

const INGRESS_DENIED_REPLY: LocalReplyConfig = {
  mappers: [
    {
      filter: {
        status_code_filter: {
          comparison: {
            op: ComparisonOp.EQ,
            value: { default_value: 403, runtime_key: 'skein.local_reply.status_403' },
          },
        },
      },
      body_format_override: {
        text_format_source: {
          inline_string:
            'skein: RBAC denied: no IngressBackend or Ingress rule admits this request from %DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT% (%RESPONSE_CODE_DETAILS%)\n',
        },
      },
    },
  ],
};

/**
 * One chain per input: its sources in the match, the app and the HTTP policy
 * on its route config (rds/ingress.ts). The chain's RBAC filter denies all by
 * itself and the route config's RBACPerRoute replaces that, so an
 * IngressBackend or Ingress edit that keeps the sources is an RDS update, which
 * reaches the connections already open (a changed chain would keep serving
 * them on the old policy until Envoy drained them). A change of the sources,
 * the protocol or skipClientCertValidation changes the chain.
 */
export function ingressChain(
  own: Identity,
  input: IngressChainInput,
  limits: LocalRateLimits | undefined,
): FilterChain {
  const { port: p, ingress } = input;
  const name = ingressFilterChainName(p.port.targetPort, ingress.protocol);
  const https = ingress.protocol === 'https';
  const match: FilterChainMatch = {
    destination_port: { value: p.port.targetPort },
    transport_protocol: https ? 'tls' : 'raw_buffer',
    source_prefix_ranges: ingress.cidrs.map(cidrRange),
  };
  // local_ratelimit after RBAC, always there (it does nothing without a bucket
  // on the route config), so a limit added later is an RDS update too.
  const hcm = httpConnectionManager(
    name,
    rds(ingressRouteConfigName(p.port.targetPort, ingress.protocol)),
    [INBOUND_HTTP_RBAC_FILTER, httpLocalRateLimitFilter(name)],
    { local_reply_config: INGRESS_DENIED_REPLY },
  );
  // On a target port shared by two services the mesh chains carry the SNI;
  // the ingress chain then stays without it (clients sending another name or
  // none reach it).
  const chain: FilterChain = {
    name,
    filter_chain_match: match,
    filters: limits?.tcp ? [networkLocalRateLimitFilter(name, limits.tcp), hcm] : [hcm],
  };
  if (https) chain.transport_socket = ingressTlsSocket(own, ingress.skipClientCertValidation);
  return chain;
}

/**
 * Permissive mode admits every caller, inside the mesh or not: plaintext on
 * each target port goes to the app (an ingress controller needs no
 * IngressBackend then, gRPC included — OSM refused it). HTTP routes come over
 * RDS (`rds-inbound-plaintext.<port>`, rds/ingress.ts) with the service's rate
 * limits, and local_ratelimit is always in the chain, so a limit edit reaches
 * the open connections as on the mesh's chains.
 */
export function permissivePlaintextChains(
  ports: readonly InboundPort[],
  limitsOf: (p: InboundPort) => LocalRateLimits | undefined,
): FilterChain[] {
  return permissivePlaintextPorts(ports).map((p) => {
    const t = p.port.targetPort;
    const name = inboundPlaintextChainName(t);
    const tcp = limitsOf(p)?.tcp;
    const app: Listener$Filter = isHttpLike(p.port)
      ? httpConnectionManager(name, rds(inboundPlaintextRouteConfigName(t)), [httpLocalRateLimitFilter(name)])
      : tcpProxy(name, { cluster: p.localCluster });
    return {
      name,
      filter_chain_match: { destination_port: { value: t }, transport_protocol: 'raw_buffer' },
      filters: tcp ? [networkLocalRateLimitFilter(name, tcp), app] : [app],
    };
  });
}
