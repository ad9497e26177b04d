// Renders the runtime descriptor: the protobufjs JSON of only the messages and
// enums skein encodes or decodes, without options (validation rules, package
// names) or comments. Parsing the ~30 Envoy .proto files with their imports on
// the first request cost ~160 ms and ~30 MB of RSS; the descriptor holds what
// the encoder reads (field numbers, types, labels, map keys, oneofs, packing).
import protobuf from 'protobufjs';

const ANY = 'google.protobuf.Any';

/** Plain JSON of protobufjs' `toJSON`/`fromJSON` form. */
type Json = { [key: string]: unknown };

function isJson(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function fullName(o: protobuf.ReflectionObject): string {
  return o.fullName.replace(/^\./, '');
}

/** Every message and enum reachable from the roots (Any included; its payloads are roots of their own). */
export function descriptorTypes(root: protobuf.Root, roots: readonly string[]): Set<string> {
  const seen = new Set<string>();
  const visit = (t: protobuf.Type | protobuf.Enum): void => {
    const name = fullName(t);
    if (seen.has(name)) return;
    seen.add(name);
    if (t instanceof protobuf.Enum) return;
    for (const field of t.fieldsArray) {
      field.resolve();
      const rt = field.resolvedType;
      if (rt instanceof protobuf.Type || rt instanceof protobuf.Enum) visit(rt);
    }
  };
  for (const name of [ANY, ...roots]) visit(root.lookupType(name));
  return seen;
}

/** A field as the encoder reads it: the packed option is the only one that changes the wire form. */
function fieldJson(f: Json): Json {
  const out: Json = {};
  for (const k of ['rule', 'type', 'keyType', 'id']) if (f[k] !== undefined) out[k] = f[k];
  const options = f['options'];
  if (isJson(options) && options['packed'] !== undefined) out['options'] = { packed: options['packed'] };
  return out;
}

/** The kept part of one namespace, type or enum of `root.toJSON()`, or undefined when nothing under it is kept. */
function prune(node: Json, name: string, keep: ReadonlySet<string>): Json | undefined {
  // The edition (proto2, proto3) decides defaults such as packing, for the node and what it declares.
  const out: Json = node['edition'] !== undefined ? { edition: node['edition'] } : {};
  const kept = keep.has(name);
  if (kept) {
    if (isJson(node['values'])) out['values'] = node['values'];
    const fields = node['fields'];
    if (isJson(fields)) {
      const f: Json = {};
      for (const [k, v] of Object.entries(fields)) if (isJson(v)) f[k] = fieldJson(v);
      out['fields'] = f;
    }
    const oneofs = node['oneofs'];
    if (isJson(oneofs)) {
      const o: Json = {};
      for (const [k, v] of Object.entries(oneofs)) if (isJson(v)) o[k] = { oneof: v['oneof'] };
      out['oneofs'] = o;
    }
  }
  const nested = node['nested'];
  if (isJson(nested)) {
    const n: Json = {};
    for (const [k, v] of Object.entries(nested)) {
      if (!isJson(v)) continue;
      const child = prune(v, name === '' ? k : `${name}.${k}`, keep);
      if (child !== undefined) n[k] = child;
    }
    if (Object.keys(n).length > 0) out['nested'] = n;
  }
  if (!kept && out['nested'] === undefined) return undefined;
  return out;
}

/** The descriptor's JSON text for `roots` (full message names), one namespace level a line. */
export function renderDescriptor(root: protobuf.Root, roots: readonly string[]): string {
  const keep = descriptorTypes(root, roots);
  const pruned = prune(root.toJSON() as Json, '', keep) ?? {};
  return `${JSON.stringify(pruned)}\n`;
}
