// SDS: the proxy's own service certificate and the validation contexts its
// inbound and outbound mTLS use (names.ts). A proxy only ever gets its own
// identity's key: names for other identities are never answered.
import type { ProxyContext } from '../../catalog/types.js';
import { identityKey, spiffeId } from '../../mesh/identity.js';
import { SanType } from '../common/enums.js';
import { inboundPorts, inboundRulesOf } from '../common/inbound.js';
import { IdentityMemo, NONE } from '../common/memo.js';
import { byName, outboundPlan } from '../common/outbound.js';
import { inboundRootSecretName, outboundRootSecretName, serviceCertSecretName } from '../names.js';
import {
  type GenerationContext,
  type ProtoObject,
  type Resource,
  type ResourceGenerator,
  TypeUrl,
} from '../types.js';

const SERVICE_CERT = serviceCertSecretName('');
const INBOUND_ROOT = inboundRootSecretName('');
const OUTBOUND_ROOT = outboundRootSecretName('');

function validationContext(
  name: string,
  trustBundle: string,
  sans: readonly string[] | undefined,
): ProtoObject {
  const ctx: ProtoObject = { trusted_ca: { inline_string: trustBundle } };
  // The typed form, URI SANs (skein's workload certificates name their
  // identity in a URI SAN only, spiffeId): Envoy counts match_subject_alt_names
  // as a deprecated feature (runtime.deprecated_feature_use).
  if (sans) {
    ctx['match_typed_subject_alt_names'] = sans.map((exact) => ({
      san_type: SanType.URI,
      matcher: { exact },
    }));
  }
  return { name, validation_context: ctx };
}

/**
 * SPIFFE ids allowed to call this pod, or undefined for "any mesh identity"
 * (permissive mode, or a rule with sources 'any'). With no allowed source at
 * all the CA alone is checked and the RBAC filters deny every request: an
 * absent secret would instead stall the whole inbound listener while warming.
 */
function inboundSans(proxy: ProxyContext, ctx: GenerationContext): string[] | undefined {
  if (ctx.mesh.permissive) return undefined;
  const sans = new Set<string>();
  for (const p of inboundPorts(proxy)) {
    for (const rule of inboundRulesOf(ctx.mesh, p)) {
      if (rule.sources === 'any') return undefined;
      for (const id of rule.sources) sans.add(spiffeId(id, ctx.mesh.trustDomain));
    }
  }
  return sans.size > 0 ? [...sans].sort() : undefined;
}

// Secrets memoised on what they are built from, so an unchanged secret is the
// same message (and encoding) across views: the issued certificate object,
// the service identities (the same array while unchanged, MeshView contract),
// the inbound rule lists. Validation contexts embed the trust domain and the
// trust bundle: they live in a scope that a change of either replaces.
const certSecrets = new IdentityMemo<ProtoObject>();
interface Scope {
  readonly trustDomain: string;
  readonly bundle: string;
  readonly inbound: IdentityMemo<ProtoObject>;
  readonly outbound: IdentityMemo<ProtoObject>;
}
let scope: Scope | undefined;

function scopeOf(trustDomain: string, bundle: string): Scope {
  if (scope?.trustDomain !== trustDomain || scope.bundle !== bundle) {
    scope = { trustDomain, bundle, inbound: new IdentityMemo(), outbound: new IdentityMemo() };
  }
  return scope;
}

/** The inbound rule lists inboundSans reads, in a fixed order; the only view input besides scalars. */
function inboundRuleLists(proxy: ProxyContext, ctx: GenerationContext): object[] {
  const parts: object[] = [NONE];
  for (const p of inboundPorts(proxy)) {
    for (const port of p.servicePorts) parts.push(ctx.mesh.inboundRules(p.service.key, port));
  }
  return parts;
}

/** Builds the secrets of one proxy; what every name needs is looked up once. */
class SecretBuilder {
  private readonly own: string;
  private readonly bundle: string;
  private upstream: ReadonlyMap<string, unknown> | undefined;

  constructor(
    private readonly proxy: ProxyContext,
    private readonly ctx: GenerationContext,
  ) {
    this.own = identityKey(proxy.identity);
    this.bundle = ctx.secrets.trustBundlePem;
  }

  secret(name: string): ProtoObject | undefined {
    const { own, bundle, ctx } = this;
    if (name.startsWith(SERVICE_CERT)) {
      // Never another identity's key, whatever the proxy asks for.
      if (name.slice(SERVICE_CERT.length) !== own) return undefined;
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
    if (bundle === '') return undefined;
    if (name.startsWith(OUTBOUND_ROOT)) {
      const serviceKey = name.slice(OUTBOUND_ROOT.length);
      // Only for services this proxy has clusters for.
      this.upstream ??= outboundPlan(ctx.mesh, this.proxy.identity).upstreamServices;
      if (!this.upstream.has(serviceKey)) return undefined;
      const ids = ctx.mesh.serviceIdentities(serviceKey);
      // No identity yet means no SAN to pin: an empty list would accept any mesh
      // certificate, so send nothing until the service has pods.
      if (ids.length === 0) return undefined;
      const trustDomain = ctx.mesh.trustDomain;
      return scopeOf(trustDomain, bundle).outbound.get([ids], name, () => {
        const sans = [...new Set(ids.map((id) => spiffeId(id, trustDomain)))].sort();
        return validationContext(name, bundle, sans);
      });
    }
    if (name.startsWith(INBOUND_ROOT)) {
      if (name.slice(INBOUND_ROOT.length) !== own) return undefined;
      const memo = scopeOf(ctx.mesh.trustDomain, bundle).inbound;
      return memo.get(inboundRuleLists(this.proxy, ctx), `${name}|${ctx.mesh.permissive}`, () =>
        validationContext(name, bundle, inboundSans(this.proxy, ctx)),
      );
    }
    return undefined;
  }
}

/** Every secret name a proxy's listeners and clusters reference. */
function defaultNames(proxy: ProxyContext, ctx: GenerationContext): string[] {
  const own = identityKey(proxy.identity);
  const names = [serviceCertSecretName(own), inboundRootSecretName(own)];
  for (const key of outboundPlan(ctx.mesh, proxy.identity).upstreamServices.keys()) {
    names.push(outboundRootSecretName(key));
  }
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
};
