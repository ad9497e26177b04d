import type { ServiceDefinition } from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import type { EncodedResource } from '../cache/encoded.js';
import { encodeDirect } from '../proto/direct-encode.js';
import { messageType } from '../proto/root.js';
import { ChunkedResponse, serializeResponse } from './chunked-response.js';
import { decodeDeltaDiscoveryRequest, encodeDeltaDiscoveryRequest } from './delta-codec.js';
import { DELTA_NAME_FIELDS, decodeWithin, SOTW_NAME_FIELDS, type StreamLimits } from './limits.js';
import { decodeDiscoveryRequest } from './request-decode.js';
import { record, str, writeCommonFields } from './request-fields.js';
import type { DeltaDiscoveryRequest, DiscoveryRequest } from './types.js';

// Requests are decoded by hand, reading only what the server uses (request-decode.ts).
export { decodeDiscoveryRequest };

export const ADS_SERVICE = 'envoy.service.discovery.v3.AggregatedDiscoveryService';
export const ADS_SOTW_PATH = `/${ADS_SERVICE}/StreamAggregatedResources`;
export const ADS_DELTA_PATH = `/${ADS_SERVICE}/DeltaAggregatedResources`;

const REQUEST_TYPE = 'envoy.service.discovery.v3.DiscoveryRequest';
const RESPONSE_TYPE = 'envoy.service.discovery.v3.DiscoveryResponse';

/** Encodes a DiscoveryRequest (used by test clients and tools). */
export function encodeDiscoveryRequest(req: DiscoveryRequest): Uint8Array {
  const msg: Record<string, unknown> = {
    version_info: req.versionInfo,
    resource_names: req.resourceNames,
    type_url: req.typeUrl,
    response_nonce: req.responseNonce,
  };
  writeCommonFields(req, msg);
  return encodeDirect(messageType(REQUEST_TYPE), msg);
}

export interface DiscoveryResponseParts {
  versionInfo: string;
  resources: readonly EncodedResource[];
  typeUrl: string;
  nonce: string;
  controlPlaneId: string;
}

/** A DiscoveryResponse in a Buffer of its own (REST, tests and tools). */
export function encodeDiscoveryResponse(parts: DiscoveryResponseParts): Buffer {
  return discoveryResponse(parts).toBuffer();
}

/**
 * A DiscoveryResponse around pre-encoded resources, as parts: the head and
 * tail are a few bytes, the resources the cache's shared framed bytes,
 * joined only when grpc-js sends it (chunked-response.ts).
 */
export function discoveryResponse(parts: DiscoveryResponseParts): ChunkedResponse {
  const head = protobuf.Writer.create()
    .uint32((1 << 3) | 2)
    .string(parts.versionInfo)
    .finish();
  const tail = protobuf.Writer.create()
    .uint32((4 << 3) | 2)
    .string(parts.typeUrl)
    .uint32((5 << 3) | 2)
    .string(parts.nonce)
    .uint32((6 << 3) | 2) // control_plane: ControlPlane { identifier = 1 }
    .fork()
    .uint32((1 << 3) | 2)
    .string(parts.controlPlaneId)
    .ldelim()
    .finish();
  const chunks: Uint8Array[] = [head];
  for (const r of parts.resources) chunks.push(r.framed);
  chunks.push(tail);
  return new ChunkedResponse(chunks);
}

/** A decoded DiscoveryResponse (for test clients and tools). */
export interface DecodedDiscoveryResponse {
  versionInfo: string;
  typeUrl: string;
  nonce: string;
  controlPlaneId: string;
  /** Resource type URL and message bytes, in response order. */
  resources: { typeUrl: string; value: Uint8Array }[];
}

export function decodeDiscoveryResponse(bytes: Uint8Array): DecodedDiscoveryResponse {
  const type = messageType(RESPONSE_TYPE);
  const obj = record(type.toObject(type.decode(bytes), { longs: Number, arrays: true, bytes: Array }));
  if (obj === undefined) throw new Error('DiscoveryResponse did not decode to an object');
  const resources = Array.isArray(obj['resources']) ? obj['resources'] : [];
  return {
    versionInfo: str(obj['version_info']),
    typeUrl: str(obj['type_url']),
    nonce: str(obj['nonce']),
    controlPlaneId: str(record(obj['control_plane'])?.['identifier']),
    resources: resources.map((a: unknown) => {
      const packed = record(a) ?? {};
      const value = packed['value'];
      return {
        typeUrl: str(packed['type_url']),
        value: Array.isArray(value) ? Uint8Array.from(value) : new Uint8Array(),
      };
    }),
  };
}

/**
 * The hand-built grpc-js definition of both ADS methods, SotW and Delta:
 * requests are decoded by hand, responses arrive already encoded (a
 * ChunkedResponse from discoveryResponse / deltaDiscoveryResponse, joined as
 * grpc-js sends it, or a Buffer from tests).
 */
export const adsServiceDefinition: ServiceDefinition = {
  StreamAggregatedResources: {
    path: ADS_SOTW_PATH,
    requestStream: true,
    responseStream: true,
    requestSerialize: (req: DiscoveryRequest): Buffer => Buffer.from(encodeDiscoveryRequest(req)),
    requestDeserialize: (bytes: Buffer): DiscoveryRequest => decodeDiscoveryRequest(bytes),
    responseSerialize: serializeResponse,
    responseDeserialize: (bytes: Buffer): Buffer => bytes,
  },
  DeltaAggregatedResources: {
    path: ADS_DELTA_PATH,
    requestStream: true,
    responseStream: true,
    requestSerialize: (req: DeltaDiscoveryRequest): Buffer => Buffer.from(encodeDeltaDiscoveryRequest(req)),
    requestDeserialize: (bytes: Buffer): DeltaDiscoveryRequest => decodeDeltaDiscoveryRequest(bytes),
    responseSerialize: serializeResponse,
    responseDeserialize: (bytes: Buffer): Buffer => bytes,
  },
};

/**
 * The server's definition: each request is scanned against the stream limits
 * before it is decoded, and a message over a limit or not decodable arrives
 * as a RefusedRequest (limits.ts) the server ends the stream with.
 */
export function adsServerDefinition(limits: StreamLimits): ServiceDefinition {
  const sotw = adsServiceDefinition['StreamAggregatedResources'];
  const delta = adsServiceDefinition['DeltaAggregatedResources'];
  if (sotw === undefined || delta === undefined) throw new Error('unreachable: both ADS methods are defined');
  return {
    StreamAggregatedResources: {
      ...sotw,
      requestDeserialize: (bytes: Buffer) =>
        decodeWithin(bytes, SOTW_NAME_FIELDS, limits, decodeDiscoveryRequest),
    },
    DeltaAggregatedResources: {
      ...delta,
      requestDeserialize: (bytes: Buffer) =>
        decodeWithin(bytes, DELTA_NAME_FIELDS, limits, decodeDeltaDiscoveryRequest),
    },
  };
}
