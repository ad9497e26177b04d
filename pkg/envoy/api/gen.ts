// Renders TypeScript types for the Envoy messages skein emits, from the
// protobufjs Root the encoder loads (pkg/xds/proto/root.ts), in exactly the
// form the encoder's `Type.fromObject` accepts: proto field names, every
// field optional, enums by name or number, 64-bit integers as string or
// number, bytes as base64 strings, Anys as `{ '@type': url, ...fields }`
// (protobufjs' only well-known-type wrapper, src/wrappers.js), every other
// well-known type (Duration, UInt32Value, Struct, ...) as its plain message.
// Only messages reachable from the roots are emitted; an Any stops the walk,
// its payloads are roots of their own.
import protobuf from 'protobufjs';

export interface ApiRoots {
  /** xDS resource type URLs (TypeUrl). */
  resources: readonly string[];
  /** Type URLs of every Any payload skein writes (AnyType). */
  anys: readonly string[];
}

const ANY = 'google.protobuf.Any';
const URL_PREFIX = 'type.googleapis.com/';
const LINE_WIDTH = 110;

const SCALAR: Readonly<Record<string, string>> = {
  double: 'number',
  float: 'number',
  int32: 'number',
  uint32: 'number',
  sint32: 'number',
  fixed32: 'number',
  sfixed32: 'number',
  int64: 'Int64',
  uint64: 'Int64',
  sint64: 'Int64',
  fixed64: 'Int64',
  sfixed64: 'Int64',
  bool: 'boolean',
  string: 'string',
  bytes: 'Bytes',
};

type Named = protobuf.Type | protobuf.Enum;

function fullName(t: Named): string {
  return t.fullName.replace(/^\./, '');
}

/** The outermost message a nested type is declared in (the type itself when top-level). */
function outermost(t: Named): Named {
  let top = t;
  while (top.parent instanceof protobuf.Type) top = top.parent;
  return top;
}

/** The package of a top-level type, version segments left out. */
function packageOf(t: Named): string[] {
  const parent = t.parent;
  const name = parent ? parent.fullName.replace(/^\./, '') : '';
  return name.split('.').filter((s) => s !== '' && !/^v[0-9]/.test(s));
}

function pascal(segment: string): string {
  return segment
    .split('_')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('');
}

/**
 * TypeScript names: a top-level type's proto name, and where two packages
 * define the same name, the shortest package suffix that tells them apart in
 * front, joined by `$` (`HttpRbac$RBAC`, `NetworkRbac$RBAC`, `ConfigRbac$RBAC`); a nested
 * type's is its parent's and its own joined by `_` (`Cluster_DiscoveryType`).
 */
function tsNames(types: readonly Named[]): Map<Named, string> {
  const byName = new Map<string, Named[]>();
  for (const top of new Set(types.map(outermost)))
    byName.set(top.name, [...(byName.get(top.name) ?? []), top]);
  const tops = new Map<Named, string>();
  for (const [name, group] of byName) {
    const [only] = group;
    if (group.length === 1 && only) {
      tops.set(only, name);
      continue;
    }
    const pkgs = group.map(packageOf);
    for (let n = 1; n <= Math.max(...pkgs.map((p) => p.length)); n++) {
      const prefixes = pkgs.map((p) => p.slice(-n).map(pascal).join(''));
      if (new Set(prefixes).size < prefixes.length) continue;
      group.forEach((t, i) => {
        tops.set(t, `${prefixes[i]}$${name}`);
      });
      break;
    }
    if (!group.every((t) => tops.has(t)))
      throw new Error(`cannot name ${group.map(fullName).join(', ')} apart`);
  }
  const out = new Map<Named, string>();
  const used = new Set<string>();
  for (const t of types) {
    const path: string[] = [];
    let cur: Named = t;
    while (cur.parent instanceof protobuf.Type) {
      path.unshift(cur.name);
      cur = cur.parent;
    }
    const name = [tops.get(cur) ?? '', ...path].join('_');
    if (used.has(name)) throw new Error(`two types would be named ${name}`);
    used.add(name);
    out.set(t, name);
  }
  return out;
}

/** Every message and enum reachable from the roots, Anys not followed. */
function reachable(root: protobuf.Root, roots: readonly string[]): Named[] {
  const seen = new Set<Named>();
  const visit = (t: Named): void => {
    if (seen.has(t) || fullName(t) === ANY) return;
    seen.add(t);
    if (t instanceof protobuf.Enum) return;
    for (const field of t.fieldsArray) {
      field.resolve();
      const rt = field.resolvedType;
      if (rt instanceof protobuf.Type || rt instanceof protobuf.Enum) visit(rt);
    }
  };
  for (const name of roots) visit(root.lookupType(name));
  return [...seen];
}

function fieldType(field: protobuf.Field, names: ReadonlyMap<Named, string>): string {
  const rt = field.resolvedType;
  let t: string;
  if (rt instanceof protobuf.Type || rt instanceof protobuf.Enum) {
    t = fullName(rt) === ANY ? 'Any' : (names.get(rt) ?? '');
    if (t === '') throw new Error(`${field.fullName}: ${fullName(rt)} not reached`);
  } else {
    t = SCALAR[field.type] ?? '';
    if (t === '') throw new Error(`${field.fullName}: unknown scalar ${field.type}`);
  }
  // Map keys are strings in fromObject form, whatever the proto key type.
  if (field instanceof protobuf.MapField) return `{ [key: string]: ${t} }`;
  return field.repeated ? `${t}[]` : t;
}

/** `export type X = A | B;`, one member a line once it does not fit (as biome formats it). */
function unionAlias(name: string, members: readonly string[]): string {
  const one = `export type ${name} = ${members.join(' | ')};`;
  if (one.length <= LINE_WIDTH) return one;
  return `export type ${name} =\n${members.map((m) => `  | ${m}`).join('\n')};`;
}

function renderEnum(e: protobuf.Enum, name: string): string {
  const members = [
    ...Object.keys(e.values).map((k) => `'${k}'`),
    ...[...new Set(Object.values(e.values))].sort((a, b) => a - b).map(String),
  ];
  return unionAlias(name, members);
}

/** A same-line note for field names a reader could take for TypeScript (RBAC's match-all `any`). */
function fieldNote(name: string): string {
  return name === 'any' ? ' // the proto field `any` (match everything), not a TypeScript any' : ''; // `any`: that proto field's name
}

function renderMessage(t: protobuf.Type, name: string, names: ReadonlyMap<Named, string>): string {
  const fields = t.fieldsArray;
  // No fields: nothing but `{}` may be written (an index signature of never).
  if (fields.length === 0) return `export type ${name} = { [field: string]: never };`;
  const lines = fields.map((f) => `  ${f.name}?: ${fieldType(f, names)};${fieldNote(f.name)}`);
  return `export type ${name} = {\n${lines.join('\n')}\n};`;
}

function urlMap(
  name: string,
  urls: readonly string[],
  root: protobuf.Root,
  names: Map<Named, string>,
): string {
  const lines = [...new Set(urls)].sort().map((url) => {
    const t = root.lookupType(url.slice(URL_PREFIX.length));
    const body = names.get(t) ?? '';
    // An empty body in an Any: the `@type` alone (an index signature of never would forbid it).
    const value = t.fieldsArray.length === 0 ? 'NoFields' : body;
    return `  '${url}': ${value};`;
  });
  return `export interface ${name} {\n${lines.join('\n')}\n}`;
}

/** The generated module's text. `source` names the package the protos come from, for the header. */
export function renderEnvoyApi(root: protobuf.Root, roots: ApiRoots, source: string): string {
  for (const url of [...roots.resources, ...roots.anys])
    if (!url.startsWith(URL_PREFIX)) throw new Error(`not a type URL: ${url}`);
  const anyUrls = [...new Set([...roots.resources, ...roots.anys])];
  const types = reachable(
    root,
    anyUrls.map((u) => u.slice(URL_PREFIX.length)),
  );
  const names = tsNames(types);
  const taken = new Set(['Any', 'TypedAny', 'Int64', 'Bytes', 'NoFields', 'AnyMessages', 'ResourceMessages']);
  for (const n of names.values()) if (taken.has(n)) throw new Error(`generated name ${n} is reserved`);
  const sorted = [...types].sort((a, b) => {
    const x = names.get(a) ?? '';
    const y = names.get(b) ?? '';
    return x < y ? -1 : x > y ? 1 : 0;
  });
  const out: string[] = [
    `// Generated by cmd/envoy-api-gen from the Envoy protos of ${source}`,
    '// (protos/envoy-protos.txt), in protobufjs fromObject form. Do not edit: run',
    '// `npx tsc -p tsconfig.json && node dist/cmd/envoy-api-gen/main.js` (docs/design.md, "Typed Envoy messages").',
    '',
    '/** A 64-bit integer: protobufjs takes a number or a decimal string. */',
    'export type Int64 = string | number;',
    '/** bytes: protobufjs takes base64 text. */',
    'export type Bytes = string;',
    '/** The payload of an Any whose message has no fields (the `@type` alone). */',
    'export type NoFields = Record<never, never>;',
    '',
    '/** Payload of each Any type URL skein writes (the xDS resources and AnyType in common/xds.ts). */',
    urlMap('AnyMessages', anyUrls, root, names),
    '',
    '/** The message of each xDS resource type URL. */',
    urlMap('ResourceMessages', roots.resources, root, names),
    '',
    '/** An Any whose `@type` names its payload. */',
    "export type TypedAny<U extends keyof AnyMessages> = { '@type': U } & AnyMessages[U];",
    '/** google.protobuf.Any: one of the payloads skein writes. */',
    'export type Any = { [U in keyof AnyMessages]: TypedAny<U> }[keyof AnyMessages];',
  ];
  for (const t of sorted) {
    const name = names.get(t) ?? '';
    out.push('', `/** ${fullName(t)} */`);
    out.push(t instanceof protobuf.Enum ? renderEnum(t, name) : renderMessage(t, name, names));
  }
  return `${out.join('\n')}\n`;
}
