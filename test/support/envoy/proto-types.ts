// The Envoy protos as parsed from their .proto files (envoyProtoRoot), for
// tests: every type of the listed files with its options (PGV rules), where
// the controller's runtime root holds only what skein writes, without options.
// Decoding skein's bytes with these types checks the encoder against the
// protos themselves rather than against the descriptor it was built from.
import type protobuf from 'protobufjs';
import type { ProtoObject } from '../../../pkg/envoy/types.js';
import { envoyProtoRoot } from '../../../pkg/xds/proto/root.js';

const types = new Map<string, protobuf.Type>();

/** A message type of the parsed protos by type URL or full name. */
export function parsedType(typeUrlOrName: string): protobuf.Type {
  let type = types.get(typeUrlOrName);
  if (type === undefined) {
    type = envoyProtoRoot().lookupType(typeUrlOrName.replace(/^type\.googleapis\.com\//, ''));
    types.set(typeUrlOrName, type);
  }
  return type;
}

/** Decodes with the parsed protos, to the form pkg/xds/proto/codec.ts decodeMessage gives. */
export function decodeParsed(typeUrl: string, bytes: Uint8Array): ProtoObject {
  const type = parsedType(typeUrl);
  return type.toObject(type.decode(bytes), { json: true, enums: String, longs: Number }) as ProtoObject;
}
