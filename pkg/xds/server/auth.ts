import type { PeerCertificate } from 'node:tls';
import { InvalidProxyIdentityError, type ProxyIdentity, parseProxyCommonName } from '../../mesh/identity.js';

/** A stream that cannot be tied to a valid proxy identity (closed with UNAUTHENTICATED). */
export class AuthenticationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AuthenticationError';
  }
}

/** Parses a proxy CN and checks it belongs to our trust domain. */
export function identityFromCommonName(cn: string, trustDomain: string, source: string): ProxyIdentity {
  let identity: ProxyIdentity;
  try {
    identity = parseProxyCommonName(cn);
  } catch (e) {
    const reason = e instanceof InvalidProxyIdentityError ? e.message : String(e);
    throw new AuthenticationError(`${source}: ${reason}`);
  }
  if (identity.trustDomain !== trustDomain)
    throw new AuthenticationError(
      `${source}: trust domain ${JSON.stringify(identity.trustDomain)} is not ${JSON.stringify(trustDomain)}`,
    );
  return identity;
}

/**
 * Identity on the mTLS port: the CN of the client certificate the TLS layer
 * already verified against our CA (grpc-js only exposes authorized peers).
 */
export function identityFromPeerCertificate(
  cert: PeerCertificate | undefined,
  trustDomain: string,
): ProxyIdentity {
  if (cert === undefined) throw new AuthenticationError('no verified client certificate');
  // Node gives an array when the subject repeats the attribute; a proxy cert has exactly one CN.
  const cn: unknown = cert.subject?.CN;
  if (typeof cn !== 'string' || cn === '')
    throw new AuthenticationError('client certificate has no single subject CN');
  return identityFromCommonName(cn, trustDomain, 'client certificate CN');
}

/** Identity on the plaintext port (proxyless gRPC in local mode): node.id in the CN form. */
export function identityFromNodeId(nodeId: string | undefined, trustDomain: string): ProxyIdentity {
  if (nodeId === undefined || nodeId === '')
    throw new AuthenticationError('first request carries no node.id');
  return identityFromCommonName(nodeId, trustDomain, 'node.id');
}
