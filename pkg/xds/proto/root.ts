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
/** A file under protos/: dist/pkg/xds/proto → repo root; also works from the source tree and the image. */
function protosFile(name: string): string {
  for (let dir = here; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'protos', name);
    if (existsSync(candidate)) return candidate;
  }
  throw new Error(`protos/${name} not found`);
}

/** The Envoy proto files skein's types come from (protos/envoy-protos.txt). */
export function envoyProtoFiles(): string[] {
  return readFileSync(protosFile('envoy-protos.txt'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
}

let parsed: protobuf.Root | undefined;

/**
 * Every type of the Envoy protos, parsed from the .proto files with their
 * options, field names kept as in the protos: what cmd/envoy-api-gen renders
 * from, and what tests decode Envoy's own output with. ~160 ms and ~30 MB of
 * RSS, so the controller does not load it (envoyRoot).
 */
export function envoyProtoRoot(): protobuf.Root {
  if (parsed) return parsed;
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
  parsed = root;
  return root;
}

let cached: protobuf.Root | undefined;

/**
 * The Root the controller encodes and decodes with: the messages skein writes
 * or reads and nothing else, from the descriptor cmd/envoy-api-gen prunes out
 * of envoyProtoRoot (protos/envoy-descriptor.json; a test checks it is
 * current). Options are left out; packing, the one that changes the wire
 * form, is kept.
 */
export function envoyRoot(): protobuf.Root {
  if (cached) return cached;
  const json: unknown = JSON.parse(readFileSync(protosFile('envoy-descriptor.json'), 'utf8'));
  if (typeof json !== 'object' || json === null)
    throw new Error('protos/envoy-descriptor.json is not an object');
  const root = protobuf.Root.fromJSON(json as protobuf.INamespace);
  root.resolveAll();
  cached = root;
  return root;
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
