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

/** A malformed annotation: names it, where it is, the value, and what to write instead. */
export function badAnnotation(
  annotation: string,
  where: string,
  value: string,
  expected: string,
): InjectionError {
  return new InjectionError(`annotation ${annotation} on ${where} is ${JSON.stringify(value)}; ${expected}`);
}
