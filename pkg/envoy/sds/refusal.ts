// Which SDS names a proxy may never be given, whatever the mesh's policy: the
// keys and validation contexts of another identity, the ingress gateway's TLS
// keys for any other kind, and names skein does not issue at all (a CA key, a
// guess). Those requests are refused — the generator answers nothing — and
// counted (`skein_xds_refused_total{reason}`), so a probing or misconfigured
// proxy shows. Names whose answer depends on policy (a service's root it may
// not call yet, a TLS Secret no Ingress names yet) are not refusals: they are
// answered once the policy allows them (xDS rule 8). OSM's per-service
// outbound validation contexts (`root-cert-for-mtls-outbound:<ns>/<svc>`)
// are no longer issued: the SANs live in the clusters (common/tls.ts).
import type { ProxyIdentity } from '../../mesh/identity.js';
import { identityKey } from '../../mesh/identity.js';
import {
  INBOUND_TCP_ROOT_PREFIX,
  INGRESS_TLS_PREFIX,
  inboundRootSecretName,
  ingressRootSecretName,
  OUTBOUND_TRUST_BUNDLE,
  OWN_SERVICE_CERT,
  serviceCertSecretName,
} from '../names.js';

export type SecretRefusal = 'other-identity' | 'not-gateway' | 'unknown-name';

const OWN_ONLY = [serviceCertSecretName(''), ingressRootSecretName(''), inboundRootSecretName('')];
const POLICY_DEPENDENT = [INBOUND_TCP_ROOT_PREFIX];

/** Why `name` can never be served to `proxy`, or undefined when it may be (now or later). */
export function secretRefusal(name: string, proxy: ProxyIdentity): SecretRefusal | undefined {
  // Always the stream's own identity's key (sds.ts).
  // The trust bundle alone: public, the same for every proxy.
  if (name === OWN_SERVICE_CERT || name === OUTBOUND_TRUST_BUNDLE) return undefined;
  for (const prefix of OWN_ONLY)
    if (name.startsWith(prefix))
      return name.slice(prefix.length) === identityKey(proxy) ? undefined : 'other-identity';
  if (name.startsWith(INGRESS_TLS_PREFIX)) return proxy.kind === 'gateway' ? undefined : 'not-gateway';
  if (POLICY_DEPENDENT.some((p) => name.startsWith(p))) return undefined;
  return 'unknown-name';
}
