// Reading into pod and patch JSON in tests: a missing step fails the
// assertion naming the path, instead of a TypeError further on.
import assert from 'node:assert/strict';
import { isJsonObject, type Json, type JsonObject } from '../../../pkg/injector/pod.js';

/** The value at `path` (object keys and array indexes); asserts every step exists. */
export function get(v: Json | undefined, ...path: (string | number)[]): Json {
  let cur = v;
  for (const step of path) {
    if (typeof step === 'number') cur = Array.isArray(cur) ? cur[step] : undefined;
    else cur = isJsonObject(cur) ? cur[step] : undefined;
    assert.notEqual(cur, undefined, `missing ${path.join('.')} at ${step}`);
  }
  return cur ?? null;
}

/** The element of `list` whose `name` is `name`; asserts it exists. */
export function named(list: Json, name: string): JsonObject {
  assert.ok(Array.isArray(list));
  const found = list.find((x) => isJsonObject(x) && x['name'] === name);
  assert.ok(isJsonObject(found), `no ${name}`);
  return found;
}
