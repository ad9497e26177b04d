import type { ProtoObject } from '../envoy/types.js';
import type { EncodedResource } from '../xds/cache/encoded.js';
import { decodeMessage } from '../xds/proto/codec.js';
import type { StreamStatus } from '../xds/server/types.js';

const RESPONSE_TYPE = 'envoy.service.discovery.v3.DiscoveryResponse';

export interface ConfigDump {
  streamId: string;
  proxy: string;
  /** typeUrl → the resources last sent, decoded (each with its `@type`). */
  types: { [typeUrl: string]: { version?: string; resources: ProtoObject[] } };
}

/**
 * Decodes encoded resources. Each one is framed as a complete
 * `DiscoveryResponse.resources` entry, so their concatenation is a valid
 * DiscoveryResponse whose `resources` decode as Anys expanded with `@type`.
 */
export function decodeResources(resources: readonly EncodedResource[]): ProtoObject[] {
  if (resources.length === 0) return [];
  const bytes = Buffer.concat(resources.map((r) => r.framed));
  const decoded = decodeMessage(RESPONSE_TYPE, bytes).resources;
  return Array.isArray(decoded) ? decoded.filter(isProtoObject) : [];
}

function isProtoObject(v: unknown): v is ProtoObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** `/debug/config_dump`: what one stream was last sent, per type, decoded to JSON. */
export function buildConfigDump(
  status: StreamStatus,
  sent: ReadonlyMap<string, readonly EncodedResource[]>,
): ConfigDump {
  const types: ConfigDump['types'] = {};
  for (const typeUrl of [...sent.keys()].sort()) {
    const version = status.types[typeUrl]?.sentVersion;
    types[typeUrl] = {
      ...(version !== undefined ? { version } : {}),
      resources: decodeResources(sent.get(typeUrl) ?? []),
    };
  }
  return { streamId: status.streamId, proxy: status.identity.cn, types };
}
