import { PROXY_KINDS, type ProxyKind } from './constants.js';

/** A workload identity: a Kubernetes ServiceAccount. */
export interface Identity {
  namespace: string;
  serviceAccount: string;
}

/** The identity of one connected proxy, parsed from its certificate CN. */
export interface ProxyIdentity extends Identity {
  uuid: string;
  kind: ProxyKind;
  trustDomain: string;
  /** `<proxy-uuid>.<kind>.<service-account>.<namespace>.<trust-domain>` */
  cn: string;
}

export function identityKey(id: Identity): string {
  return `${id.namespace}/${id.serviceAccount}`;
}

/** The SPIFFE URI SAN that names an identity in workload certificates. */
export function spiffeId(id: Identity, trustDomain: string): string {
  return `spiffe://${trustDomain}/ns/${id.namespace}/sa/${id.serviceAccount}`;
}

/**
 * The SPIFFE ids a caller pins for a service: its identities', sorted and
 * unique; with none yet (no pods), one that no certificate skein issues
 * carries. An empty list would accept every certificate of the CA (Envoy with
 * no SAN matcher; grpc-js-xds likewise, gRFC A29), and removing the pin
 * instead is no option where a resource cannot be deleted (SotW SDS).
 */
export function pinnedSans(ids: readonly Identity[], trustDomain: string, serviceKey: string): string[] {
  if (ids.length === 0) return [`spiffe://${trustDomain}/skein/no-identity/${serviceKey}`];
  return [...new Set(ids.map((id) => spiffeId(id, trustDomain)))].sort();
}

/** OSM-style service identity `<sa>.<ns>.<trust-domain>` (the CN of service certificates). */
export function serviceIdentityName(id: Identity, trustDomain: string): string {
  return `${id.serviceAccount}.${id.namespace}.${trustDomain}`;
}

export function proxyCommonName(p: Omit<ProxyIdentity, 'cn'>): string {
  return `${p.uuid}.${p.kind}.${p.serviceAccount}.${p.namespace}.${p.trustDomain}`;
}

export class InvalidProxyIdentityError extends Error {
  constructor(
    readonly cn: string,
    reason: string,
  ) {
    super(`invalid proxy identity ${JSON.stringify(cn)}: ${reason}`);
    this.name = 'InvalidProxyIdentityError';
  }
}

// DNS-1123 label: what Kubernetes allows for namespace and service-account names.
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/**
 * Parses a proxy certificate CN. The first four dot-separated parts are the
 * UUID, kind, service account and namespace; the rest is the trust domain
 * (which may itself contain dots).
 */
export function parseProxyCommonName(cn: string): ProxyIdentity {
  const parts = cn.split('.');
  if (parts.length < 5)
    throw new InvalidProxyIdentityError(cn, 'expected <uuid>.<kind>.<sa>.<ns>.<trust-domain>');
  const [uuid, kind, serviceAccount, namespace] = parts as [string, string, string, string];
  const trustDomain = parts.slice(4).join('.');
  if (!UUID.test(uuid))
    throw new InvalidProxyIdentityError(cn, `proxy uuid ${JSON.stringify(uuid)} is not a UUID`);
  if (!(PROXY_KINDS as readonly string[]).includes(kind))
    throw new InvalidProxyIdentityError(cn, `unknown proxy kind ${JSON.stringify(kind)}`);
  if (!DNS_LABEL.test(serviceAccount)) throw new InvalidProxyIdentityError(cn, 'bad service account name');
  if (!DNS_LABEL.test(namespace)) throw new InvalidProxyIdentityError(cn, 'bad namespace name');
  if (trustDomain === '') throw new InvalidProxyIdentityError(cn, 'empty trust domain');
  return { uuid: uuid.toLowerCase(), kind: kind as ProxyKind, serviceAccount, namespace, trustDomain, cn };
}
