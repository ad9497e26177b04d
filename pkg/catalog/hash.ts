// UpstreamTrafficSetting `loadBalancer.hashOn`: what RingHash and Maglev hash a
// request on, so that requests with the same key reach the same endpoint
// (session affinity). Checked and compiled here; envoy/common/hash.ts turns
// the keys into the callers' route `hash_policy`.
import { parseDuration } from '../mesh/duration.js';
import type { HashOnSpec, UpstreamTrafficSettingSpec } from '../model/objects.js';
import { durationProblem } from './durations.js';

/** One compiled hash key; `terminal`: stop at this key when the request has it. */
export type HashKey =
  | { header: string; terminal?: boolean }
  | { cookie: string; ttlMs?: number; path?: string; terminal?: boolean }
  | { sourceIP: true; terminal?: boolean };

// RFC 9110 field names and RFC 6265 cookie names are both `token`s.
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// A cookie path is sent in Set-Cookie's Path attribute: no ';' or controls (RFC 6265 §4.1.1).
const COOKIE_PATH = /^\/[\x21-\x3a\x3c-\x7e]*$/;

type LoadBalancerSpec = NonNullable<UpstreamTrafficSettingSpec['loadBalancer']>;

function keyProblems(k: HashOnSpec, field: string): string[] {
  const given = (['header', 'cookie', 'sourceIP'] as const).filter((f) => k[f] !== undefined);
  if (given.length !== 1)
    return [`${field}: needs exactly one of header, cookie, sourceIP (has ${given.join(', ') || 'none'})`];
  const out: string[] = [];
  if (k.header !== undefined && !TOKEN.test(k.header))
    out.push(`${field}.header: ${JSON.stringify(k.header)} is not an HTTP header name`);
  if (k.cookie !== undefined) {
    if (!TOKEN.test(k.cookie.name))
      out.push(`${field}.cookie.name: ${JSON.stringify(k.cookie.name)} is not a cookie name`);
    if (k.cookie.path !== undefined && !COOKIE_PATH.test(k.cookie.path))
      out.push(`${field}.cookie.path: ${JSON.stringify(k.cookie.path)} is not a cookie path (/…, no ';')`);
    const ttl = durationProblem(`${field}.cookie.ttl`, k.cookie.ttl, false);
    if (ttl) out.push(ttl);
    // Envoy writes the TTL as Max-Age, in whole seconds (hash_policy.cc): a fraction would be cut.
    else if (k.cookie.ttl !== undefined && parseDuration(k.cookie.ttl) % 1000 !== 0)
      out.push(`${field}.cookie.ttl: must be whole seconds (it becomes the cookie's Max-Age)`);
  }
  if (k.sourceIP !== undefined && k.sourceIP !== true) out.push(`${field}.sourceIP: only true is meaningful`);
  return out;
}

/** Reasons `lb.hashOn` cannot be used; none when it is absent. */
export function hashOnProblems(lb: LoadBalancerSpec): string[] {
  if (lb.hashOn === undefined) return [];
  // Only the hashing balancers read a hash; any other would ignore it silently.
  if (lb.policy !== 'RingHash' && lb.policy !== 'Maglev')
    return [`spec.loadBalancer.hashOn: only meaningful with policy RingHash or Maglev (not ${lb.policy})`];
  if (lb.hashOn.length === 0) return ['spec.loadBalancer.hashOn: empty (leave it out to hash nothing)'];
  return lb.hashOn.flatMap((k, i) => keyProblems(k, `spec.loadBalancer.hashOn[${i}]`));
}

/** The compiled keys of a valid `hashOn`, in order; header names lower-cased (HTTP/2 sends them so). */
export function compileHashOn(hashOn: readonly HashOnSpec[]): HashKey[] {
  return hashOn.map((k): HashKey => {
    const terminal = k.terminal === true ? { terminal: true } : {};
    if (k.header !== undefined) return { header: k.header.toLowerCase(), ...terminal };
    if (k.cookie !== undefined) {
      const { name, ttl, path } = k.cookie;
      return {
        cookie: name,
        ...(ttl === undefined ? {} : { ttlMs: parseDuration(ttl) }),
        ...(path === undefined ? {} : { path }),
        ...terminal,
      };
    }
    return { sourceIP: true, ...terminal };
  });
}
