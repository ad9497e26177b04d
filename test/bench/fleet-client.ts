// What the SotW and Delta benchmark proxies share: one connection per proxy
// (fleet-transport.ts), a stream that reconnects with the sidecar's backoff,
// stream numbering (epochs) and ACK reporting. The subclasses keep only their
// protocol's requests and state.
import { TypeUrl } from '../../pkg/envoy/types.js';
import { ADS_RETRY_BACKOFF } from '../../pkg/injector/bootstrap.js';
import { parseProxyCommonName } from '../../pkg/mesh/identity.js';
import { nodeField } from './envoy-node.js';
import type { ConnectionFactory, FleetConnection, FleetStream } from './fleet-transport.js';
import type { AckEvent, FleetProxySpec, StreamEndEvent, TypeCode } from './protocol.js';
import { nowMs } from './protocol.js';
import type { FactsCache } from './xds-decode.js';

/** gRPC's UNAVAILABLE: the connection was lost or could not be made. */
const UNAVAILABLE = 14;

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
  /** Connects to one controller address (fleet-transport.ts). */
  connect: ConnectionFactory;
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
}

/**
 * A benchmark proxy's ADS stream of requests `Req`, reconnected until stop(),
 * with protocol state `S` per type of REQUEST_ORDER.
 */
export abstract class FleetStreamClient<Req, S> {
  protected readonly types = new Map<string, S>();
  private connection: FleetConnection;
  /** The controller addresses this proxy tries, its own first; `at` indexes the one in use. */
  private readonly addresses: readonly string[];
  private at = 0;
  private call: FleetStream | undefined;
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
    this.connection = opts.connect(opts.address);
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
    this.connection.close();
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
    // Requests arrive encoded (write): the node is appended as bytes, not re-encoded.
    this.call = this.connection.stream(this.methodPath, {
      onMessage: (bytes) => {
        if (epoch !== this.epoch) return;
        this.responses++;
        this.failures = 0;
        this.onResponse(bytes);
      },
      onEnd: (code) => {
        if (epoch !== this.epoch) return;
        this.opts.onStreamEnd({ p: this.opts.spec.index, e: epoch, code, at: nowMs() });
        if (this.stopped) return;
        // A lost connection with replicas to spare: the next stream goes to the next replica (with
        // one controller it waits for that one to come back, as Envoy's retries do).
        if (code === UNAVAILABLE && this.addresses.length > 1) this.nextReplica();
        // As Envoy on the injected bootstrap (pkg/injector/bootstrap.ts ADS_RETRY_BACKOFF): a
        // uniformly random wait below an interval doubling from 250 ms up to 2 s.
        this.failures++;
        const interval = Math.min(
          ADS_RETRY_BACKOFF.maxMs,
          ADS_RETRY_BACKOFF.baseMs * 2 ** Math.min(this.failures - 1, 8),
        );
        this.retryTimer = setTimeout(() => this.openStream(), Math.random() * interval);
      },
    });
    this.onStreamOpen();
  }

  private nextReplica(): void {
    this.connection.close();
    this.at = (this.at + 1) % this.addresses.length;
    this.connection = this.opts.connect(this.addresses[this.at] as string);
  }
}
