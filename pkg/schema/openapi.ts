import { isRecord } from './guards.js';

type Schema = Record<string, unknown>;

const JUNCTORS = ['allOf', 'anyOf', 'oneOf'] as const;

/**
 * Turns a structural OpenAPI v3 schema from a CRD into a JSON schema ajv
 * understands, the way the apiserver reads it:
 * - `x-kubernetes-int-or-string` → integer or string; `nullable` → also null;
 * - every object node with `properties` and no `x-kubernetes-preserve-unknown-fields`
 *   gets `additionalProperties: false`: with `unknownFields: 'reject'` unknown fields
 *   are errors (like kubectl's default strict field validation), with 'prune' they
 *   are dropped (like the apiserver's pruning). Nodes inside allOf/anyOf/oneOf/not are
 *   left open, since structural schemas repeat their fields outside those.
 * Other `x-kubernetes-*` keywords are dropped; ajv runs with strict off anyway.
 */
export function toAjvSchema(node: unknown, inJunctor = false): unknown {
  if (Array.isArray(node)) return node.map((n) => toAjvSchema(n, inJunctor));
  if (!isRecord(node)) return node;
  const out: Schema = {};
  for (const [key, value] of Object.entries(node)) {
    if (key.startsWith('x-kubernetes-')) continue;
    if (key === 'properties' && isRecord(value)) {
      out[key] = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toAjvSchema(v)]));
    } else if (key === 'items' || key === 'additionalProperties') {
      out[key] = toAjvSchema(value);
    } else if ((JUNCTORS as readonly string[]).includes(key) || key === 'not') {
      out[key] = toAjvSchema(value, true);
    } else {
      out[key] = value;
    }
  }
  if (node['x-kubernetes-int-or-string'] === true) {
    out['type'] = ['integer', 'string'];
  }
  if (node['nullable'] === true && typeof out['type'] === 'string') {
    out['type'] = [out['type'], 'null'];
  }
  delete out['nullable'];
  const open = node['x-kubernetes-preserve-unknown-fields'] === true;
  if (!inJunctor && !open && isRecord(node['properties']) && node['additionalProperties'] === undefined) {
    out['additionalProperties'] = false;
  }
  return out;
}
