/**
 * A token bucket like client-go's default client rate limiter (flowcontrol
 * NewTokenBucketRateLimiter): `burst` requests may go at once, then `qps` per
 * second. Waiters are served in arrival order so a burst of relists cannot
 * starve an earlier caller.
 */
export class TokenBucket {
  private tokens: number;
  private last: number;
  private readonly queue: { resolve: () => void; reject: (err: unknown) => void; cleanup: () => void }[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly qps: number,
    readonly burst: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    if (!(qps > 0)) throw new Error(`qps must be > 0, got ${qps}`);
    if (!(burst >= 1)) throw new Error(`burst must be >= 1, got ${burst}`);
    this.tokens = burst;
    this.last = this.now();
  }

  /** Resolves when the caller may send one request; rejects if `signal` aborts first. */
  take(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    this.refill();
    if (this.queue.length === 0 && this.tokens >= 1) {
      this.tokens -= 1;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const i = this.queue.indexOf(entry);
        if (i >= 0) this.queue.splice(i, 1);
        if (this.queue.length === 0) {
          clearTimeout(this.timer);
          this.timer = undefined;
        }
        reject(signal?.reason);
      };
      const entry = {
        resolve,
        reject,
        cleanup: () => signal?.removeEventListener('abort', onAbort),
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.queue.push(entry);
      this.schedule();
    });
  }

  /**
   * Takes `n` tokens now if there are that many and nobody is waiting; never
   * waits. For callers that refuse rather than queue (the ADS stream limits).
   */
  tryTake(n = 1): boolean {
    this.refill();
    if (this.queue.length > 0 || this.tokens < n) return false;
    this.tokens -= n;
    return true;
  }

  /** Waiting callers (for tests and metrics). */
  get waiting(): number {
    return this.queue.length;
  }

  private refill(): void {
    const now = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
    this.last = now;
  }

  private schedule(): void {
    if (this.timer !== undefined) return;
    const wait = Math.max(0, ((1 - this.tokens) / this.qps) * 1000);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.drain();
    }, Math.ceil(wait));
  }

  private drain(): void {
    this.refill();
    while (this.queue.length > 0 && this.tokens >= 1) {
      this.tokens -= 1;
      const next = this.queue.shift();
      next?.cleanup();
      next?.resolve();
    }
    if (this.queue.length > 0) this.schedule();
  }
}
