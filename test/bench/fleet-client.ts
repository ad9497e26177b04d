// What the SotW and Delta benchmark proxies share: one channel per proxy, a
// stream that reconnects with a short backoff, stream numbering (epochs) and
// ACK reporting. The subclasses keep only their protocol's requests and state.
import * as grpc from '@grpc/grpc-js';
import { TypeUrl } from '../../pkg/envoy/types.js';
import { ADS_RETRY_BACKOFF } from '../../pkg/injector/bootstrap.js';
import { parseProxyCommonName } from '../../pkg/mesh/identity.js';
import { nodeField } from './envoy-node.js';
import type { AckEvent, FleetProxySpec, StreamEndEvent, TypeCode } from './protocol.js';
import { nowMs } from './protocol.js';
import type { FactsCache } from './xds-decode.js';

export const CODE_OF: Record<string, TypeCode> = {
  [TypeUrl.Cluster]: 'CDS',
  [TypeUrl.ClusterLoadAssignment]: 'EDS',
  [TypeUrl.Listener]: 'LDS',
  [TypeUrl.RouteConfiguration]: 'RDS',
  [TypeUrl.Secret]: 'SDS',
};

/** Envoy's ADS order on a new stream: CDS and LDS first, then what they reference. */
export const REQUEST_ORDER: readonly string[] = [
  TypeUrl.Cluster,
  TypeUrl.Listener,
  TypeUrl.ClusterLoadAssignment,
  TypeUrl.RouteConfiguration,
  TypeUrl.Secret,
];

export interface FleetClientOptions {
  spec: FleetProxySpec;
  address: string;
  /**
   * Other replicas of the controller, in the order this proxy tries them when
   * its stream is lost (a Service spreading new connections over the
   * survivors); empty or absent with one controller.
   */
  fallbacks?: readonly string[];
  credentials: grpc.ChannelCredentials;
  facts: FactsCache;
  onAck(ev: AckEvent): void;
  onStreamEnd(ev: StreamEndEvent): void;
  /** The current EDS marker, if any. */
  marker(): Buffer | undefined;
  /**
   * The part of a real Envoy's Node all proxies share (envoy-node.ts
   * sharedNodeBytes); empty for a node of id and cluster only.
   */
  sharedNode: Uint8Array;
  /** A name the ADS serving certificate carries (default localhost). */
  serverName?: string;
}

/**
 * One connection per proxy, as with real sidecars: a local subchannel pool
 * keeps grpc-js from sharing a TCP connection between channels.
 */
export function fleetChannel(opts: FleetClientOptions, address = opts.address): grpc.Client {
  return new grpc.Client(address, opts.credentials, {
    'grpc.use_local_subchannel_pool': 1,
    // The sidecar bootstrap's ADS retry bounds (grpc-js jitters each step by ±20 % and grows it
    // 1.6× where Envoy draws uniformly below a doubling interval; both are capped at maxMs).
    'grpc.initial_reconnect_backoff_ms': ADS_RETRY_BACKOFF.baseMs,
    'grpc.max_reconnect_backoff_ms': ADS_RETRY_BACKOFF.maxMs,
    'grpc.max_receive_message_length': 64 * 1024 * 1024,
    // skein's certificate names localhost too (OSM's only ads.<trust-domain>); an IP as TLS
    // server name is deprecated (RFC 6066).
    'grpc.ssl_target_name_override': opts.serverName ?? 'localhost',
    // Neither is Envoy behaviour, and both cost the shared cores per call and connection:
    // channelz bookkeeping, and buffering every request for a gRPC-level retry (an xDS client
    // recovers by opening a new stream, as this one does).
    'grpc.enable_channelz': 0,
    'grpc.enable_retries': 0,
  });
}

/**
 * A benchmark proxy's ADS stream of requests `Req`, reconnected until stop(),
 * with protocol state `S` per type of REQUEST_ORDER.
 */
export abstract class FleetStreamClient<Req, S> {
  protected readonly types = new Map<string, S>();
  private client: grpc.Client;
  /** The controller addresses this proxy tries, its own first; `at` indexes the one in use. */
  private readonly addresses: readonly string[];
  private at = 0;
  private call: grpc.ClientDuplexStream<Buffer, Buffer> | undefined;
  /** The current stream's number (1 = first stream). */
  protected epoch = 0;
  private stopped = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private failures = 0;
  responses = 0;

  constructor(
    protected readonly opts: FleetClientOptions,
    private readonly methodPath: string,
    private readonly encode: (req: Req) => Uint8Array,
    /** The request's `node` field: 2 in DiscoveryRequest, 1 in DeltaDiscoveryRequest. */
    private readonly nodeFieldNumber: number,
    newState: () => S,
  ) {
    this.addresses = [opts.address, ...(opts.fallbacks ?? [])];
    this.client = fleetChannel(opts);
    for (const t of REQUEST_ORDER) this.types.set(t, newState());
  }

  get index(): number {
    return this.opts.spec.index;
  }

  start(): void {
    this.openStream();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    this.call?.cancel();
    this.client.close();
  }

  protected state(typeUrl: string): S {
    const st = this.types.get(typeUrl);
    if (!st) throw new Error(`unknown type ${typeUrl}`);
    return st;
  }

  /** Sends the first requests of a new stream (the call is already open). */
  protected abstract onStreamOpen(): void;
  /** Handles one response of the current stream. */
  protected abstract onResponse(bytes: Buffer): void;
  /** In sync on this stream: everything subscribed has arrived. */
  protected abstract complete(): boolean;

  /** Writes a request; `withNode` for a stream's first (xDS: only that one needs the node). */
  protected write(req: Req, withNode = false): void {
    const bytes = Buffer.from(this.encode(req));
    if (!withNode) {
      this.call?.write(bytes);
      return;
    }
    // Like the injector's bootstrap: node id = the proxy CN, cluster = <sa>.<ns>.
    const cn = this.opts.spec.cn;
    const { serviceAccount, namespace } = parseProxyCommonName(cn);
    const node = nodeField(this.nodeFieldNumber, this.opts.sharedNode, cn, `${serviceAccount}.${namespace}`);
    this.call?.write(Buffer.concat([bytes, node]));
  }

  /** Reports the ACK just written for a response of `bytes`. */
  protected reportAck(code: TypeCode, version: string, bytes: Buffer): void {
    const ev: AckEvent = {
      p: this.opts.spec.index,
      e: this.epoch,
      t: code,
      v: version,
      at: nowMs(),
      b: bytes.length,
      c: this.complete() ? 1 : 0,
    };
    const marker = this.opts.marker();
    if (marker && code === 'EDS') ev.m = bytes.includes(marker) ? 1 : 0;
    this.opts.onAck(ev);
  }

  private openStream(): void {
    this.epoch++;
    const epoch = this.epoch;
    // Wait for a connection instead of failing at once while the controller is down: the
    // channel reconnects with its own jittered backoff (250 ms growing to 2 s, as configured in
    // fleetChannel), one TCP/TLS attempt per step as Envoy's ADS retry makes, without also
    // creating and failing a call per step (which made the fleet burn most of the 2 cores
    // while the controller restarted).
    const call = this.client.makeBidiStreamRequest(
      this.methodPath,
      // Requests arrive encoded (write): the node is appended as bytes, not re-encoded.
      (bytes: Buffer) => bytes,
      (bytes: Buffer) => bytes,
      new grpc.Metadata({ waitForReady: true }),
    );
    this.call = call;
    call.on('data', (bytes: Buffer) => {
      if (epoch !== this.epoch) return;
      this.responses++;
      this.failures = 0;
      this.onResponse(bytes);
    });
    call.on('error', () => {
      // Reported through 'status'.
    });
    call.on('status', (s: grpc.StatusObject) => {
      if (epoch !== this.epoch) return;
      this.opts.onStreamEnd({ p: this.opts.spec.index, e: epoch, code: s.code, at: nowMs() });
      if (this.stopped) return;
      // A lost connection with replicas to spare: the next stream goes to the next replica (with
      // one controller the channel waits for it to come back, as Envoy's retries do).
      if (s.code === grpc.status.UNAVAILABLE && this.addresses.length > 1) this.nextReplica();
      // As Envoy on the injected bootstrap (pkg/injector/bootstrap.ts ADS_RETRY_BACKOFF): a
      // uniformly random wait below an interval doubling from 250 ms up to 2 s.
      this.failures++;
      const interval = Math.min(
        ADS_RETRY_BACKOFF.maxMs,
        ADS_RETRY_BACKOFF.baseMs * 2 ** Math.min(this.failures - 1, 8),
      );
      this.retryTimer = setTimeout(() => this.openStream(), Math.random() * interval);
    });
    this.onStreamOpen();
  }

  private nextReplica(): void {
    this.client.close();
    this.at = (this.at + 1) % this.addresses.length;
    this.client = fleetChannel(this.opts, this.addresses[this.at]);
  }
}
