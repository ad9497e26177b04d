// Which SDS names a proxy may never be given, whatever the mesh's policy: the
// keys and validation contexts of another identity, the ingress gateway's TLS
// keys for any other kind, and names skein does not issue at all (a CA key, a
// guess). Those requests are refused — the generator answers nothing — and
// counted (`skein_xds_refused_total{reason}`), so a probing or misconfigured
// proxy shows. Names whose answer depends on policy (a service's root it may
// not call yet, a TLS Secret no Ingress names yet) are not refusals: they are
// answered once the policy allows them (xDS rule 8).
import type { ProxyIdentity } from '../../mesh/identity.js';
import { identityKey } from '../../mesh/identity.js';
import {
  INBOUND_TCP_ROOT_PREFIX,
  INGRESS_TLS_PREFIX,
  inboundRootSecretName,
  ingressRootSecretName,
  OWN_SERVICE_CERT,
  outboundRootSecretName,
  serviceCertSecretName,
} from '../names.js';

export type SecretRefusal = 'other-identity' | 'not-gateway' | 'unknown-name';

const OWN_ONLY = [serviceCertSecretName(''), ingressRootSecretName(''), inboundRootSecretName('')];
const POLICY_DEPENDENT = [outboundRootSecretName(''), INBOUND_TCP_ROOT_PREFIX];

/** Why `name` can never be served to `proxy`, or undefined when it may be (now or later). */
export function secretRefusal(name: string, proxy: ProxyIdentity): SecretRefusal | undefined {
  // Always the stream's own identity's key (sds.ts).
  if (name === OWN_SERVICE_CERT) return undefined;
  for (const prefix of OWN_ONLY)
    if (name.startsWith(prefix))
      return name.slice(prefix.length) === identityKey(proxy) ? undefined : 'other-identity';
  if (name.startsWith(INGRESS_TLS_PREFIX)) return proxy.kind === 'gateway' ? undefined : 'not-gateway';
  if (POLICY_DEPENDENT.some((p) => name.startsWith(p))) return undefined;
  return 'unknown-name';
}
