// What the ADS server reports about its streams, for metrics. An interface
// here, so pkg/xds stays free of any metrics library; every hook is optional.
import type { ProxyKind } from '../../mesh/constants.js';

export interface XdsObserver {
  /** A proxy's first request was accepted (authenticated and registered). */
  onConnect?(kind: ProxyKind): void;
  /** A connected proxy's stream ended. */
  onDisconnect?(kind: ProxyKind): void;
  /** One DiscoveryResponse (or DeltaDiscoveryResponse) of this type was written. */
  onResponse?(typeUrl: string, nonce: string): void;
  /**
   * The proxy ACKed a response of this type; `seconds` runs from what caused
   * it (the earliest change announced for a push, else the request it answered).
   */
  onAck?(typeUrl: string, nonce: string, seconds: number): void;
  /** The proxy rejected a response of this type (a NACK: error_detail set). */
  onNack?(typeUrl: string): void;
  /** A stream was ended for going over a limit or sending what does not decode (limits.ts). */
  onRefused?(reason: string): void;
  /** A proxy asked for a resource it may never have (e.g. another identity's key: sds/refusal.ts); one call per name. */
  onResourceRefused?(typeUrl: string, reason: string): void;
  /** A request was ignored: a type skein does not serve, or a stale nonce (SotW, xDS rule 2). */
  onIgnored?(reason: 'unknown-type' | 'stale-nonce'): void;
}

// A proxy that never answers must not grow the map without bound.
const MAX_PENDING_PER_TYPE = 16;

/**
 * Per stream: when the cause of each unanswered response happened, by type and
 * nonce, so its ACK can be timed. Nonces are per stream (xDS rule 1).
 */
export class AckClock {
  private readonly pending = new Map<string, Map<string, number>>();

  constructor(private readonly now: () => number = Date.now) {}

  sent(typeUrl: string, nonce: string, causedAt: number): void {
    let byNonce = this.pending.get(typeUrl);
    if (byNonce === undefined) {
      byNonce = new Map();
      this.pending.set(typeUrl, byNonce);
    }
    byNonce.set(nonce, causedAt);
    if (byNonce.size > MAX_PENDING_PER_TYPE) {
      const oldest = byNonce.keys().next().value;
      if (oldest !== undefined) byNonce.delete(oldest);
    }
  }

  /**
   * Settles `nonce` and every earlier response of the type (answered in order).
   * Seconds since its cause, or undefined for a nonce not pending.
   */
  settle(typeUrl: string, nonce: string): number | undefined {
    const byNonce = this.pending.get(typeUrl);
    const causedAt = byNonce?.get(nonce);
    if (byNonce === undefined || causedAt === undefined) return undefined;
    for (const n of byNonce.keys()) {
      byNonce.delete(n);
      if (n === nonce) break;
    }
    return Math.max(0, this.now() - causedAt) / 1000;
  }
}
