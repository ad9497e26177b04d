// mTLS transport sockets whose certificates come over SDS on the ADS stream
// (secret names in names.ts).
import type { MeshService } from '../../catalog/types.js';
import type {
  EnvoyTypeMatcher$StringMatcher,
  SdsSecretConfig,
  SubjectAltNameMatcher,
  TransportSocket,
} from '../api/envoy.js';
import { OUTBOUND_TRUST_BUNDLE, OWN_SERVICE_CERT } from '../names.js';
import { SanType } from './enums.js';
import { AnyType, adsConfigSource, ExtName, typed } from './xds.js';

function sdsSecret(name: string): SdsSecretConfig {
  return { name, sds_config: adsConfigSource() };
}

/** A URI SAN matcher: skein's workload certificates name their identity in a URI SAN only (spiffeId). */
export function uriSan(matcher: EnvoyTypeMatcher$StringMatcher): SubjectAltNameMatcher {
  return { san_type: SanType.URI, matcher };
}

/**
 * Client side: present the proxy's own service cert, accept only the
 * service's identities (`sans`, pinnedSans: never empty, which would accept
 * any certificate of the CA). Nothing in it depends on the caller
 * (OWN_SERVICE_CERT), so every caller's cluster for a service is the same
 * message. The SAN matchers sit in the cluster and the trust bundle comes
 * from one secret per proxy (OUTBOUND_TRUST_BUNDLE): Envoy merges the
 * secret's validation context into `default_validation_context`
 * (tls.proto, CombinedCertificateValidationContext), so a proxy holds one
 * copy of the bundle instead of one per service it may call.
 */
export function upstreamTlsSocket(service: MeshService, sans: readonly string[]): TransportSocket {
  return {
    name: ExtName.Tls,
    typed_config: typed(AnyType.UpstreamTlsContext, {
      common_tls_context: {
        tls_certificate_sds_secret_configs: [sdsSecret(OWN_SERVICE_CERT)],
        combined_validation_context: {
          default_validation_context: {
            // The typed form: Envoy counts match_subject_alt_names as a deprecated
            // feature (runtime.deprecated_feature_use).
            match_typed_subject_alt_names: sans.map((exact) => uriSan({ exact })),
          },
          validation_context_sds_secret_config: sdsSecret(OUTBOUND_TRUST_BUNDLE),
        },
      },
      // The server's inbound filter chains may match on it (lds/sidecar.ts).
      sni: service.fqdn,
    }),
  };
}

/** Server side: mTLS with a client certificate required, checked against the named validation context. */
export function downstreamTlsSocket(validationSecret: string): TransportSocket {
  return {
    name: ExtName.Tls,
    typed_config: typed(AnyType.DownstreamTlsContext, {
      common_tls_context: {
        tls_certificate_sds_secret_configs: [sdsSecret(OWN_SERVICE_CERT)],
        validation_context_sds_secret_config: sdsSecret(validationSecret),
      },
      require_client_certificate: { value: true },
    }),
  };
}
