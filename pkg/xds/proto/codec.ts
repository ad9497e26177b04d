import type { ProtoObject } from '../../envoy/types.js';
import { encodeDirect } from './direct-encode.js';
import { messageType } from './root.js';

/**
 * Encodes a message given in `fromObject` form, straight to bytes
 * (direct-encode.ts). Unknown fields are ignored, as protobufjs ignores them,
 * so every generator's output is checked by a round trip in its tests
 * (test/support/envoy/roundtrip.ts); an unknown enum name or an Any of a type
 * not loaded throws.
 */
export function encodeMessage(typeUrl: string, message: ProtoObject): Uint8Array {
  return encodeDirect(messageType(typeUrl), message);
}

/** Decodes to plain-object form (proto field names, Anys expanded with `@type`). */
export function decodeMessage(typeUrl: string, bytes: Uint8Array): ProtoObject {
  const type = messageType(typeUrl);
  return type.toObject(type.decode(bytes), { json: true, enums: String, longs: Number }) as ProtoObject;
}
