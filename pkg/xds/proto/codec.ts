import type { ProtoObject } from '../../envoy/types.js';
import { messageType } from './root.js';

/** Encodes a message given in `fromObject` form. Throws on a field protobufjs cannot place. */
export function encodeMessage(typeUrl: string, message: ProtoObject): Uint8Array {
  const type = messageType(typeUrl);
  const invalid = type.verify(message);
  if (invalid) throw new Error(`${typeUrl}: ${invalid}`);
  return type.encode(type.fromObject(message)).finish();
}

/** Decodes to plain-object form (proto field names, Anys expanded with `@type`). */
export function decodeMessage(typeUrl: string, bytes: Uint8Array): ProtoObject {
  const type = messageType(typeUrl);
  return type.toObject(type.decode(bytes), { json: true, enums: String, longs: Number }) as ProtoObject;
}
