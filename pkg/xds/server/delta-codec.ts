// Codecs of the Delta xDS messages (envoy.service.discovery.v3
// DeltaDiscoveryRequest / DeltaDiscoveryResponse). Requests are decoded by hand
// (request-decode.ts); responses are framed by hand around the resources the interner
// already encoded, so a resource is never re-encoded per stream.
import protobuf from 'protobufjs';
import type { EncodedResource } from '../cache/encoded.js';
import { encodeDirect } from '../proto/direct-encode.js';
import { messageType } from '../proto/root.js';
import { ChunkedResponse } from './chunked-response.js';
import { record, str, strings, writeCommonFields } from './request-fields.js';
import type { DeltaDiscoveryRequest } from './types.js';

const REQUEST_TYPE = 'envoy.service.discovery.v3.DeltaDiscoveryRequest';
const RESPONSE_TYPE = 'envoy.service.discovery.v3.DeltaDiscoveryResponse';

// DeltaDiscoveryResponse: 1 system_version_info, 2 resources, 4 type_url,
// 5 nonce, 6 removed_resources, 7 control_plane. Resource: 1 version,
// 2 resource (Any), 3 name. All length-delimited.
const LEN = 2;
const TAG_SYSTEM_VERSION = (1 << 3) | LEN;
const TAG_RESOURCES = (2 << 3) | LEN;
const TAG_TYPE_URL = (4 << 3) | LEN;
const TAG_NONCE = (5 << 3) | LEN;
const TAG_REMOVED = (6 << 3) | LEN;
const TAG_CONTROL_PLANE = (7 << 3) | LEN;
const TAG_RESOURCE_VERSION = (1 << 3) | LEN;
const TAG_RESOURCE_NAME = (3 << 3) | LEN;
const TAG_CONTROL_PLANE_ID = (1 << 3) | LEN;

export { decodeDeltaDiscoveryRequest } from './request-decode.js';

/** Encodes a DeltaDiscoveryRequest (test clients and the benchmark). */
export function encodeDeltaDiscoveryRequest(req: DeltaDiscoveryRequest): Uint8Array {
  const msg: Record<string, unknown> = {
    type_url: req.typeUrl,
    resource_names_subscribe: req.resourceNamesSubscribe,
    resource_names_unsubscribe: req.resourceNamesUnsubscribe,
    initial_resource_versions: Object.fromEntries(req.initialResourceVersions),
    response_nonce: req.responseNonce,
  };
  writeCommonFields(req, msg);
  return encodeDirect(messageType(REQUEST_TYPE), msg);
}

export interface DeltaDiscoveryResponseParts {
  /** Debugging only in Delta xDS; skein sends the content version of the tracked set. */
  systemVersionInfo: string;
  /** Sent with `version` = the content hash (the per-resource version). */
  resources: readonly EncodedResource[];
  removedResources: readonly string[];
  typeUrl: string;
  nonce: string;
  controlPlaneId: string;
}

/**
 * Writes a DeltaDiscoveryResponse. The interner's `framed` entry is field 2
 * holding the Any — exactly `Resource.resource` (also field 2, an Any) — so
 * each Resource is a few bytes of version and name around those shared bytes.
 */
/** A DeltaDiscoveryResponse in a Buffer of its own (tests and tools). */
export function encodeDeltaDiscoveryResponse(parts: DeltaDiscoveryResponseParts): Buffer {
  return deltaDiscoveryResponse(parts).toBuffer();
}

/** A DeltaDiscoveryResponse as parts around the shared framed resources (chunked-response.ts). */
export function deltaDiscoveryResponse(parts: DeltaDiscoveryResponseParts): ChunkedResponse {
  const chunks: Uint8Array[] = [
    protobuf.Writer.create().uint32(TAG_SYSTEM_VERSION).string(parts.systemVersionInfo).finish(),
  ];
  for (const r of parts.resources) {
    const version = protobuf.Writer.create().uint32(TAG_RESOURCE_VERSION).string(r.hash).finish();
    const name = protobuf.Writer.create().uint32(TAG_RESOURCE_NAME).string(r.name).finish();
    const length = version.length + r.framed.length + name.length;
    chunks.push(
      protobuf.Writer.create().uint32(TAG_RESOURCES).uint32(length).finish(),
      version,
      r.framed,
      name,
    );
  }
  const tail = protobuf.Writer.create().uint32(TAG_TYPE_URL).string(parts.typeUrl);
  for (const n of parts.removedResources) tail.uint32(TAG_REMOVED).string(n);
  tail
    .uint32(TAG_NONCE)
    .string(parts.nonce)
    .uint32(TAG_CONTROL_PLANE) // ControlPlane { identifier = 1 }
    .fork()
    .uint32(TAG_CONTROL_PLANE_ID)
    .string(parts.controlPlaneId)
    .ldelim();
  chunks.push(tail.finish());
  return new ChunkedResponse(chunks);
}

/** One resource of a decoded DeltaDiscoveryResponse. */
export interface DecodedDeltaResource {
  name: string;
  version: string;
  aliases: string[];
  /** The Any: type URL and message bytes. */
  typeUrl: string;
  value: Uint8Array;
}

/** A decoded DeltaDiscoveryResponse (test clients and tools). */
export interface DecodedDeltaDiscoveryResponse {
  systemVersionInfo: string;
  typeUrl: string;
  nonce: string;
  controlPlaneId: string;
  resources: DecodedDeltaResource[];
  removedResources: string[];
}

export function decodeDeltaDiscoveryResponse(bytes: Uint8Array): DecodedDeltaDiscoveryResponse {
  const type = messageType(RESPONSE_TYPE);
  const obj = record(type.toObject(type.decode(bytes), { longs: Number, arrays: true, bytes: Array }));
  if (obj === undefined) throw new Error('DeltaDiscoveryResponse did not decode to an object');
  const resources = Array.isArray(obj['resources']) ? obj['resources'] : [];
  return {
    systemVersionInfo: str(obj['system_version_info']),
    typeUrl: str(obj['type_url']),
    nonce: str(obj['nonce']),
    controlPlaneId: str(record(obj['control_plane'])?.['identifier']),
    removedResources: strings(obj['removed_resources']),
    resources: resources.map((x: unknown) => {
      const r = record(x) ?? {};
      const packed = record(r['resource']) ?? {};
      const value = packed['value'];
      return {
        name: str(r['name']),
        version: str(r['version']),
        aliases: strings(r['aliases']),
        typeUrl: str(packed['type_url']),
        value: Array.isArray(value) ? Uint8Array.from(value) : new Uint8Array(),
      };
    }),
  };
}
