// mTLS transport sockets whose certificates come over SDS on the ADS stream
// (secret names in names.ts).
import type { MeshService } from '../../catalog/types.js';
import { type Identity, identityKey } from '../../mesh/identity.js';
import type { SdsSecretConfig, TransportSocket } from '../api/envoy.js';
import { outboundRootSecretName, serviceCertSecretName } from '../names.js';
import { AnyType, adsConfigSource, ExtName, typed } from './xds.js';

function sdsSecret(name: string): SdsSecretConfig {
  return { name, sds_config: adsConfigSource() };
}

/** Client side: present the proxy's own service cert, accept only the service's identities. */
export function upstreamTlsSocket(own: Identity, service: MeshService): TransportSocket {
  return {
    name: ExtName.Tls,
    typed_config: typed(AnyType.UpstreamTlsContext, {
      common_tls_context: {
        tls_certificate_sds_secret_configs: [sdsSecret(serviceCertSecretName(identityKey(own)))],
        validation_context_sds_secret_config: sdsSecret(outboundRootSecretName(service.key)),
      },
      // The server's inbound filter chains may match on it (lds/sidecar.ts).
      sni: service.fqdn,
    }),
  };
}

/** Server side: mTLS with a client certificate required, checked against the named validation context. */
export function downstreamTlsSocket(own: Identity, validationSecret: string): TransportSocket {
  const key = identityKey(own);
  return {
    name: ExtName.Tls,
    typed_config: typed(AnyType.DownstreamTlsContext, {
      common_tls_context: {
        tls_certificate_sds_secret_configs: [sdsSecret(serviceCertSecretName(key))],
        validation_context_sds_secret_config: sdsSecret(validationSecret),
      },
      require_client_certificate: { value: true },
    }),
  };
}
