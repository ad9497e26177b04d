// The kubernetes.io/tls Secrets skein's ingress gateway presents (an Ingress's
// `spec.tls[].secretName`). Fed by a watch of TLS Secrets (the controller
// owns the I/O); keeps each Secret's last valid key pair, so a bad edit is
// reported and the gateway keeps serving the previous certificate.
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { TlsKeyPair } from './types.js';

/** Why a Secret's data is not a usable key pair, or undefined. */
export function tlsSecretProblem(
  certPem: string | undefined,
  keyPem: string | undefined,
): string | undefined {
  if (!certPem) return 'no tls.crt';
  if (!keyPem) return 'no tls.key';
  try {
    const cert = new X509Certificate(certPem);
    const key = createPrivateKey(keyPem);
    if (!cert.checkPrivateKey(key)) return 'tls.key is not the key of the certificate in tls.crt';
    if (Date.parse(cert.validTo) < Date.now()) return `the certificate expired on ${cert.validTo}`;
  } catch (err) {
    return `not a PEM certificate and key: ${err instanceof Error ? err.message : String(err)}`;
  }
  return undefined;
}

/** What a watched Secret decodes to: a key pair, or why not. */
export type TlsSecretEntry = { ok: true; pair: TlsKeyPair; notAfter?: Date } | { ok: false; reason: string };

/** One Secret object as the API returns it (data base64). */
export function decodeTlsSecret(raw: Record<string, unknown>): TlsSecretEntry {
  const data = raw['data'];
  const field = (k: string): string | undefined => {
    if (typeof data !== 'object' || data === null) return undefined;
    const v = (data as Record<string, unknown>)[k];
    return typeof v === 'string' ? Buffer.from(v, 'base64').toString('utf8') : undefined;
  };
  if (raw['type'] !== 'kubernetes.io/tls') return { ok: false, reason: 'not of type kubernetes.io/tls' };
  const certPem = field('tls.crt');
  const keyPem = field('tls.key');
  const reason = tlsSecretProblem(certPem, keyPem);
  if (reason !== undefined || certPem === undefined || keyPem === undefined)
    return { ok: false, reason: reason ?? 'incomplete' };
  return { ok: true, pair: { certPem, keyPem }, notAfter: new Date(new X509Certificate(certPem).validTo) };
}

/** A Secret the gateway cannot use as it is now, and whether an older version still serves. */
export interface TlsSecretIssue {
  secret: string;
  reason: string;
  servingPrevious: boolean;
}

/**
 * The key pairs by `<ns>/<name>`. `version` moves on every change (the
 * SecretSource contract); `change` fires with the keys that changed.
 */
export class IngressTlsSecrets extends EventEmitter<{ change: [string] }> {
  readonly #good = new Map<string, TlsKeyPair>();
  readonly #bad = new Map<string, string>();
  /** notAfter of each good pair: a certificate can expire while in force. */
  readonly #expiry = new Map<string, Date>();
  #version = 0;

  get version(): number {
    return this.#version;
  }

  get(key: string): TlsKeyPair | undefined {
    return this.#good.get(key);
  }

  /** A Secret appeared or changed. An invalid one keeps its last valid pair in force. */
  upsert(key: string, entry: TlsSecretEntry): void {
    if (entry.ok) {
      const old = this.#good.get(key);
      const hadIssue = this.#bad.delete(key);
      if (old && old.certPem === entry.pair.certPem && old.keyPem === entry.pair.keyPem && !hadIssue) return;
      this.#good.set(key, entry.pair);
      if (entry.notAfter) this.#expiry.set(key, entry.notAfter);
      else this.#expiry.delete(key);
    } else {
      if (this.#bad.get(key) === entry.reason) return;
      this.#bad.set(key, entry.reason);
    }
    this.#version++;
    this.emit('change', key);
  }

  delete(key: string): void {
    const had = this.#good.has(key) || this.#bad.has(key);
    if (!had) return;
    this.#good.delete(key);
    this.#bad.delete(key);
    this.#expiry.delete(key);
    this.#version++;
    this.emit('change', key);
  }

  /** Why each of `wanted` (the Secrets Ingresses of class skein name) cannot be presented as it is. */
  issues(wanted: readonly string[], now = Date.now()): TlsSecretIssue[] {
    const out: TlsSecretIssue[] = [];
    for (const secret of wanted) {
      const bad = this.#bad.get(secret);
      const serving = this.#good.has(secret);
      const notAfter = this.#expiry.get(secret);
      if (bad !== undefined) out.push({ secret, reason: bad, servingPrevious: serving });
      else if (serving && notAfter && notAfter.getTime() < now)
        // Still presented (no certificate is no better for clients): replace the Secret.
        out.push({
          secret,
          reason: `the certificate expired on ${notAfter.toISOString()}`,
          servingPrevious: true,
        });
      else if (!serving)
        out.push({ secret, reason: 'no such kubernetes.io/tls Secret', servingPrevious: false });
    }
    return out;
  }
}
