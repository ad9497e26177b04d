// Messages between the benchmark parent and its proxy-fleet workers (Node IPC).
import type { FleetTransportKind } from './fleet-transport.js';

export interface FleetProxySpec {
  index: number;
  cn: string;
  spiffe: string;
}

export type ParentMessage =
  | {
      type: 'init';
      address: string;
      /** All controller replicas' addresses when there are several: proxy i's own is replicaOf(i, n). */
      replicas?: string[];
      caDir: string;
      /** TLS server name the ADS serving certificate carries (default localhost). */
      serverName?: string;
      proxies: FleetProxySpec[];
      /** How often buffered events go to the parent, in ms. */
      flushMs: number;
      /** Delta ADS (DeltaAggregatedResources) instead of SotW. */
      delta: boolean;
      /** The first request of a stream carries only node id and cluster, not Envoy's whole Node. */
      minimalNode: boolean;
      /** Each proxy's client (fleet-transport.ts). */
      transport: FleetTransportKind;
    }
  | { type: 'connect' }
  /** From now on, report whether each EDS response carries this pod IP. */
  | { type: 'marker'; ip: string }
  /** Asks for what incomplete proxies still miss. */
  | { type: 'diagnose' }
  | { type: 'stop' };

/** Short type codes keep the event stream small. */
export const TYPE_CODES = ['CDS', 'EDS', 'LDS', 'RDS', 'SDS'] as const;
export type TypeCode = (typeof TYPE_CODES)[number];

/** One ACKed response of one proxy. */
export interface AckEvent {
  /** Proxy index. */
  p: number;
  /** Stream number of that proxy (1 = first stream; each reconnect adds one). */
  e: number;
  t: TypeCode;
  /** version_info ACKed. */
  v: string;
  /** Epoch ms (fractional) when the ACK was written. */
  at: number;
  /** Response size in bytes. */
  b: number;
  /** EDS only, when a marker is set: 1 = the response carries the marker IP. */
  m?: 0 | 1;
  /** 1 = after this response the proxy holds everything it subscribed to on this stream. */
  c: 0 | 1;
}

/** A stream of a proxy ended (the client retries on its own). */
export interface StreamEndEvent {
  p: number;
  e: number;
  code: number;
  at: number;
}

export type WorkerMessage =
  | { type: 'ready'; certMs: number }
  | { type: 'events'; acks: AckEvent[]; ends: StreamEndEvent[] }
  | { type: 'stats'; decoded: number; responses: number }
  | { type: 'missing'; proxies: { p: number; missing: string[] }[] }
  | { type: 'error'; message: string };

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

// IPC delivers what the other side sent; the guards only tell the variants apart.
export function isParentMessage(x: unknown): x is ParentMessage {
  return isObject(x) && ['init', 'connect', 'marker', 'diagnose', 'stop'].includes(String(x['type']));
}

export function isWorkerMessage(x: unknown): x is WorkerMessage {
  return isObject(x) && ['ready', 'events', 'stats', 'missing', 'error'].includes(String(x['type']));
}

/** Epoch milliseconds with sub-millisecond resolution, comparable across processes on one host. */
export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * The replica (of n) proxy `index` connects to first: a fixed pseudo-random
 * draw, as a Service spreads connections over its endpoints. Not `index mod
 * n`: the topology puts service s's pods at s, s + S, s + 2S…, so with an even
 * S every pod of a service would land on one replica, and a failover would
 * move whole groups, none of which the survivors had generated.
 */
export function replicaOf(index: number, n: number): number {
  // splitmix32-style mixing of the index.
  let x = (index + 0x9e3779b9) | 0;
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  x ^= x >>> 16;
  return (x >>> 0) % n;
}
