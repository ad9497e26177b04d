import type { Json } from './pod.js';

/** The RFC 6902 operations the injector emits. */
export type JsonPatchOperation =
  | { op: 'add'; path: string; value: Json }
  | { op: 'replace'; path: string; value: Json }
  | { op: 'remove'; path: string };

/** One reference token of an RFC 6901 JSON Pointer: `~` → `~0` first, then `/` → `~1`. */
export function escapePointerToken(token: string): string {
  return token.replaceAll('~', '~0').replaceAll('/', '~1');
}

/** A JSON Pointer from raw tokens, e.g. ['metadata','labels','skein.dev/proxy-uuid']. */
export function pointer(...tokens: (string | number)[]): string {
  return tokens.map((t) => `/${escapePointerToken(String(t))}`).join('');
}
