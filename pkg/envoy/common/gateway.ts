// What every gateway generator agrees on: which TLS Secrets of the gateway
// plan can be presented now. A filter chain naming an SDS secret that never
// arrives keeps the whole listener warming (Envoy listener warming), so only
// Secrets the controller holds a valid key pair for get a chain, an SDS
// answer and an http → https redirect.
import type { GatewayPlan } from '../../catalog/gateway.js';
import type { SecretSource } from '../../certificate/types.js';

/** The plan's TLS entries whose Secret holds a usable key pair. */
export function servableTls(plan: GatewayPlan, secrets: SecretSource): GatewayPlan['tls'] {
  return plan.tls.filter((t) => secrets.ingressTlsCertificate?.(t.secret) !== undefined);
}
