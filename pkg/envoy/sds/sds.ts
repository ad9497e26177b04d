// SDS: the proxy's own service certificate, the validation contexts its
// inbound mTLS uses and the trust bundle of its outbound mTLS (names.ts). A proxy only ever gets its own
// identity's key: OWN_SERVICE_CERT is answered with the identity of the
// stream's client certificate, and names for other identities never.
import { EVERY_SOURCE, type InboundRule, type ProxyContext } from '../../catalog/types.js';
import { gatewayPlan } from '../../catalog/view.js';
import { identityKey, spiffeId } from '../../mesh/identity.js';
import type { Secret, SubjectAltNameMatcher } from '../api/envoy.js';
import { servableTls } from '../common/gateway.js';
import { type InboundPort, inboundPorts, isHttpLike } from '../common/inbound.js';
import { ingressInputs } from '../common/ingress.js';
import { IdentityMemo } from '../common/memo.js';
import { byName, proxyOutboundPlan } from '../common/outbound.js';
import { uriSan } from '../common/tls.js';
import {
  INBOUND_TCP_ROOT_PREFIX,
  INGRESS_TLS_PREFIX,
  inboundRootSecretName,
  inboundTcpRootSecretName,
  ingressRootSecretName,
  ingressTlsSecretName,
  OUTBOUND_TRUST_BUNDLE,
  OWN_SERVICE_CERT,
  serviceCertSecretName,
} from '../names.js';
import { type GenerationContext, type Resource, type ResourceGenerator, TypeUrl } from '../types.js';
import { secretRefusal } from './refusal.js';

const SERVICE_CERT = serviceCertSecretName('');
const INBOUND_ROOT = inboundRootSecretName('');
const INGRESS_ROOT = ingressRootSecretName('');

function validationContext(name: string, trustBundle: string, sans: SubjectAltNameMatcher[]): Secret {
  return {
    name,
    validation_context: {
      trusted_ca: { inline_string: trustBundle },
      // The typed form: Envoy counts match_subject_alt_names as a deprecated
      // feature (runtime.deprecated_feature_use) and ignores it next to this one.
      match_typed_subject_alt_names: sans,
    },
  };
}

/**
 * Inbound: any identity of the mesh's trust domain, in both modes. Who may
 * call which route is the RBAC filters' decision (lds/sidecar.ts), so a
 * denied caller gets a 403 or a closed connection, with a stat, instead of a
 * failed handshake; mTLS from the mesh CA is still required. The trailing
 * slash keeps `spiffe://<td>.evil/...` out.
 */
export function inboundSanMatchers(trustDomain: string): SubjectAltNameMatcher[] {
  return [uriSan({ prefix: `spiffe://${trustDomain}/` })];
}

/**
 * Inbound TCP: only the callers the port's rules allow (lds/sidecar.ts says
 * why TCP cannot leave it to RBAC). No allowed caller gets a SAN no
 * certificate carries (spiffeId always has /ns/<ns>/sa/<sa>): an empty list
 * would accept any certificate of the CA, an absent secret would stall the
 * whole inbound listener while warming.
 */
function inboundTcpSanMatchers(rules: readonly InboundRule[], trustDomain: string): SubjectAltNameMatcher[] {
  const ids = new Set<string>();
  for (const rule of rules) {
    if (rule.sources === EVERY_SOURCE) return inboundSanMatchers(trustDomain);
    for (const id of rule.sources) ids.add(spiffeId(id, trustDomain));
  }
  if (ids.size === 0) return [uriSan({ exact: `spiffe://${trustDomain}/skein/no-allowed-caller` })];
  return [...ids].sort().map((exact) => uriSan({ exact }));
}

/** The pod's TCP inbound port a pinned secret name stands for, if it serves one. */
function inboundTcpPort(proxy: ProxyContext, name: string): InboundPort | undefined {
  return inboundPorts(proxy).find(
    (p) => !isHttpLike(p.port) && inboundTcpRootSecretName(p.service.key, p.port.targetPort) === name,
  );
}

// Secrets memoised on what they are built from, so an unchanged secret is the
// same message (and encoding) across views: the issued certificate object
// and the inbound rule lists (the same arrays while unchanged, MeshView
// contract). Validation contexts embed the trust domain and the trust bundle:
// they live in a scope that a change of either replaces. The inbound one of
// HTTP ports depends on nothing else (one per identity name, never on
// policy), the outbound trust bundle on nothing else at all (one message for
// every proxy).
const certSecrets = new IdentityMemo<Secret>();
interface Scope {
  readonly trustDomain: string;
  readonly bundle: string;
  readonly inbound: Map<string, Secret>;
  readonly inboundTcp: IdentityMemo<Secret>;
  outbound?: Secret;
}
let scope: Scope | undefined;

function scopeOf(trustDomain: string, bundle: string): Scope {
  if (scope?.trustDomain !== trustDomain || scope.bundle !== bundle) {
    scope = {
      trustDomain,
      bundle,
      inbound: new Map(),
      inboundTcp: new IdentityMemo(),
    };
  }
  return scope;
}

/** Builds the secrets of one proxy; what every name needs is looked up once. */
class SecretBuilder {
  private readonly own: string;
  private readonly bundle: string;

  constructor(
    private readonly proxy: ProxyContext,
    private readonly ctx: GenerationContext,
  ) {
    this.own = identityKey(proxy.identity);
    this.bundle = ctx.secrets.trustBundlePem;
  }

  secret(name: string): Secret | undefined {
    const { own, bundle, ctx } = this;
    if (name.startsWith(SERVICE_CERT)) {
      // Never another identity's key, whatever the proxy asks for: the fixed
      // name stands for the stream's own identity, and OSM's per-identity name
      // is answered for that identity only.
      if (name !== OWN_SERVICE_CERT && name.slice(SERVICE_CERT.length) !== own) return undefined;
      const cert = ctx.secrets.serviceCertificate(own);
      if (!cert) return undefined; // not issued yet: sent once it is (xDS rule 8)
      return certSecrets.get([cert], name, () => ({
        name,
        tls_certificate: {
          certificate_chain: { inline_string: cert.certPem },
          private_key: { inline_string: cert.keyPem },
        },
      }));
    }
    if (name.startsWith(INGRESS_TLS_PREFIX)) {
      // Only the gateway presents Ingress certificates, and only those its Ingresses name.
      if (this.proxy.identity.kind !== 'gateway') return undefined;
      const key = name.slice(INGRESS_TLS_PREFIX.length);
      if (!gatewayPlan(ctx.mesh).tls.some((t) => t.secret === key)) return undefined;
      const pair = ctx.secrets.ingressTlsCertificate?.(key);
      if (!pair) return undefined;
      return certSecrets.get([pair], name, () => ({
        name,
        tls_certificate: {
          certificate_chain: { inline_string: pair.certPem },
          private_key: { inline_string: pair.keyPem },
        },
      }));
    }
    if (bundle === '') return undefined;
    if (name === OUTBOUND_TRUST_BUNDLE) {
      // The CA alone: the SANs each cluster accepts are in the cluster
      // (common/tls.ts), and Envoy appends this context's matchers to those,
      // so any here would widen every cluster. Public data, the same for
      // every proxy: served to any sidecar or gateway (proxyless gRPC has no
      // SDS, generators.ts), whatever its policy.
      const s = scopeOf(ctx.mesh.trustDomain, bundle);
      s.outbound ??= { name, validation_context: { trusted_ca: { inline_string: bundle } } };
      return s.outbound;
    }
    if (name.startsWith(INBOUND_ROOT)) {
      if (name.slice(INBOUND_ROOT.length) !== own) return undefined;
      const { inbound, trustDomain } = scopeOf(ctx.mesh.trustDomain, bundle);
      let message = inbound.get(name);
      if (!message) {
        message = validationContext(name, bundle, inboundSanMatchers(trustDomain));
        inbound.set(name, message);
      }
      return message;
    }
    if (name.startsWith(INGRESS_ROOT)) {
      if (name.slice(INGRESS_ROOT.length) !== own) return undefined;
      // Ingress client certificates (certificate.ingressGateway) carry DNS
      // SANs, not a SPIFFE id: the CA alone here, the principals in RBAC.
      const { inbound } = scopeOf(ctx.mesh.trustDomain, bundle);
      let message = inbound.get(name);
      if (!message) {
        message = { name, validation_context: { trusted_ca: { inline_string: bundle } } };
        inbound.set(name, message);
      }
      return message;
    }
    if (name.startsWith(INBOUND_TCP_ROOT_PREFIX)) {
      const p = inboundTcpPort(this.proxy, name);
      if (!p) return undefined;
      const { inboundTcp, trustDomain } = scopeOf(ctx.mesh.trustDomain, bundle);
      // The rule lists inboundRulesOf merges, in a fixed order.
      const lists = p.servicePorts.map((port) => ctx.mesh.inboundRules(p.service.key, port));
      return inboundTcp.get(lists, name, () =>
        validationContext(name, bundle, inboundTcpSanMatchers(lists.flat(), trustDomain)),
      );
    }
    return undefined;
  }
}

/** Every secret name a proxy's listeners and clusters reference. */
function defaultNames(proxy: ProxyContext, ctx: GenerationContext): string[] {
  const own = identityKey(proxy.identity);
  if (proxy.identity.kind === 'gateway') {
    const names = [OWN_SERVICE_CERT];
    for (const t of servableTls(gatewayPlan(ctx.mesh), ctx.secrets))
      names.push(ingressTlsSecretName(t.secret));
    if (proxyOutboundPlan(ctx.mesh, proxy).upstreamServices.size > 0) names.push(OUTBOUND_TRUST_BUNDLE);
    return names;
  }
  const names = [OWN_SERVICE_CERT, inboundRootSecretName(own)];
  const ports = inboundPorts(proxy);
  for (const p of ports) {
    if (!isHttpLike(p.port)) names.push(inboundTcpRootSecretName(p.service.key, p.port.targetPort));
  }
  const ingress = ingressInputs(ctx.mesh, ports);
  if (ingress.some((i) => i.ingress.protocol === 'https' && !i.ingress.skipClientCertValidation))
    names.push(ingressRootSecretName(own));
  if (proxyOutboundPlan(ctx.mesh, proxy).upstreamServices.size > 0) names.push(OUTBOUND_TRUST_BUNDLE);
  return names;
}

/** Serves the requested secrets, or every secret the proxy references when `requested` is undefined. */
export const sdsGenerator: ResourceGenerator = {
  typeUrl: TypeUrl.Secret,
  generate(proxy, ctx, requested): Resource[] {
    const out: Resource[] = [];
    const builder = new SecretBuilder(proxy, ctx);
    for (const name of requested ?? defaultNames(proxy, ctx)) {
      const message = builder.secret(name);
      if (message) out.push({ name, typeUrl: TypeUrl.Secret, message });
    }
    return byName(out);
  },
  refusal: secretRefusal,
};
