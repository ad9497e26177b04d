import * as grpc from '@grpc/grpc-js';
import { ResponseQueue } from '../../../pkg/xds/server/response-queue.js';

export interface RawAdsClientOptions {
  address: string;
  credentials: grpc.ChannelCredentials;
  channelOptions?: grpc.ChannelOptions;
}

/**
 * What the raw SotW and Delta test clients share: one bidi call, a queue of
 * the responses it received (decoded by `receive`) and the stream controls.
 * The subclasses add only their protocol's requests.
 */
export abstract class RawClientCall<Req, Res> {
  private readonly client: grpc.Client;
  private readonly call: grpc.ClientDuplexStream<Req, Buffer>;
  private readonly queue = new ResponseQueue<Res>();
  /** Resolves with the final status of the stream. */
  readonly status: Promise<grpc.StatusObject>;

  protected constructor(
    opts: RawAdsClientOptions,
    path: string,
    encode: (req: Req) => Uint8Array,
    receive: (bytes: Buffer) => Res,
  ) {
    this.client = new grpc.Client(opts.address, opts.credentials, opts.channelOptions);
    this.call = this.client.makeBidiStreamRequest(
      path,
      (req: Req) => Buffer.from(encode(req)),
      (bytes: Buffer) => bytes,
    );
    this.status = this.queue.follow(this.call);
    this.call.on('data', (bytes: Buffer) => this.queue.push(receive(bytes)));
  }

  protected write(req: Req): void {
    this.call.write(req);
  }

  /** The next response; rejects after `timeoutMs` or when the stream ends first. */
  next(timeoutMs = 2000): Promise<Res> {
    return this.queue.next(timeoutMs);
  }

  /** Waits `ms` and returns whatever arrived meanwhile (expected: nothing). */
  drain(ms = 150): Promise<Res[]> {
    return this.queue.drain(ms);
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
