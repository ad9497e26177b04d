// Just enough decoding for a benchmark client: the DiscoveryResponse (or
// DeltaDiscoveryResponse) envelope is read field by field (no per-resource
// object conversion), and a resource is fully decoded only the first time its
// exact bytes are seen — proxies of one group receive identical resources, so
// a worker decodes each once.
import { createHash } from 'node:crypto';
import protobuf from 'protobufjs';
import { TypeUrl } from '../../pkg/envoy/types.js';
import { decodeMessage } from '../../pkg/xds/proto/codec.js';
import { referencesOf } from '../support/envoy/crossref.js';

export interface RawResource {
  typeUrl: string;
  value: Uint8Array;
}

export interface ResponseEnvelope {
  versionInfo: string;
  typeUrl: string;
  nonce: string;
  resources: RawResource[];
}

/** DiscoveryResponse fields (envoy.service.discovery.v3): 1 version_info, 2 resources, 4 type_url, 5 nonce. */
export function decodeEnvelope(bytes: Uint8Array): ResponseEnvelope {
  const r = protobuf.Reader.create(bytes);
  const out: ResponseEnvelope = { versionInfo: '', typeUrl: '', nonce: '', resources: [] };
  while (r.pos < r.len) {
    const tag = r.uint32();
    switch (tag >>> 3) {
      case 1:
        out.versionInfo = r.string();
        break;
      case 2:
        out.resources.push(decodeAny(r.bytes()));
        break;
      case 4:
        out.typeUrl = r.string();
        break;
      case 5:
        out.nonce = r.string();
        break;
      default:
        r.skipType(tag & 7);
    }
  }
  return out;
}

/** One resource of a delta response: its per-resource version and the Any. */
export interface DeltaRawResource extends RawResource {
  name: string;
  version: string;
}

export interface DeltaResponseEnvelope {
  systemVersionInfo: string;
  typeUrl: string;
  nonce: string;
  resources: DeltaRawResource[];
  removed: string[];
}

/**
 * DeltaDiscoveryResponse fields: 1 system_version_info, 2 resources
 * (Resource: 1 version, 2 resource Any, 3 name), 4 type_url, 5 nonce,
 * 6 removed_resources.
 */
export function decodeDeltaEnvelope(bytes: Uint8Array): DeltaResponseEnvelope {
  const r = protobuf.Reader.create(bytes);
  const out: DeltaResponseEnvelope = {
    systemVersionInfo: '',
    typeUrl: '',
    nonce: '',
    resources: [],
    removed: [],
  };
  while (r.pos < r.len) {
    const tag = r.uint32();
    switch (tag >>> 3) {
      case 1:
        out.systemVersionInfo = r.string();
        break;
      case 2:
        out.resources.push(decodeDeltaResource(r.bytes()));
        break;
      case 4:
        out.typeUrl = r.string();
        break;
      case 5:
        out.nonce = r.string();
        break;
      case 6:
        out.removed.push(r.string());
        break;
      default:
        r.skipType(tag & 7);
    }
  }
  return out;
}

function decodeDeltaResource(bytes: Uint8Array): DeltaRawResource {
  const r = protobuf.Reader.create(bytes);
  const out: DeltaRawResource = { name: '', version: '', typeUrl: '', value: new Uint8Array() };
  while (r.pos < r.len) {
    const tag = r.uint32();
    const field = tag >>> 3;
    if (field === 1) out.version = r.string();
    else if (field === 2) Object.assign(out, decodeAny(r.bytes()));
    else if (field === 3) out.name = r.string();
    else r.skipType(tag & 7);
  }
  return out;
}

/** google.protobuf.Any: 1 type_url, 2 value. */
function decodeAny(bytes: Uint8Array): RawResource {
  const r = protobuf.Reader.create(bytes);
  const out: RawResource = { typeUrl: '', value: new Uint8Array() };
  while (r.pos < r.len) {
    const tag = r.uint32();
    if (tag >>> 3 === 1) out.typeUrl = r.string();
    else if (tag >>> 3 === 2) out.value = r.bytes();
    else r.skipType(tag & 7);
  }
  return out;
}

/** What a client needs from one resource: its name and the names it makes the client subscribe to. */
export interface ResourceFacts {
  name: string;
  edsClusters: readonly string[];
  routes: readonly string[];
  secrets: readonly string[];
}

/** Decodes resources once per distinct content (keyed by a hash of type and bytes). */
export class FactsCache {
  private readonly facts = new Map<string, ResourceFacts>();
  decoded = 0;

  of(res: RawResource): ResourceFacts {
    const key = createHash('sha1').update(res.typeUrl).update(res.value).digest('base64');
    const hit = this.facts.get(key);
    if (hit) return hit;
    const message = decodeMessage(res.typeUrl, res.value);
    const nameField = res.typeUrl === TypeUrl.ClusterLoadAssignment ? 'cluster_name' : 'name';
    const name = typeof message[nameField] === 'string' ? message[nameField] : '';
    let facts: ResourceFacts = { name, edsClusters: [], routes: [], secrets: [] };
    if (res.typeUrl === TypeUrl.Cluster || res.typeUrl === TypeUrl.Listener) {
      const typeUrl = res.typeUrl === TypeUrl.Cluster ? TypeUrl.Cluster : TypeUrl.Listener;
      const refs = referencesOf([{ name, typeUrl, message }]);
      facts = {
        name,
        edsClusters: [...refs.edsClusters],
        routes: [...refs.routes],
        secrets: [...refs.secrets],
      };
    }
    this.decoded++;
    this.facts.set(key, facts);
    return facts;
  }

  get size(): number {
    return this.facts.size;
  }
}

/**
 * The bytes an EDS response carries for a socket address string `ip`:
 * SocketAddress.address is field 2 (tag 0x12), then the length, then the text.
 * The length prefix keeps 127.0.0.1 from matching inside 127.0.0.10.
 */
export function addressMarker(ip: string): Buffer {
  const text = Buffer.from(ip, 'utf8');
  if (text.length > 127) throw new Error('marker too long for a one-byte length');
  return Buffer.concat([Buffer.from([0x12, text.length]), text]);
}
