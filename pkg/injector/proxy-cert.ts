// What a proxy's bootstrap certificate is issued as, at admission and at each rotation.
import type { CertificateRequest } from '../certificate/types.js';
import { parseProxyCommonName, spiffeId } from '../mesh/identity.js';

/**
 * Envoy proxies (sidecar, gateway) use theirs only as an ADS client. A
 * proxyless workload's is also its data-plane identity (gRFC A29 file_watcher):
 * serverAuth and clientAuth, and the SPIFFE URI SAN that callers pin and RBAC
 * matches (grpc-js-xds reads URI SANs before the CN).
 */
export function proxyCertificateRequest(commonName: string, validityMs: number): CertificateRequest {
  const id = parseProxyCommonName(commonName);
  if (id.kind === 'grpc')
    return { commonName, validityMs, usage: 'both', uriSans: [spiffeId(id, id.trustDomain)] };
  return { commonName, validityMs, usage: 'client' };
}
