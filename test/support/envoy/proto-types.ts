// The Envoy protos as parsed from their .proto files (envoyProtoRoot), for
// tests: every type of the listed files with its options (PGV rules), where
// the controller's runtime root holds only what skein writes, without options.
// Decoding skein's bytes with these types checks the encoder against the
// protos themselves rather than against the descriptor it was built from.
import type protobuf from 'protobufjs';
import type { ProtoObject, ProtoValue } from '../../../pkg/envoy/types.js';
import { encodeDirect } from '../../../pkg/xds/proto/direct-encode.js';
import { envoyProtoRoot } from '../../../pkg/xds/proto/root.js';
import { messageJson } from '../../../pkg/xds/rest/proto-json.js';

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

/**
 * skein's encoder on a parsed type: for what skein writes only as a file (the
 * bootstrap), which the controller's runtime descriptor does not hold.
 */
export function encodeParsed(typeUrl: string, message: ProtoObject): Uint8Array {
  return encodeDirect(parsedType(typeUrl), message);
}

/** Encoded bytes of a parsed type as proto3 JSON (what Envoy reads from `-c`). */
export function parsedProto3Json(typeUrl: string, bytes: Uint8Array): ProtoValue {
  const type = parsedType(typeUrl);
  return messageJson(type, type.decode(bytes));
}
