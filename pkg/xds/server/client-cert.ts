// The client certificate an mTLS ADS stream was opened with: its validity, so
// the server can end the stream when it expires and the bootstrap rotation
// (pkg/injector/bootstrap-rotation.ts) can tell when a proxy's is due.
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

// setTimeout fires at once for delays above 2^31-1 ms (~24.8 days): longer waits re-arm.
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Calls `fn` at `at` (epoch ms), however far away; the returned function cancels it. */
export function callAt(at: number, fn: () => void, now: () => number = Date.now): () => void {
  let timer: NodeJS.Timeout | undefined;
  const arm = (): void => {
    const wait = at - now();
    if (wait <= 0) {
      timer = undefined;
      fn();
      return;
    }
    timer = setTimeout(arm, Math.min(wait, MAX_TIMER_MS));
    timer.unref();
  };
  arm();
  return () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
  };
}
