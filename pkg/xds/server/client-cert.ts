// The client certificate an mTLS ADS stream was opened with: its validity, so
// the bootstrap rotation (pkg/injector/bootstrap-rotation.ts) can tell when a
// proxy's is due, and /debug/proxies can show it.
import type { PeerCertificate } from 'node:tls';

export interface ClientCertificate {
  /** Epoch ms. */
  notBefore: number;
  /** Epoch ms. */
  notAfter: number;
  /** Hex, as Node prints it. */
  serial: string;
}

/**
 * Reads the validity Node parsed from the verified peer certificate
 * (`valid_from`/`valid_to` are OpenSSL's "Mon DD HH:MM:SS YYYY GMT" form, which
 * Date.parse reads). Undefined when either date is unreadable.
 */
export function clientCertificateOf(cert: PeerCertificate | undefined): ClientCertificate | undefined {
  if (cert === undefined) return undefined;
  const notBefore = Date.parse(cert.valid_from);
  const notAfter = Date.parse(cert.valid_to);
  if (!Number.isFinite(notBefore) || !Number.isFinite(notAfter)) return undefined;
  return { notBefore, notAfter, serial: cert.serialNumber };
}
