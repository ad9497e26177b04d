// Test helper: a small RFC 6902 applier for the operations the injector emits
// (add, replace, remove), strict about the parts the API server is strict
// about: the parent must exist, `replace`/`remove` need an existing target,
// and `-` appends only to arrays.
import type { JsonPatchOperation } from '../../../pkg/injector/jsonpatch.js';
import { isJsonObject, type Json } from '../../../pkg/injector/pod.js';

function unescapeToken(token: string): string {
  // RFC 6901: `~1` → `/` first, then `~0` → `~`.
  return token.replaceAll('~1', '/').replaceAll('~0', '~');
}

function tokens(path: string): string[] {
  if (!path.startsWith('/')) throw new Error(`JSON Pointer ${path} must start with /`);
  return path.slice(1).split('/').map(unescapeToken);
}

function index(arr: Json[], token: string, forAdd: boolean): number {
  if (token === '-' && forAdd) return arr.length;
  if (!/^(0|[1-9][0-9]*)$/.test(token)) throw new Error(`bad array index ${token}`);
  const i = Number(token);
  if (i > arr.length || (!forAdd && i === arr.length)) throw new Error(`array index ${i} out of range`);
  return i;
}

export function applyPatch(doc: Json, patch: readonly JsonPatchOperation[]): Json {
  const root: Json = structuredClone(doc);
  for (const op of patch) {
    const path = tokens(op.path);
    const last = path.pop();
    if (last === undefined) throw new Error('the injector never patches the document root');
    let parent: Json = root;
    for (const t of path) {
      const next: Json | undefined = Array.isArray(parent)
        ? parent[index(parent, t, false)]
        : isJsonObject(parent)
          ? parent[t]
          : undefined;
      if (next === undefined) throw new Error(`${op.path}: ${t} does not exist`);
      parent = next;
    }
    if (Array.isArray(parent)) {
      const i = index(parent, last, op.op === 'add');
      if (op.op === 'add') parent.splice(i, 0, structuredClone(op.value));
      else if (op.op === 'replace') parent[i] = structuredClone(op.value);
      else parent.splice(i, 1);
    } else if (isJsonObject(parent)) {
      if (op.op !== 'add' && !(last in parent)) throw new Error(`${op.path}: nothing to ${op.op}`);
      if (op.op === 'remove') delete parent[last];
      else parent[last] = structuredClone(op.value);
    } else {
      throw new Error(`${op.path}: parent is not a container`);
    }
  }
  return root;
}
