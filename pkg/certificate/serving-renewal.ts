// Keeps a serving certificate (the webhook's) fresh: issues it, hands it to
// the server, and issues the next one after a fraction of its lifetime, so
// the server never presents an expired certificate. A failed renewal is
// retried; the old certificate keeps serving meanwhile.
import type { Logger } from '../logger/logger.js';
import type { IssuedCertificate } from './types.js';

export interface ServingRenewalOptions {
  issue: () => Promise<IssuedCertificate>;
  /** Installs a certificate (e.g. InjectorWebhook.setServingCertificate). */
  apply: (cert: IssuedCertificate) => void;
  logger: Logger;
  /** Renew after this fraction of the lifetime left at issuance (default 2/3). */
  renewAt?: number;
  /** Wait before retrying a failed renewal, in ms (default 10 s). */
  retryMs?: number;
  now?: () => number;
}

/** setTimeout's ceiling (2^31-1 ms, ~24.8 days); longer waits are chained. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export class ServingRenewal {
  readonly #o: ServingRenewalOptions;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  #current: IssuedCertificate | undefined;

  constructor(options: ServingRenewalOptions) {
    this.#o = options;
  }

  get current(): IssuedCertificate | undefined {
    return this.#current;
  }

  /** Issues and applies the first certificate (errors propagate), then keeps renewing. */
  async start(): Promise<IssuedCertificate> {
    const cert = await this.#issueAndApply();
    return cert;
  }

  /**
   * Issues and applies a certificate now (a root rotation stage moved the
   * issuer or the bundle); the renewal schedule restarts from it. A failure
   * is retried like a failed renewal.
   */
  renewNow(): void {
    if (this.#stopped) return;
    clearTimeout(this.#timer);
    this.#schedule(0);
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  async #issueAndApply(): Promise<IssuedCertificate> {
    const now = this.#o.now ?? Date.now;
    const issuedAt = now();
    const cert = await this.#o.issue();
    this.#o.apply(cert);
    this.#current = cert;
    const lifetime = cert.notAfter.getTime() - issuedAt;
    this.#schedule(issuedAt + Math.max(0, lifetime) * (this.#o.renewAt ?? 2 / 3));
    return cert;
  }

  #schedule(at: number): void {
    if (this.#stopped) return;
    const now = (this.#o.now ?? Date.now)();
    const wait = Math.max(0, at - now);
    this.#timer = setTimeout(
      () => {
        if (wait > MAX_TIMER_MS) {
          this.#schedule(at);
          return;
        }
        this.#issueAndApply().then(
          (cert) =>
            this.#o.logger.info({ notAfter: cert.notAfter.toISOString() }, 'serving certificate renewed'),
          (err: unknown) => {
            this.#o.logger.error({ err }, 'serving certificate renewal failed; retrying');
            this.#schedule((this.#o.now ?? Date.now)() + (this.#o.retryMs ?? 10_000));
          },
        );
      },
      Math.min(wait, MAX_TIMER_MS),
    );
    // A renewal alone must not keep the process alive.
    this.#timer.unref();
  }
}
