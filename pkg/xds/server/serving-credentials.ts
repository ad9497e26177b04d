// The ADS port's TLS credentials, replaceable while the server runs: the
// serving certificate is renewed before it expires without a restart and
// without dropping established streams (new handshakes use the new one).
import * as grpc from '@grpc/grpc-js';

type CaListener = (update: { caCertificate: Buffer } | null) => void;
type IdentityListener = (update: { certificate: Buffer; privateKey: Buffer } | null) => void;

export interface ServingTls {
  /** CA bundle that client certificates must chain to. */
  caPem: string;
  certPem: string;
  keyPem: string;
}

/**
 * A grpc-js CertificateProvider fed from memory. One object answers both the
 * CA and the identity listeners: grpc-js 1.14's
 * createCertificateProviderServerCredentials(ca, identity, …) hands its two
 * providers to a constructor declared (identity, ca, …), so passing the same
 * provider twice is the only order-proof way to use it.
 */
export class ServingCredentials {
  private readonly caListeners = new Set<CaListener>();
  private readonly identityListeners = new Set<IdentityListener>();
  private tls: ServingTls;
  /** mTLS required: a handshake without a client certificate from the CA fails. */
  readonly credentials: grpc.ServerCredentials;

  constructor(tls: ServingTls) {
    this.tls = tls;
    const provider = {
      addCaCertificateListener: (l: CaListener) => {
        this.caListeners.add(l);
        // Asynchronously, as grpc-js's own providers do: the server registers its
        // watcher right after adding the listener, and only a later update reaches it.
        process.nextTick(() => l(this.caUpdate()));
      },
      removeCaCertificateListener: (l: CaListener) => void this.caListeners.delete(l),
      addIdentityCertificateListener: (l: IdentityListener) => {
        this.identityListeners.add(l);
        process.nextTick(() => l(this.identityUpdate()));
      },
      removeIdentityCertificateListener: (l: IdentityListener) => void this.identityListeners.delete(l),
    };
    this.credentials = grpc.experimental.createCertificateProviderServerCredentials(provider, provider, true);
  }

  /** Replaces the serving certificate (and CA bundle, when given) for new handshakes. */
  update(tls: Partial<ServingTls> & Pick<ServingTls, 'certPem' | 'keyPem'>): void {
    this.tls = { ...this.tls, ...tls };
    for (const l of this.caListeners) l(this.caUpdate());
    for (const l of this.identityListeners) l(this.identityUpdate());
  }

  private caUpdate() {
    return { caCertificate: Buffer.from(this.tls.caPem) };
  }

  private identityUpdate() {
    return { certificate: Buffer.from(this.tls.certPem), privateKey: Buffer.from(this.tls.keyPem) };
  }
}
