/**
 * A pod the injector refuses to mutate, with a message a person can act on.
 * The webhook answers it as `allowed: false` (HTTP 200), never as a crash.
 */
export class InjectionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InjectionError';
  }
}
