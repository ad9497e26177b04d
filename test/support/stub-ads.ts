// A stand-in ADS server for running a real Envoy (or a grpc-js-xds workload)
// in tests and tools: plaintext gRPC on 127.0.0.1, both ADS methods, every
// request recorded as the bytes the client sent. It answers each type's first
// request on a stream with an empty response (no resources), which is enough
// for Envoy to finish initialising (CDS, then LDS) and start its static
// listeners; ACKs get no answer. `sotwResources` replaces that empty answer
// for a type, and `pushSotw` sends a type's resources on every open stream.
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import type { EncodedResource } from '../../pkg/xds/cache/encoded.js';
import { encodeDeltaDiscoveryResponse } from '../../pkg/xds/server/delta-codec.js';
import { ADS_DELTA_PATH, ADS_SOTW_PATH, encodeDiscoveryResponse } from '../../pkg/xds/server/service.js';

export type AdsMethod = 'sotw' | 'delta';

export interface RecordedRequest {
  method: AdsMethod;
  /** 1 for the first stream Envoy opened, and so on. */
  stream: number;
  /** The whole DiscoveryRequest / DeltaDiscoveryRequest as received. */
  bytes: Buffer;
  typeUrl: string;
  responseNonce: string;
  /** The encoded envoy.config.core.v3.Node, when the request carries one. */
  node?: Buffer;
}

// Field numbers in discovery.proto: DiscoveryRequest node 2, type_url 4, response_nonce 5;
// DeltaDiscoveryRequest node 1, type_url 2, response_nonce 6.
const FIELDS: Record<AdsMethod, { node: number; typeUrl: number; nonce: number }> = {
  sotw: { node: 2, typeUrl: 4, nonce: 5 },
  delta: { node: 1, typeUrl: 2, nonce: 6 },
};

/** The length-delimited fields of one message by number (the last occurrence wins, as in proto3). */
function lengthDelimited(bytes: Uint8Array): Map<number, Uint8Array> {
  const out = new Map<number, Uint8Array>();
  const r = protobuf.Reader.create(bytes);
  while (r.pos < r.len) {
    const tag = r.uint32();
    if ((tag & 7) === 2) out.set(tag >>> 3, r.bytes());
    else r.skipType(tag & 7);
  }
  return out;
}

export function parseRequest(method: AdsMethod, stream: number, bytes: Buffer): RecordedRequest {
  const fields = lengthDelimited(bytes);
  const f = FIELDS[method];
  const text = (n: number): string => Buffer.from(fields.get(n) ?? []).toString('utf8');
  const node = fields.get(f.node);
  return {
    method,
    stream,
    bytes,
    typeUrl: text(f.typeUrl),
    responseNonce: text(f.nonce),
    ...(node ? { node: Buffer.from(node) } : {}),
  };
}

function emptyResponse(method: AdsMethod, typeUrl: string, nonce: string): Buffer {
  const common = { resources: [], typeUrl, nonce, controlPlaneId: 'stub-ads' };
  return method === 'sotw'
    ? encodeDiscoveryResponse({ ...common, versionInfo: '1' })
    : encodeDeltaDiscoveryResponse({ ...common, systemVersionInfo: '1', removedResources: [] });
}

function rawMethod(path: string): grpc.MethodDefinition<Buffer, Buffer> {
  const same = (b: Buffer): Buffer => b;
  return {
    path,
    requestStream: true,
    responseStream: true,
    requestSerialize: same,
    requestDeserialize: same,
    responseSerialize: same,
    responseDeserialize: same,
  };
}

export class StubAdsServer {
  readonly requests: RecordedRequest[] = [];
  private readonly server = new grpc.Server();
  private streams = 0;
  private nonces = 0;
  private versions = 0;
  private readonly waiters = new Set<() => void>();
  private readonly sotwStreams = new Set<grpc.ServerDuplexStream<Buffer, Buffer>>();
  /** State-of-the-world answers per type: what a first request gets. */
  private readonly sotwResources = new Map<string, readonly EncodedResource[]>();

  constructor() {
    const handler =
      (method: AdsMethod) =>
      (call: grpc.ServerDuplexStream<Buffer, Buffer>): void => {
        const stream = ++this.streams;
        if (method === 'sotw') this.sotwStreams.add(call);
        call.on('close', () => this.sotwStreams.delete(call));
        call.on('data', (bytes: Buffer) => {
          const req = parseRequest(method, stream, bytes);
          this.requests.push(req);
          // An empty nonce is a type's first request on this stream (xDS); the rest are ACKs.
          const given = method === 'sotw' ? this.sotwResources.get(req.typeUrl) : undefined;
          if (req.responseNonce === '' && given) call.write(this.sotwResponse(req.typeUrl, given));
          else if (req.responseNonce === '')
            call.write(emptyResponse(method, req.typeUrl, `stub-${++this.nonces}`));
          for (const w of [...this.waiters]) w();
        });
        call.on('error', () => {
          // Envoy going away ends the stream; nothing to report.
        });
        call.on('end', () => call.end());
      };
    this.server.addService(
      { sotw: rawMethod(ADS_SOTW_PATH), delta: rawMethod(ADS_DELTA_PATH) },
      { sotw: handler('sotw'), delta: handler('delta') },
    );
  }

  private sotwResponse(typeUrl: string, resources: readonly EncodedResource[]): Buffer {
    return encodeDiscoveryResponse({
      resources,
      typeUrl,
      nonce: `stub-${++this.nonces}`,
      versionInfo: `v${++this.versions}`,
      controlPlaneId: 'stub-ads',
    });
  }

  /** Sets a type's state-of-the-world resources and sends them on every open SotW stream. */
  pushSotw(typeUrl: string, resources: readonly EncodedResource[]): void {
    this.sotwResources.set(typeUrl, resources);
    for (const call of this.sotwStreams) call.write(this.sotwResponse(typeUrl, resources));
  }

  /** Listens on 127.0.0.1 (`port`, default one the kernel picks); resolves with the port. */
  start(port = 0): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err, port) =>
        err ? reject(err) : resolve(port),
      );
    });
  }

  /** Resolves once `pred` holds for the requests so far; rejects after `timeoutMs`. */
  waitFor(pred: (requests: readonly RecordedRequest[]) => boolean, timeoutMs = 10_000): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (!pred(this.requests)) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(
          new Error(`stub ADS: condition not met within ${timeoutMs} ms (${this.requests.length} requests)`),
        );
      }, timeoutMs);
      this.waiters.add(check);
      check();
    });
  }

  close(): void {
    this.server.forceShutdown();
  }
}
