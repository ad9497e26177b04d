import * as grpc from '@grpc/grpc-js';
import type { ProtoObject } from '../../envoy/types.js';
import { decodeMessage } from '../proto/codec.js';
import {
  ADS_SOTW_PATH,
  type DecodedDiscoveryResponse,
  decodeDiscoveryResponse,
  encodeDiscoveryRequest,
} from './service.js';
import type { DiscoveryRequest } from './types.js';

/** A response with its resources decoded to plain objects. */
export interface ReceivedResponse extends DecodedDiscoveryResponse {
  messages: ProtoObject[];
  names: string[];
}

export interface RawAdsClientOptions {
  address: string;
  credentials: grpc.ChannelCredentials;
  channelOptions?: grpc.ChannelOptions;
}

/**
 * A bare SotW ADS client for tests and tools: sends the requests it is told
 * to and queues every response, with no xDS logic of its own.
 */
export class RawAdsClient {
  private readonly client: grpc.Client;
  private readonly call: grpc.ClientDuplexStream<DiscoveryRequest, Buffer>;
  private readonly queue: ReceivedResponse[] = [];
  private waiter: (() => void) | undefined;
  /** Resolves with the final status of the stream. */
  readonly status: Promise<grpc.StatusObject>;
  private ended = false;

  constructor(opts: RawAdsClientOptions) {
    this.client = new grpc.Client(opts.address, opts.credentials, opts.channelOptions);
    this.call = this.client.makeBidiStreamRequest(
      ADS_SOTW_PATH,
      (req: DiscoveryRequest) => Buffer.from(encodeDiscoveryRequest(req)),
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
      const res = decodeDiscoveryResponse(bytes);
      const messages = res.resources.map((r) => decodeMessage(r.typeUrl, r.value));
      // ClusterLoadAssignment names itself by cluster_name; every other type by name.
      const names = messages.map((m) => {
        const n = m['name'] ?? m['cluster_name'];
        return typeof n === 'string' ? n : '';
      });
      this.queue.push({ ...res, messages, names });
      this.waiter?.();
    });
  }

  send(req: Partial<DiscoveryRequest> & { typeUrl: string }): void {
    this.call.write({
      versionInfo: req.versionInfo ?? '',
      resourceNames: req.resourceNames ?? [],
      typeUrl: req.typeUrl,
      responseNonce: req.responseNonce ?? '',
      ...(req.node ? { node: req.node } : {}),
      ...(req.errorDetail ? { errorDetail: req.errorDetail } : {}),
    });
  }

  /** ACKs a response with the given subscription. */
  ack(res: DecodedDiscoveryResponse, resourceNames: string[] = []): void {
    this.send({
      typeUrl: res.typeUrl,
      versionInfo: res.versionInfo,
      responseNonce: res.nonce,
      resourceNames,
    });
  }

  /** The next response; rejects after `timeoutMs` or when the stream ends first. */
  async next(timeoutMs = 2000): Promise<ReceivedResponse> {
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
  async drain(ms = 150): Promise<ReceivedResponse[]> {
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
