import type { ProtoObject } from '../../envoy/types.js';
import { messageType } from './root.js';

/**
 * Encodes a message given in `fromObject` form. protobufjs drops unknown fields
 * silently here, so every generator's output is checked by a round trip in its
 * tests (test/support/envoy/roundtrip.ts). `verify` is not used: it rejects
 * enum names, which `fromObject` accepts.
 */
export function encodeMessage(typeUrl: string, message: ProtoObject): Uint8Array {
  const type = messageType(typeUrl);
  return type.encode(type.fromObject(message)).finish();
}

/** Decodes to plain-object form (proto field names, Anys expanded with `@type`). */
export function decodeMessage(typeUrl: string, bytes: Uint8Array): ProtoObject {
  const type = messageType(typeUrl);
  return type.toObject(type.decode(bytes), { json: true, enums: String, longs: Number }) as ProtoObject;
}
