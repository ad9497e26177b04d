// mTLS transport sockets whose certificates come over SDS on the ADS stream
// (secret names in names.ts).
import type { MeshService } from '../../catalog/types.js';
import type { SdsSecretConfig, TransportSocket } from '../api/envoy.js';
import { OWN_SERVICE_CERT, outboundRootSecretName } from '../names.js';
import { AnyType, adsConfigSource, ExtName, typed } from './xds.js';

function sdsSecret(name: string): SdsSecretConfig {
  return { name, sds_config: adsConfigSource() };
}

/**
 * Client side: present the proxy's own service cert, accept only the
 * service's identities. Nothing in it depends on the caller (OWN_SERVICE_CERT),
 * so every caller's cluster for a service is the same message.
 */
export function upstreamTlsSocket(service: MeshService): TransportSocket {
  return {
    name: ExtName.Tls,
    typed_config: typed(AnyType.UpstreamTlsContext, {
      common_tls_context: {
        tls_certificate_sds_secret_configs: [sdsSecret(OWN_SERVICE_CERT)],
        validation_context_sds_secret_config: sdsSecret(outboundRootSecretName(service.key)),
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
