// Decoders for the two ADS request messages that read only the fields the
// server uses and skip the rest without building objects. A real Envoy's first
// request carries its whole Node (~61 KB with the extension list): decoded
// with protobufjs that was ~0.5 ms and ~60 KB of garbage per stream, which at
// thousands of proxies showed as controller CPU and RSS (docs/performance.md).
// Field numbers: envoy/service/discovery/v3/discovery.proto, envoy/config/core/v3/base.proto
// (Node), google/rpc/status.proto (Status). Unknown fields are skipped, as
// proto3 requires of a parser.
import protobuf from 'protobufjs';
import type { CommonRequestFields } from './request-fields.js';
import type { DeltaDiscoveryRequest, DiscoveryRequest } from './types.js';

const VARINT = 0;
const LEN = 2;

type Reader = protobuf.Reader;

/** Fails on a known field sent with another wire type: the bytes are not the message we expect. */
function expect(field: string, got: number, want: number): void {
  if (got !== want) throw new Error(`${field}: wire type ${got}, expected ${want}`);
}

/** A length-delimited sub-message's end offset. */
function subEnd(r: Reader): number {
  const len = r.uint32();
  const end = r.pos + len;
  if (end > r.len) throw new RangeError(`index out of range: ${end} > ${r.len}`);
  return end;
}

/** config.core.v3.Node: id = 1, cluster = 2; everything else skipped. */
function readNode(r: Reader): { id: string; cluster: string } {
  const end = subEnd(r);
  const node = { id: '', cluster: '' };
  while (r.pos < end) {
    const tag = r.uint32();
    const field = tag >>> 3;
    const wire = tag & 7;
    if (field === 1) {
      expect('node.id', wire, LEN);
      node.id = r.string();
    } else if (field === 2) {
      expect('node.cluster', wire, LEN);
      node.cluster = r.string();
    } else r.skipType(wire);
  }
  if (r.pos !== end) throw new Error('node: field overruns the message');
  return node;
}

/** google.rpc.Status: code = 1, message = 2; details skipped. */
function readStatus(r: Reader): { code: number; message: string } {
  const end = subEnd(r);
  const status = { code: 0, message: '' };
  while (r.pos < end) {
    const tag = r.uint32();
    const field = tag >>> 3;
    const wire = tag & 7;
    if (field === 1) {
      expect('error_detail.code', wire, VARINT);
      status.code = r.int32();
    } else if (field === 2) {
      expect('error_detail.message', wire, LEN);
      status.message = r.string();
    } else r.skipType(wire);
  }
  if (r.pos !== end) throw new Error('error_detail: field overruns the message');
  return status;
}

/** A map<string, string> entry: key = 1, value = 2. */
function readMapEntry(r: Reader, into: Map<string, string>): void {
  const end = subEnd(r);
  let key = '';
  let value = '';
  while (r.pos < end) {
    const tag = r.uint32();
    const wire = tag & 7;
    if (tag >>> 3 === 1) {
      expect('map key', wire, LEN);
      key = r.string();
    } else if (tag >>> 3 === 2) {
      expect('map value', wire, LEN);
      value = r.string();
    } else r.skipType(wire);
  }
  into.set(key, value);
}

function common(r: Reader, wire: number, which: 'node' | 'error', req: CommonRequestFields): void {
  expect(which, wire, LEN);
  if (which === 'node') req.node = readNode(r);
  else req.errorDetail = readStatus(r);
}

/** DiscoveryRequest: version_info 1, node 2, resource_names 3, type_url 4, response_nonce 5, error_detail 6. Throws on malformed bytes. */
export function decodeDiscoveryRequest(bytes: Uint8Array): DiscoveryRequest {
  const r = protobuf.Reader.create(bytes);
  const req: DiscoveryRequest = { versionInfo: '', resourceNames: [], typeUrl: '', responseNonce: '' };
  while (r.pos < r.len) {
    const tag = r.uint32();
    const wire = tag & 7;
    switch (tag >>> 3) {
      case 1:
        expect('version_info', wire, LEN);
        req.versionInfo = r.string();
        break;
      case 2:
        common(r, wire, 'node', req);
        break;
      case 3:
        expect('resource_names', wire, LEN);
        req.resourceNames.push(r.string());
        break;
      case 4:
        expect('type_url', wire, LEN);
        req.typeUrl = r.string();
        break;
      case 5:
        expect('response_nonce', wire, LEN);
        req.responseNonce = r.string();
        break;
      case 6:
        common(r, wire, 'error', req);
        break;
      default:
        r.skipType(wire);
    }
  }
  return req;
}

/**
 * DeltaDiscoveryRequest: node 1, type_url 2, resource_names_subscribe 3,
 * resource_names_unsubscribe 4, initial_resource_versions 5, response_nonce 6,
 * error_detail 7. Throws on malformed bytes.
 */
export function decodeDeltaDiscoveryRequest(bytes: Uint8Array): DeltaDiscoveryRequest {
  const r = protobuf.Reader.create(bytes);
  const req: DeltaDiscoveryRequest = {
    typeUrl: '',
    resourceNamesSubscribe: [],
    resourceNamesUnsubscribe: [],
    initialResourceVersions: new Map(),
    responseNonce: '',
  };
  while (r.pos < r.len) {
    const tag = r.uint32();
    const wire = tag & 7;
    switch (tag >>> 3) {
      case 1:
        common(r, wire, 'node', req);
        break;
      case 2:
        expect('type_url', wire, LEN);
        req.typeUrl = r.string();
        break;
      case 3:
        expect('resource_names_subscribe', wire, LEN);
        req.resourceNamesSubscribe.push(r.string());
        break;
      case 4:
        expect('resource_names_unsubscribe', wire, LEN);
        req.resourceNamesUnsubscribe.push(r.string());
        break;
      case 5:
        expect('initial_resource_versions', wire, LEN);
        readMapEntry(r, req.initialResourceVersions);
        break;
      case 6:
        expect('response_nonce', wire, LEN);
        req.responseNonce = r.string();
        break;
      case 7:
        common(r, wire, 'error', req);
        break;
      default:
        r.skipType(wire);
    }
  }
  return req;
}
