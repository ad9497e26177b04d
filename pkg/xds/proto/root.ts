import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

// Envoy's protos come from @grpc/grpc-js-xds's deps/ (never copied into skein);
// google/protobuf/descriptor.proto from protobufjs itself.
const require = createRequire(import.meta.url);
const xdsPackageDir = path.dirname(require.resolve('@grpc/grpc-js-xds/package.json'));
const protobufjsDir = path.dirname(require.resolve('protobufjs/package.json'));

export const INCLUDE_DIRS: readonly string[] = [
  ...['envoy-api', 'xds', 'googleapis', 'protoc-gen-validate'].map((d) =>
    path.join(xdsPackageDir, 'deps', d),
  ),
  protobufjsDir,
];

const here = path.dirname(fileURLToPath(import.meta.url));
// dist/pkg/xds/proto → repo root; also works from the source tree.
function findProtoList(): string {
  for (let dir = here; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'protos', 'envoy-protos.txt');
    if (existsSync(candidate)) return candidate;
  }
  throw new Error('protos/envoy-protos.txt not found');
}

/** The Envoy proto files skein loads (protos/envoy-protos.txt). */
export function envoyProtoFiles(): string[] {
  return readFileSync(findProtoList(), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
}

let cached: protobuf.Root | undefined;

/** One protobufjs Root with every Envoy type skein uses, field names kept as in the protos. */
export function envoyRoot(): protobuf.Root {
  if (cached) return cached;
  const root = new protobuf.Root();
  root.resolvePath = (_origin: string, target: string): string => {
    for (const dir of INCLUDE_DIRS) {
      const candidate = path.join(dir, target);
      if (existsSync(candidate)) return candidate;
    }
    return target;
  };
  root.loadSync(envoyProtoFiles(), { keepCase: true });
  root.resolveAll();
  copyOptionStrings(root);
  cached = root;
  return root;
}

/**
 * The parser's string option values (go_package, previous_message_type, validate rules…) are
 * V8 slices of the .proto file's whole text, so every file's source stayed alive with the
 * root (~0.75 MB of heap). A JSON round trip gives them their own small strings.
 */
function copyOptionStrings(o: protobuf.ReflectionObject): void {
  if (o.options) o.options = JSON.parse(JSON.stringify(o.options)) as Record<string, unknown>;
  if (o.parsedOptions)
    o.parsedOptions = JSON.parse(JSON.stringify(o.parsedOptions)) as typeof o.parsedOptions;
  if (o instanceof protobuf.Enum && o.valuesOptions)
    o.valuesOptions = JSON.parse(JSON.stringify(o.valuesOptions)) as typeof o.valuesOptions;
  if (o instanceof protobuf.Type) {
    for (const f of o.fieldsArray) copyOptionStrings(f);
    for (const f of o.oneofsArray) copyOptionStrings(f);
  }
  if (o instanceof protobuf.Namespace) for (const c of o.nestedArray) copyOptionStrings(c);
}

const types = new Map<string, protobuf.Type>();

/** Looks up a message type by its type URL or full name (memoised: this is on the encode path). */
export function messageType(typeUrlOrName: string): protobuf.Type {
  let type = types.get(typeUrlOrName);
  if (type === undefined) {
    type = envoyRoot().lookupType(typeUrlOrName.replace(/^type\.googleapis\.com\//, ''));
    types.set(typeUrlOrName, type);
  }
  return type;
}
