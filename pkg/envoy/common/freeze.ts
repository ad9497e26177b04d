/**
 * Freezes an object and everything it holds. Generators share some messages
 * between resources (an access log on every HCM); frozen, they cannot be
 * changed by one user under another, and the encoder may pack them once
 * (proto/direct-encode.ts).
 */
export function deepFreeze<T extends object>(value: T): T {
  for (const v of Object.values(value))
    if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) deepFreeze(v);
  return Object.freeze(value);
}
