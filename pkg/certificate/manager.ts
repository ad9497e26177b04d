import { createPrivateKey, verify, X509Certificate } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { Logger } from '../logger/logger.js';
import {
  type Identity,
  identityKey,
  type ProxyIdentity,
  proxyCommonName,
  serviceIdentityName,
  spiffeId,
} from '../mesh/identity.js';
import { ECDSA_WITH_SHA256_DER, type LeafFields, pemDer, readLeaf, subjectNameDer } from './der-read.js';
import type { CertificateAuthority, IssuedCertificate, SecretSource } from './types.js';

export interface CertificateManagerOptions {
  ca: CertificateAuthority;
  /** Validity of workload certificates (MeshConfig `certificate.serviceCertValidityDuration`). */
  validityMs: number;
  trustDomain: string;
  logger: Logger;
  /** Wall clock in ms; tests may replace it. */
  now?: () => number;
  /**
   * Renew at least this long before expiry, so a failing CA leaves time to
   * retry (default 1 min). Never pulls renewal earlier than half the lifetime.
   */
  minRenewMarginMs?: number;
  /** First retry delay after a failed renewal (default 1 s), doubling up to `retryMaxMs` (default 1 min). */
  retryInitialMs?: number;
  retryMaxMs?: number;
  /**
   * Where an identity's certificate may already be (local mode: the workload
   * files a previous run wrote). On an identity's first `ensure`, a certificate
   * found here is adopted instead of issuing one, if this CA signed it for this
   * identity and it is not yet due for renewal; anything else is ignored.
   */
  load?: (identity: Identity) => Promise<{ certPem: string; keyPem: string } | undefined>;
}

/** What `list()` shows about a managed certificate: never the key. */
export interface ManagedCertificateInfo {
  identityKey: string;
  commonName: string;
  uriSans: string[];
  dnsSans: string[];
  serialNumber: string;
  notBefore: Date;
  notAfter: Date;
  renewAt: Date;
}

export interface CertificateManagerEvents {
  /** Every issuance of a managed certificate, the first and each renewal. */
  issued: [identityKey: string, certificate: IssuedCertificate];
  /** A renewal round replaced these identities' certificates. */
  rotated: [identityKeys: string[]];
}

interface Entry {
  key: string;
  identity: Identity;
  cert?: IssuedCertificate;
  /** The trust domain `cert` was issued for; a mismatch forces renewal. */
  certTrustDomain?: string;
  inflight?: Promise<IssuedCertificate>;
  renewAt: number;
  /** Lifetime of `cert` as scheduled, for batching renewals that are nearly due. */
  lifetimeMs: number;
  failures: number;
}

const DEFAULT_MIN_RENEW_MARGIN_MS = 60 * 1000;
const DEFAULT_RETRY_INITIAL_MS = 1000;
const DEFAULT_RETRY_MAX_MS = 60 * 1000;
// setTimeout fires immediately for delays above 2^31-1 ms; longer waits re-arm.
const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;
const RENEW_FRACTION = 0.75;
// Issuers backdate notBefore for clock skew (the built-in CA by a minute).
const CLOCK_SKEW_ALLOWANCE_MS = 5 * 60 * 1000;
const BATCH_FRACTION = 0.05;

/**
 * Issues and renews the workload certificate of every identity the mesh
 * serves. SDS reads them synchronously through `serviceCertificate`; the
 * `rotated` event tells it when to push.
 */
export class CertificateManager extends EventEmitter<CertificateManagerEvents> implements SecretSource {
  readonly #ca: CertificateAuthority;
  readonly #log: Logger;
  readonly #now: () => number;
  readonly #minRenewMarginMs: number;
  #version = 0;
  readonly #retryInitialMs: number;
  readonly #retryMaxMs: number;
  readonly #entries = new Map<string, Entry>();
  #validityMs: number;
  #trustDomain: string;
  #timer: NodeJS.Timeout | undefined;
  #timerAt = Number.POSITIVE_INFINITY;
  #stopped = false;
  #renewAllAt = Number.NEGATIVE_INFINITY;
  readonly #load: CertificateManagerOptions['load'];
  #caCert: (IssuingRoot & { bundle: string }) | undefined;

  constructor(opts: CertificateManagerOptions) {
    super();
    assertValidity(opts.validityMs);
    this.#ca = opts.ca;
    this.#validityMs = opts.validityMs;
    this.#trustDomain = opts.trustDomain;
    this.#log = opts.logger;
    this.#now = opts.now ?? Date.now;
    this.#minRenewMarginMs = opts.minRenewMarginMs ?? DEFAULT_MIN_RENEW_MARGIN_MS;
    this.#retryInitialMs = opts.retryInitialMs ?? DEFAULT_RETRY_INITIAL_MS;
    this.#retryMaxMs = opts.retryMaxMs ?? DEFAULT_RETRY_MAX_MS;
    this.#load = opts.load;
  }

  get trustBundlePem(): string {
    return this.#ca.trustBundlePem;
  }

  /** SecretSource.version: moves on every issuance, rotation and forget. */
  get version(): number {
    return this.#version;
  }

  get trustDomain(): string {
    return this.#trustDomain;
  }

  get validityMs(): number {
    return this.#validityMs;
  }

  serviceCertificate(key: string): IssuedCertificate | undefined {
    return this.#entries.get(key)?.cert;
  }

  /**
   * The workload certificate of an identity, issued on first call and renewed
   * from then on. Concurrent first calls share one issuance; a failed first
   * issuance rejects and the next call tries again.
   */
  ensure(identity: Identity): Promise<IssuedCertificate> {
    const key = identityKey(identity);
    const existing = this.#entries.get(key);
    if (existing?.cert) return Promise.resolve(existing.cert);
    if (existing?.inflight) return existing.inflight;
    const entry: Entry = {
      key,
      identity: { namespace: identity.namespace, serviceAccount: identity.serviceAccount },
      renewAt: Number.POSITIVE_INFINITY,
      lifetimeMs: 0,
      failures: 0,
    };
    this.#entries.set(key, entry);
    return this.#first(entry).catch((err: unknown) => {
      if (this.#entries.get(key) === entry && entry.cert === undefined) this.#entries.delete(key);
      throw err;
    });
  }

  /**
   * A proxy's bootstrap certificate (CN `<uuid>.<kind>.<sa>.<ns>.<trust-domain>`,
   * the identity's SPIFFE URI SAN). Not managed: the caller owns its lifetime.
   */
  issueProxyCertificate(p: Omit<ProxyIdentity, 'cn'>, validityMs?: number): Promise<IssuedCertificate> {
    return this.#ca.issue({
      commonName: proxyCommonName(p),
      uriSans: [spiffeId(p, p.trustDomain)],
      validityMs: validityMs ?? this.#validityMs,
      usage: 'both',
    });
  }

  /** New certificates use this validity; existing ones keep theirs until renewed. */
  setValidity(ms: number): void {
    assertValidity(ms);
    if (ms === this.#validityMs) return;
    this.#log.info({ validityMs: ms }, 'service certificate validity changed');
    this.#validityMs = ms;
  }

  /** Certificates name the trust domain, so every managed certificate is renewed now. */
  setTrustDomain(trustDomain: string): void {
    if (trustDomain === this.#trustDomain) return;
    this.#log.info({ trustDomain }, 'trust domain changed, renewing all service certificates');
    this.#trustDomain = trustDomain;
    const now = this.#now();
    for (const entry of this.#entries.values()) entry.renewAt = now;
    this.#schedule();
  }

  /**
   * Renews every managed certificate now (a root rotation stage: the new
   * bundle, or the new issuer, must reach every leaf); one `rotated` event.
   */
  renewAll(): void {
    const now = this.#now();
    this.#renewAllAt = now;
    for (const entry of this.#entries.values()) entry.renewAt = now;
    this.#schedule();
  }

  /** The certificates held now (the rotation's evidence reads their issuer and bundle). */
  *certificates(): Iterable<IssuedCertificate> {
    for (const entry of this.#entries.values()) if (entry.cert !== undefined) yield entry.cert;
  }

  /** Stops managing an identity; its certificate is no longer served. */
  forget(key: string): boolean {
    const removed = this.#entries.delete(key);
    if (removed) {
      this.#version++;
      this.#schedule();
    }
    return removed;
  }

  list(): ManagedCertificateInfo[] {
    const out: ManagedCertificateInfo[] = [];
    for (const entry of this.#entries.values()) {
      const cert = entry.cert;
      if (cert === undefined) continue;
      out.push({
        identityKey: entry.key,
        commonName: cert.commonName,
        uriSans: [...cert.uriSans],
        dnsSans: [...cert.dnsSans],
        serialNumber: cert.serialNumber,
        notBefore: cert.notBefore,
        notAfter: cert.notAfter,
        renewAt: new Date(entry.renewAt),
      });
    }
    return out.sort((a, b) => a.identityKey.localeCompare(b.identityKey));
  }

  /** Stops renewing; certificates already issued stay readable. */
  stop(): void {
    this.#stopped = true;
    this.#clearTimer();
  }

  /** An identity's first certificate: adopted from `load` when usable, issued otherwise. */
  #first(entry: Entry): Promise<IssuedCertificate> {
    const load = this.#load;
    if (load === undefined) return this.#issue(entry);
    const promise = load(entry.identity).then(
      (found) => {
        const adopted = found === undefined ? undefined : this.#adopt(entry, found.certPem, found.keyPem);
        return adopted ?? this.#issue(entry);
      },
      () => this.#issue(entry),
    );
    entry.inflight = promise;
    return promise;
  }

  /** The root that signs new certificates, parsed once per trust bundle. */
  #issuingRoot(): IssuingRoot {
    const bundle = this.#ca.trustBundlePem;
    // The bundle's first root is the issuing one (rotating-ca.ts); a rotation moves it.
    if (this.#caCert?.bundle !== bundle) {
      const cert = new X509Certificate(bundle);
      this.#caCert = { bundle, cert, nameDer: subjectNameDer(cert.raw) };
    }
    return this.#caCert;
  }

  /**
   * Takes over a certificate issued earlier (a previous run of this controller),
   * so a restart does not re-issue every identity's certificate. Only one
   * this CA signed for exactly this identity, with its key, valid now and not
   * yet due for renewal; undefined otherwise (the caller issues instead).
   */
  #adopt(entry: Entry, certPem: string, keyPem: string): IssuedCertificate | undefined {
    const trustDomain = this.#trustDomain;
    let cert: IssuedCertificate;
    try {
      const root = this.#issuingRoot();
      const der = pemDer(certPem);
      const leaf = readLeaf(der);
      const commonName = serviceIdentityName(entry.identity, trustDomain);
      const uri = spiffeId(entry.identity, trustDomain);
      if (
        leaf.subjectCommonName !== commonName ||
        !leaf.uriSans.includes(uri) ||
        !signedBy(leaf, der, root) ||
        !keyMatches(der, keyPem)
      )
        return undefined;
      cert = {
        commonName,
        certPem,
        keyPem,
        caPem: this.#ca.trustBundlePem,
        serialNumber: leaf.serialNumber,
        notBefore: leaf.notBefore,
        notAfter: leaf.notAfter,
        uriSans: leaf.uriSans,
        dnsSans: leaf.dnsSans,
      };
    } catch {
      return undefined;
    }
    const now = this.#now();
    const notBefore = cert.notBefore.getTime();
    const notAfter = cert.notAfter.getTime();
    // Renewal is scheduled on the current validity: a certificate that outlives it is not kept.
    const lifetimeMs = notAfter - notBefore;
    if (!(notBefore <= now) || lifetimeMs > this.#validityMs + CLOCK_SKEW_ALLOWANCE_MS) return undefined;
    const renewAt = this.#renewTime(notBefore, lifetimeMs);
    if (!(renewAt > now)) return undefined;
    entry.inflight = undefined;
    if (this.#entries.get(entry.key) !== entry) return cert;
    entry.cert = cert;
    this.#version++;
    entry.certTrustDomain = trustDomain;
    entry.failures = 0;
    entry.lifetimeMs = lifetimeMs;
    entry.renewAt = renewAt;
    this.#log.debug({ identity: entry.key, serial: cert.serialNumber }, 'adopted service certificate');
    this.#emitSafely('issued', () => this.emit('issued', entry.key, cert));
    this.#schedule();
    return cert;
  }

  #issue(entry: Entry): Promise<IssuedCertificate> {
    const trustDomain = this.#trustDomain;
    const startedAt = this.#now();
    const validityMs = this.#validityMs;
    const promise = this.#ca
      .issue({
        commonName: serviceIdentityName(entry.identity, trustDomain),
        uriSans: [spiffeId(entry.identity, trustDomain)],
        validityMs,
        usage: 'both',
      })
      .then(
        (cert) => {
          entry.inflight = undefined;
          // Forgotten meanwhile: hand the certificate to whoever waited, but do not manage it.
          if (this.#entries.get(entry.key) !== entry) return cert;
          const issuedAt = this.#now();
          entry.cert = cert;
          this.#version++;
          entry.certTrustDomain = trustDomain;
          entry.failures = 0;
          entry.lifetimeMs = lifetimeOf(issuedAt, cert, validityMs);
          // Begun before a renewAll(): it may come from the root that was issuing then.
          const stale = trustDomain !== this.#trustDomain || startedAt <= this.#renewAllAt;
          entry.renewAt = stale ? issuedAt : this.#renewTime(issuedAt, entry.lifetimeMs);
          this.#log.debug(
            { identity: entry.key, serial: cert.serialNumber, notAfter: cert.notAfter },
            'issued service certificate',
          );
          this.#emitSafely('issued', () => this.emit('issued', entry.key, cert));
          this.#schedule();
          return cert;
        },
        (err: unknown) => {
          entry.inflight = undefined;
          throw err;
        },
      );
    entry.inflight = promise;
    return promise;
  }

  /** Renew at 75% of the lifetime, earlier if that leaves less than the margin. */
  #renewTime(issuedAt: number, lifetime: number): number {
    const delay = Math.max(
      lifetime / 2,
      Math.min(lifetime * RENEW_FRACTION, lifetime - this.#minRenewMarginMs),
    );
    return issuedAt + delay;
  }

  #schedule(): void {
    if (this.#stopped) return;
    let next = Number.POSITIVE_INFINITY;
    for (const entry of this.#entries.values()) {
      if (entry.cert !== undefined && entry.inflight === undefined) next = Math.min(next, entry.renewAt);
    }
    if (next === this.#timerAt && this.#timer !== undefined) return;
    this.#clearTimer();
    if (next === Number.POSITIVE_INFINITY) return;
    const delay = Math.min(Math.max(0, next - this.#now()), MAX_TIMER_DELAY_MS);
    this.#timerAt = next;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#timerAt = Number.POSITIVE_INFINITY;
      this.#renewDue().catch((err: unknown) => this.#log.error({ err }, 'certificate renewal round failed'));
    }, delay);
    // Renewal must not keep the process alive on its own.
    this.#timer.unref();
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = Number.POSITIVE_INFINITY;
  }

  async #renewDue(): Promise<void> {
    if (this.#stopped) return;
    const now = this.#now();
    // Certificates issued together come due milliseconds apart; renewing those within 5% of their
    // lifetime in the same round gives one `rotated` event (one SDS push) instead of many.
    const due = [...this.#entries.values()].filter(
      (e) =>
        e.cert !== undefined && e.inflight === undefined && e.renewAt - e.lifetimeMs * BATCH_FRACTION <= now,
    );
    const results = await Promise.allSettled(due.map((entry) => this.#issue(entry)));
    const rotated: string[] = [];
    results.forEach((result, i) => {
      const entry = due[i];
      if (entry === undefined || this.#entries.get(entry.key) !== entry) return;
      if (result.status === 'fulfilled') {
        rotated.push(entry.key);
        return;
      }
      entry.failures += 1;
      const backoff = Math.min(this.#retryInitialMs * 2 ** (entry.failures - 1), this.#retryMaxMs);
      entry.renewAt = this.#now() + backoff;
      this.#log.error(
        { err: result.reason, identity: entry.key, attempt: entry.failures, retryInMs: backoff },
        'renewing service certificate failed',
      );
    });
    if (rotated.length > 0) {
      this.#log.info({ identities: rotated }, 'rotated service certificates');
      this.#emitSafely('rotated', () => this.emit('rotated', rotated));
    }
    this.#schedule();
  }

  // A throwing listener must not break renewal of the other identities.
  #emitSafely(event: keyof CertificateManagerEvents, emit: () => void): void {
    try {
      emit();
    } catch (err) {
      this.#log.error({ err, event }, 'certificate event listener threw');
    }
  }
}

/**
 * Whether `keyPem` is the key of `cert`. An EC key in PKCS#8 carries its public
 * point (RFC 5915 publicKey, which Node writes): finding that point in the
 * certificate costs microseconds, where parsing the key costs ~0.3 ms (1,000
 * identities at every restart). Keys without one are parsed and checked.
 */
function keyMatches(certDer: Buffer, keyPem: string): boolean {
  const der = pemDer(keyPem);
  // ... BIT STRING (0x03), 66 bytes, no unused bits, uncompressed point 0x04 || X || Y (P-256).
  const point = der.subarray(der.length - 65);
  if (der.length > 68 && der[der.length - 68] === 0x03 && der[der.length - 67] === 0x42 && point[0] === 0x04)
    return certDer.includes(point);
  return new X509Certificate(certDer).checkPrivateKey(createPrivateKey(keyPem));
}

/** The root certificate that issues, and its subject Name's DER (a leaf's issuer, byte for byte). */
interface IssuingRoot {
  cert: X509Certificate;
  nameDer: Buffer;
}

/**
 * Whether `root` signed the leaf. skein's own leaves (ECDSA P-256 with SHA-256,
 * the issuer Name copied from the root: leaf-der.ts) are checked on their DER
 * with one signature verification; anything else (an RSA root's leaves, a Name
 * written differently) through OpenSSL's issuer check and verification.
 */
function signedBy(leaf: LeafFields, der: Buffer, root: IssuingRoot): boolean {
  if (leaf.signatureAlgorithm.equals(ECDSA_WITH_SHA256_DER) && leaf.issuer.equals(root.nameDer))
    return verify('sha256', leaf.tbs, root.cert.publicKey, leaf.signature);
  const x = new X509Certificate(der);
  return x.checkIssued(root.cert) && x.verify(root.cert.publicKey);
}

/** The CA may shorten a certificate (root expiry), so trust notAfter when it is lower. */
function lifetimeOf(issuedAt: number, cert: IssuedCertificate, validityMs: number): number {
  return Math.max(0, Math.min(validityMs, cert.notAfter.getTime() - issuedAt));
}

function assertValidity(ms: number): void {
  if (!Number.isFinite(ms) || ms <= 0)
    throw new RangeError(`certificate validity must be positive ms, got ${ms}`);
}
