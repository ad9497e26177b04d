// One benchmark proxy: a SotW ADS client that subscribes the way Envoy does
// (wildcard CDS and LDS, then EDS/RDS/SDS by the names those reference), ACKs
// every response, and on a lost stream reconnects with a short backoff,
// re-requesting what it holds (versions and names) like Envoy after a restart.
import * as grpc from '@grpc/grpc-js';
import { TypeUrl } from '../../pkg/envoy/types.js';
import { ADS_SOTW_PATH, encodeDiscoveryRequest } from '../../pkg/xds/server/service.js';
import type { DiscoveryRequest } from '../../pkg/xds/server/types.js';
import type { AckEvent, FleetProxySpec, StreamEndEvent, TypeCode } from './protocol.js';
import { nowMs } from './protocol.js';
import { decodeEnvelope, type FactsCache } from './xds-decode.js';

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

interface TypeState {
  version: string;
  nonce: string;
  /** Subscribed names (non-wildcard types); sorted. */
  names: string[];
  /** Names in the last response on the current stream. */
  received: Set<string> | undefined;
  /** CDS/LDS: what the last response references. */
  eds: Set<string>;
  rds: Set<string>;
  sds: Set<string>;
}

export interface FleetClientOptions {
  spec: FleetProxySpec;
  address: string;
  credentials: grpc.ChannelCredentials;
  facts: FactsCache;
  onAck(ev: AckEvent): void;
  onStreamEnd(ev: StreamEndEvent): void;
  /** The current EDS marker, if any. */
  marker(): Buffer | undefined;
}

/**
 * One connection per proxy, as with real sidecars: a local subchannel pool
 * keeps grpc-js from sharing a TCP connection between channels.
 */
export function fleetChannel(opts: FleetClientOptions): grpc.Client {
  return new grpc.Client(opts.address, opts.credentials, {
    'grpc.use_local_subchannel_pool': 1,
    'grpc.initial_reconnect_backoff_ms': 100,
    'grpc.max_reconnect_backoff_ms': 1000,
    'grpc.max_receive_message_length': 64 * 1024 * 1024,
    // The server certificate names localhost too; an IP as TLS server name is deprecated (RFC 6066).
    'grpc.ssl_target_name_override': 'localhost',
  });
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

export class FleetClient {
  private readonly client: grpc.Client;
  private call: grpc.ClientDuplexStream<DiscoveryRequest, Buffer> | undefined;
  private readonly types = new Map<string, TypeState>();
  private epoch = 0;
  private stopped = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private failures = 0;
  responses = 0;

  constructor(private readonly opts: FleetClientOptions) {
    this.client = fleetChannel(opts);
    for (const t of REQUEST_ORDER)
      this.types.set(t, {
        version: '',
        nonce: '',
        names: [],
        received: undefined,
        eds: new Set(),
        rds: new Set(),
        sds: new Set(),
      });
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

  private state(typeUrl: string): TypeState {
    const st = this.types.get(typeUrl);
    if (!st) throw new Error(`unknown type ${typeUrl}`);
    return st;
  }

  private openStream(): void {
    this.epoch++;
    const epoch = this.epoch;
    const call = this.client.makeBidiStreamRequest(
      ADS_SOTW_PATH,
      (req: DiscoveryRequest) => Buffer.from(encodeDiscoveryRequest(req)),
      (bytes: Buffer) => bytes,
    );
    this.call = call;
    call.on('data', (bytes: Buffer) => {
      if (epoch === this.epoch) this.onResponse(bytes);
    });
    call.on('error', () => {
      // Reported through 'status'.
    });
    call.on('status', (s: grpc.StatusObject) => {
      if (epoch !== this.epoch) return;
      this.opts.onStreamEnd({ p: this.opts.spec.index, e: epoch, code: s.code, at: nowMs() });
      if (this.stopped) return;
      // Short jittered backoff, capped at 1 s (Envoy's default ADS retry starts at 500 ms).
      this.failures++;
      const base = Math.min(1000, 100 * 2 ** Math.min(this.failures - 1, 4));
      this.retryTimer = setTimeout(() => this.openStream(), base / 2 + Math.random() * base);
    });
    // A new stream: nothing received on it yet; nonces belong to the old stream.
    for (const st of this.types.values()) {
      st.received = undefined;
      st.nonce = '';
    }
    let first = true;
    for (const typeUrl of REQUEST_ORDER) {
      const st = this.state(typeUrl);
      const wildcard = typeUrl === TypeUrl.Cluster || typeUrl === TypeUrl.Listener;
      if (!wildcard && st.names.length === 0) continue;
      this.send(typeUrl, st, first);
      first = false;
    }
  }

  private send(typeUrl: string, st: TypeState, withNode = false): void {
    const req: DiscoveryRequest = {
      versionInfo: st.version,
      resourceNames: st.names,
      typeUrl,
      responseNonce: st.nonce,
    };
    // xDS: only the first request of a stream must carry the node.
    if (withNode) req.node = { id: this.opts.spec.cn, cluster: 'bench' };
    this.call?.write(req);
  }

  private onResponse(bytes: Buffer): void {
    this.responses++;
    this.failures = 0;
    const res = decodeEnvelope(bytes);
    const code = CODE_OF[res.typeUrl];
    const st = this.types.get(res.typeUrl);
    if (!code || !st) return;
    const received = new Set<string>();
    const eds = new Set<string>();
    const rds = new Set<string>();
    const sds = new Set<string>();
    for (const r of res.resources) {
      const f = this.opts.facts.of(r);
      received.add(f.name);
      for (const n of f.edsClusters) eds.add(n);
      for (const n of f.routes) rds.add(n);
      for (const n of f.secrets) sds.add(n);
    }
    st.version = res.versionInfo;
    st.nonce = res.nonce;
    // xDS rule 7: LDS/CDS responses are the full set; RDS/EDS/SDS name their
    // resources one by one, so a response may carry only the changed ones.
    if (res.typeUrl === TypeUrl.Cluster || res.typeUrl === TypeUrl.Listener || !st.received) {
      st.received = received;
    } else {
      for (const n of received) st.received.add(n);
    }
    st.eds = eds;
    st.rds = rds;
    st.sds = sds;
    // ACK with the current subscription (xDS: the ACK repeats the names).
    this.send(res.typeUrl, st);
    if (res.typeUrl === TypeUrl.Cluster || res.typeUrl === TypeUrl.Listener) this.resubscribe();
    const ev: AckEvent = {
      p: this.opts.spec.index,
      e: this.epoch,
      t: code,
      v: res.versionInfo,
      at: nowMs(),
      b: bytes.length,
      c: this.complete() ? 1 : 0,
    };
    const marker = this.opts.marker();
    if (marker && code === 'EDS') ev.m = bytes.includes(marker) ? 1 : 0;
    this.opts.onAck(ev);
  }

  /** What CDS and LDS reference: EDS from clusters, RDS from listeners, SDS from both. */
  private wanted(): Map<string, string[]> {
    const cds = this.state(TypeUrl.Cluster);
    const lds = this.state(TypeUrl.Listener);
    return new Map([
      [TypeUrl.ClusterLoadAssignment, [...cds.eds].sort()],
      [TypeUrl.RouteConfiguration, [...lds.rds].sort()],
      [TypeUrl.Secret, [...new Set([...cds.sds, ...lds.sds])].sort()],
    ]);
  }

  private resubscribe(): void {
    for (const [typeUrl, names] of this.wanted()) {
      const st = this.state(typeUrl);
      if (sameList(st.names, names)) continue;
      st.names = names;
      // Unsubscribed names are forgotten; the server resends them on re-subscription.
      if (st.received) st.received = new Set(names.filter((n) => st.received?.has(n)));
      this.send(typeUrl, st);
    }
  }

  /** CDS and LDS received on this stream, and every name they reference too. */
  private complete(): boolean {
    if (!this.state(TypeUrl.Cluster).received || !this.state(TypeUrl.Listener).received) return false;
    for (const [typeUrl, names] of this.wanted()) {
      const got = this.state(typeUrl).received;
      if (names.length === 0) continue;
      if (!got) return false;
      for (const n of names) if (!got.has(n)) return false;
    }
    return true;
  }

  /** For diagnostics: what this proxy still misses. */
  missing(): string[] {
    const out: string[] = [];
    if (!this.state(TypeUrl.Cluster).received) out.push('CDS');
    if (!this.state(TypeUrl.Listener).received) out.push('LDS');
    for (const [typeUrl, names] of this.wanted()) {
      const got = this.state(typeUrl).received;
      for (const n of names) if (!got?.has(n)) out.push(`${CODE_OF[typeUrl]}:${n}`);
    }
    return out;
  }
}
