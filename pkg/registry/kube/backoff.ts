export interface BackoffOptions {
  /** First delay, in ms (default 500). */
  initialMs?: number;
  /** Upper bound of any delay, in ms (default 30 000, like client-go's reflector cap). */
  maxMs?: number;
  /** Growth per failure (default 2). */
  factor?: number;
}

/**
 * Exponential backoff with "equal jitter": each delay is uniformly drawn from
 * [d/2, d] where d doubles per failure up to the cap. The jitter spreads the
 * reconnects of many watches (and many controllers) after an API server restart.
 */
export class Backoff {
  private readonly initialMs: number;
  private readonly maxMs: number;
  private readonly factor: number;
  private failures = 0;

  constructor(
    options: BackoffOptions = {},
    private readonly random: () => number = Math.random,
  ) {
    this.initialMs = options.initialMs ?? 500;
    this.maxMs = options.maxMs ?? 30_000;
    this.factor = options.factor ?? 2;
  }

  /** The delay before the next attempt; each call counts one more failure. */
  next(): number {
    const ceiling = Math.min(this.maxMs, this.initialMs * this.factor ** this.failures);
    this.failures++;
    return ceiling / 2 + this.random() * (ceiling / 2);
  }

  reset(): void {
    this.failures = 0;
  }

  get attempts(): number {
    return this.failures;
  }
}
