import * as grpc from '@grpc/grpc-js';
import type { ProtoObject } from '../../envoy/types.js';
import { decodeMessage } from '../proto/codec.js';
import {
  type DecodedDeltaDiscoveryResponse,
  decodeDeltaDiscoveryResponse,
  encodeDeltaDiscoveryRequest,
} from './delta-codec.js';
import { ADS_DELTA_PATH } from './service.js';
import type { RawAdsClientOptions } from './test-client.js';
import type { DeltaDiscoveryRequest } from './types.js';

/** A delta response with its resources decoded to plain objects. */
export interface ReceivedDeltaResponse extends DecodedDeltaDiscoveryResponse {
  messages: ProtoObject[];
  /** Resource names, in response order. */
  names: string[];
  /** name → per-resource version. */
  versions: Map<string, string>;
}

/**
 * A bare Delta ADS client for tests and tools: sends the requests it is told
 * to and queues every response, with no xDS logic of its own.
 */
export class RawDeltaClient {
  private readonly client: grpc.Client;
  private readonly call: grpc.ClientDuplexStream<DeltaDiscoveryRequest, Buffer>;
  private readonly queue: ReceivedDeltaResponse[] = [];
  private waiter: (() => void) | undefined;
  /** Resolves with the final status of the stream. */
  readonly status: Promise<grpc.StatusObject>;
  private ended = false;

  constructor(opts: RawAdsClientOptions) {
    this.client = new grpc.Client(opts.address, opts.credentials, opts.channelOptions);
    this.call = this.client.makeBidiStreamRequest(
      ADS_DELTA_PATH,
      (req: DeltaDiscoveryRequest) => Buffer.from(encodeDeltaDiscoveryRequest(req)),
      (bytes: Buffer) => bytes,
    );
    this.status = new Promise((resolve) => {
      this.call.on('status', (s: grpc.StatusObject) => {
        this.ended = true;
        resolve(s);
        this.waiter?.();
      });
    });
    this.call.on('error', () => {
      // Reported through `status`.
    });
    this.call.on('data', (bytes: Buffer) => {
      const res = decodeDeltaDiscoveryResponse(bytes);
      this.queue.push({
        ...res,
        messages: res.resources.map((r) => decodeMessage(r.typeUrl, r.value)),
        names: res.resources.map((r) => r.name),
        versions: new Map(res.resources.map((r) => [r.name, r.version])),
      });
      this.waiter?.();
    });
  }

  send(req: Partial<DeltaDiscoveryRequest> & { typeUrl: string }): void {
    this.call.write({
      typeUrl: req.typeUrl,
      resourceNamesSubscribe: req.resourceNamesSubscribe ?? [],
      resourceNamesUnsubscribe: req.resourceNamesUnsubscribe ?? [],
      initialResourceVersions: req.initialResourceVersions ?? new Map(),
      responseNonce: req.responseNonce ?? '',
      ...(req.node ? { node: req.node } : {}),
      ...(req.errorDetail ? { errorDetail: req.errorDetail } : {}),
    });
  }

  /** ACKs a response. */
  ack(res: DecodedDeltaDiscoveryResponse): void {
    this.send({ typeUrl: res.typeUrl, responseNonce: res.nonce });
  }

  /** NACKs a response with this reason. */
  nack(res: DecodedDeltaDiscoveryResponse, message: string): void {
    this.send({ typeUrl: res.typeUrl, responseNonce: res.nonce, errorDetail: { code: 3, message } });
  }

  /** The next response; rejects after `timeoutMs` or when the stream ends first. */
  async next(timeoutMs = 2000): Promise<ReceivedDeltaResponse> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const r = this.queue.shift();
      if (r) return r;
      if (this.ended) throw new Error('stream ended while waiting for a response');
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no response within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiter = () => {
          clearTimeout(t);
          this.waiter = undefined;
          resolve();
        };
      });
    }
  }

  /** Waits `ms` and returns whatever arrived meanwhile (expected: nothing). */
  async drain(ms = 150): Promise<ReceivedDeltaResponse[]> {
    await new Promise((r) => setTimeout(r, ms));
    return this.queue.splice(0);
  }

  pause(): void {
    this.call.pause();
  }

  resume(): void {
    this.call.resume();
  }

  close(): void {
    this.call.cancel();
    this.client.close();
  }
}
