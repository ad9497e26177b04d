// The Node a real Envoy sends (test/bench/fixtures/envoy-<version>-node.json,
// written by capture-node.ts from the binary), encoded for the benchmark
// fleet: what a sidecar's first request of a stream carries, and what the
// controller decodes, instead of a two-field stand-in.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import { messageType } from '../../pkg/xds/proto/root.js';

export const NODE_TYPE = 'envoy.config.core.v3.Node';
export const NODE_FIXTURE_VERSION = '1.40.0';

// dist/test/bench → repo root: the fixture is data, never compiled into dist/.
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

export function nodeFixturePath(version: string = NODE_FIXTURE_VERSION): string {
  return path.join(repoRoot, 'test', 'bench', 'fixtures', `envoy-${version}-node.json`);
}

/** What capture-node.ts writes. */
export interface NodeFixture {
  envoyVersion: string;
  /** Size of the Node as Envoy encoded it. */
  capturedBytes: number;
  /** protobufjs object form (proto field names, enums by name, 64-bit integers as strings). */
  node: Record<string, unknown>;
}

export function isNodeFixture(v: unknown): v is NodeFixture {
  if (typeof v !== 'object' || v === null) return false;
  const f: Record<string, unknown> = { ...v };
  return (
    typeof f['envoyVersion'] === 'string' &&
    typeof f['capturedBytes'] === 'number' &&
    typeof f['node'] === 'object' &&
    f['node'] !== null
  );
}

export function readNodeFixture(file: string = nodeFixturePath()): NodeFixture {
  const parsed: unknown = JSON.parse(readFileSync(file, 'utf8'));
  if (!isNodeFixture(parsed)) throw new Error(`${file}: not a Node fixture (run test/bench/capture-node.ts)`);
  return parsed;
}

/**
 * The fixture's Node encoded without `id` and `cluster`: the part every proxy
 * shares. A proxy's Node is its own id and cluster followed by these bytes (a
 * protobuf message may list its fields in any order).
 */
export function sharedNodeBytes(fixture: NodeFixture): Uint8Array {
  const { id: _id, cluster: _cluster, ...rest } = fixture.node;
  const type = messageType(NODE_TYPE);
  return type.encode(type.fromObject(rest)).finish();
}

/**
 * Field `fieldNumber` (the request's `node`) holding a Node with this proxy's
 * id and cluster before the shared bytes, ready to append to an encoded request.
 */
export function nodeField(fieldNumber: number, shared: Uint8Array, id: string, cluster: string): Buffer {
  // Node: id = 1, cluster = 2, both strings.
  const own = protobuf.Writer.create().uint32(0x0a).string(id).uint32(0x12).string(cluster).finish();
  const head = protobuf.Writer.create()
    .uint32((fieldNumber << 3) | 2)
    .uint32(own.length + shared.length)
    .finish();
  return Buffer.concat([head, own, shared]);
}
