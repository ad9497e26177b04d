// The node.id a proxyless workload's first ADS request claims, read straight
// from the wire bytes the agent forwards unchanged (it never re-encodes them).
import protobuf from 'protobufjs';

/**
 * Field number of `node` (envoy.config.core.v3.Node): 2 in DiscoveryRequest
 * (after version_info), 1 in DeltaDiscoveryRequest (envoy/service/discovery/v3/discovery.proto).
 */
export const NODE_FIELD = { sotw: 2, delta: 1 } as const;

/** Node.id is field 1 of envoy.config.core.v3.Node (envoy/config/core/v3/base.proto). */
const NODE_ID_FIELD = 1;
const LENGTH_DELIMITED = 2;

/** The last occurrence of a length-delimited field (proto3 merge: the last one wins for a message). */
function lastBytes(bytes: Uint8Array, field: number): Uint8Array | undefined {
  const r = protobuf.Reader.create(bytes);
  let found: Uint8Array | undefined;
  while (r.pos < r.len) {
    const tag = r.uint32();
    if (tag >>> 3 === field && (tag & 7) === LENGTH_DELIMITED) found = r.bytes();
    else r.skipType(tag & 7);
  }
  return found;
}

/**
 * node.id of a SotW or Delta request; undefined when the request carries no
 * node. Throws on bytes that are not a protobuf message.
 */
export function nodeIdOf(request: Uint8Array, nodeField: number): string | undefined {
  const node = lastBytes(request, nodeField);
  if (node === undefined) return undefined;
  const id = lastBytes(node, NODE_ID_FIELD);
  return id === undefined ? '' : new TextDecoder('utf-8', { fatal: true }).decode(id);
}
