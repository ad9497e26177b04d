/** A certificate and key issued by skein's CA, PEM encoded. */
export interface IssuedCertificate {
  commonName: string;
  certPem: string;
  keyPem: string;
  /** The CA bundle that validates this certificate (and its peers). */
  caPem: string;
  serialNumber: string;
  notBefore: Date;
  notAfter: Date;
  uriSans: string[];
  dnsSans: string[];
}

export interface CertificateRequest {
  commonName: string;
  uriSans?: string[];
  dnsSans?: string[];
  validityMs: number;
  /** Server certificates get serverAuth too; every workload cert is both. */
  usage?: 'client' | 'server' | 'both';
}

/**
 * A certificate authority behind skein's CA interface. Providers are pluggable
 * (built-in, later others); the rest of skein only sees this contract.
 * `issue` never returns a certificate the trust bundle does not validate.
 */
export interface CertificateAuthority {
  /** PEM of the root(s) every proxy trusts. */
  readonly trustBundlePem: string;
  issue(request: CertificateRequest): Promise<IssuedCertificate>;
}

/**
 * Synchronous read access to the service certificates SDS serves. The
 * certificate manager issues ahead of time and rotates; generators only read.
 * `undefined` means "not issued yet" — the manager announces when it is.
 */
export interface SecretSource {
  readonly trustBundlePem: string;
  /**
   * Bumped whenever any certificate is issued, rotated or forgotten, so output
   * built from secrets can be cached until it moves. Without it, SDS output
   * is rebuilt on every push.
   */
  readonly version?: number;
  /** The workload certificate of an identity (`<ns>/<sa>`). */
  serviceCertificate(identityKey: string): IssuedCertificate | undefined;
  /**
   * A kubernetes.io/tls Secret `<ns>/<name>` the ingress gateway presents
   * (ingress-tls.ts): the same object while unchanged; undefined when absent,
   * invalid, or the gateway is off. Only the gateway's SDS asks.
   */
  ingressTlsCertificate?(secretKey: string): TlsKeyPair | undefined;
}

/** A certificate chain and its private key, PEM encoded (not issued by skein). */
export interface TlsKeyPair {
  certPem: string;
  keyPem: string;
}
