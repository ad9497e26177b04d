// What a SotW AdsStream and a DeltaAdsStream share, kept out of both so the
// protocol logic stays in each: the first request's authentication and
// registration with the source, cleanup, back-pressure and the debug status
// frame. Held by each stream (composition), never inherited.
import { status as Status } from '@grpc/grpc-js';
import type { ProxyContext } from '../../catalog/types.js';
import { type GenerationContext, PUSH_ORDER } from '../../envoy/types.js';
import type { Logger } from '../../logger/logger.js';
import type { ProxyIdentity } from '../../mesh/identity.js';
import type { GenerationCache } from '../cache/generation.js';
import { AuthenticationError } from './auth.js';
import type { ChunkedResponse } from './chunked-response.js';
import type { Refusal } from './limits.js';
import { AckClock, type XdsObserver } from './observer.js';
import type { ProxyConfigSource, StreamStatus, TypeStatus } from './types.js';

/** The write side of one gRPC stream, as the state machine sees it. */
export interface StreamTransport {
  /** Writes one encoded response; false = the transport wants us to wait. `flushed` runs once it left. */
  write(response: ChunkedResponse, flushed: () => void): boolean;
  /** Ends the stream with an error status. */
  fail(code: Status, message: string): void;
}

/** The options both stream kinds take; `Req` is the protocol's request. */
export interface StreamOptions<Req> {
  id: string;
  remote?: string;
  transport: StreamTransport;
  /** Resolves the proxy identity when the first request arrives; throws AuthenticationError. */
  authenticate(first: Req): ProxyIdentity;
  source: ProxyConfigSource;
  cache: GenerationCache;
  logger: Logger;
  controlPlaneId: string;
  /** Unflushed bytes above which the stream counts as blocked. */
  maxBufferedBytes: number;
  /** Told about connections, responses, ACKs and NACKs (metrics). */
  observer?: XdsObserver;
  /** Resource names the stream may subscribe to per type (limits.ts). */
  maxNamesPerType: number;
}

/** What the owning stream contributes. */
export interface StreamHooks {
  /** The stream's logger before authentication. */
  log: Logger;
  /** Logged once the proxy is connected. */
  connectedMessage: string;
  /** Regenerates and sends what changed: on a push trigger, and when the transport drained with a push owed. */
  push(): void;
  /** Runs once, when the stream is closed or refused. */
  onClose(): void;
}

/** The generation inputs of one push. */
export interface PushInputs {
  proxy: ProxyContext;
  ctx: GenerationContext;
}

function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** A client-chosen string cut to a length fit for a log line. */
export function clip(s: string, max = 200): string {
  return s.length <= max ? s : `${s.slice(0, max)}… (${s.length} chars)`;
}

/** PUSH_ORDER (make before break, xDS rule 10), then any other subscribed type. */
export function pushOrder(subscribed: Iterable<string>): string[] {
  const order: string[] = [...PUSH_ORDER];
  for (const t of subscribed) if (!order.includes(t)) order.push(t);
  return order;
}

/** The per-type versions both protocols keep and report (xDS rule 3). */
export interface TypeVersions {
  sentVersion?: string;
  ackedVersion?: string;
  nackedVersion?: string;
  lastNackMessage?: string;
}

/** A type's debug status: its subscription plus whichever versions are known. */
export function typeStatus(
  subscribed: TypeStatus['subscribed'],
  st: TypeVersions,
  names?: string[],
): TypeStatus {
  const t: TypeStatus = { subscribed };
  if (names !== undefined) t.names = names;
  if (st.sentVersion !== undefined) t.sentVersion = st.sentVersion;
  if (st.ackedVersion !== undefined) t.ackedVersion = st.ackedVersion;
  if (st.nackedVersion !== undefined) t.nackedVersion = st.nackedVersion;
  if (st.lastNackMessage !== undefined) t.lastNackMessage = st.lastNackMessage;
  return t;
}

/** Refused names logged per stream; the rest are only counted. */
const MAX_REFUSALS_LOGGED = 5;

export class StreamLifecycle<Req extends { node?: { id: string }; encodedBytes?: number }> {
  private refusalsLogged = 0;
  private identity: ProxyIdentity | undefined;
  private connectedAt: Date | undefined;
  private nodeId: string | undefined;
  private nonceSeq = 0;
  private requests = 0;
  private requestBytes = 0;
  private closed = false;
  private unsubscribePush: (() => void) | undefined;
  private logger: Logger;
  // Back-pressure: bytes handed to the transport and not flushed yet, and
  // whether a push is owed once the transport drains (at most one: coalesced).
  private buffered = 0;
  private blocked = false;
  private pushOwed = false;
  // When the change behind the push in progress (or owed) happened; undefined
  // outside a push, when a response answers a request and is timed from now.
  private pushCause: number | undefined;
  private owedCause: number | undefined;
  private readonly acks = new AckClock();

  constructor(
    private readonly opts: StreamOptions<Req>,
    private readonly hooks: StreamHooks,
  ) {
    this.logger = hooks.log;
  }

  /** The stream's logger; names the proxy once it is connected. */
  get log(): Logger {
    return this.logger;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Connects on the first request, then hands each request to `handle`; never throws. */
  receive(req: Req & { typeUrl: string }, handle: (req: Req) => void, failure: string): void {
    if (this.closed) return;
    this.requests++;
    this.requestBytes += req.encodedBytes ?? 0;
    try {
      if (!this.connect(req)) return;
      handle(req);
    } catch (e) {
      this.logger.error({ err: e, typeUrl: req.typeUrl }, failure);
    }
  }

  /**
   * Connects on the first request: authenticate, remember the node (rule 5),
   * register with the source. True when the stream is connected (now or before).
   */
  private connect(req: Req): boolean {
    if (this.identity !== undefined) return true;
    let identity: ProxyIdentity;
    try {
      identity = this.opts.authenticate(req);
    } catch (e) {
      const message = errorMessage(e);
      this.logger.warn({ nodeId: req.node?.id }, `refused stream: ${message}`);
      this.fail(e instanceof AuthenticationError ? Status.UNAUTHENTICATED : Status.INTERNAL, message);
      return false;
    }
    this.logger = this.logger.child({ proxy: identity.cn });
    try {
      this.opts.source.proxyConnected(identity, this.opts.id, this.opts.remote);
    } catch (e) {
      const message = errorMessage(e);
      this.logger.warn(`refused proxy: ${message}`);
      // Not connected yet: no proxyDisconnected for this stream.
      this.opts.transport.fail(Status.PERMISSION_DENIED, message);
      this.closed = true;
      this.hooks.onClose();
      return false;
    }
    this.identity = identity;
    this.connectedAt = new Date();
    this.nodeId = req.node?.id; // rule 5: only the first request must carry node
    this.unsubscribePush = this.opts.source.onPush(this.opts.id, (changedAt) =>
      this.pushFor(changedAt ?? Date.now()),
    );
    this.opts.observer?.onConnect?.(identity.kind);
    this.logger.info({ remote: this.opts.remote }, this.hooks.connectedMessage);
    return true;
  }

  /** Cleans up once; tells the source the proxy is gone. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.unsubscribePush?.();
    if (this.identity !== undefined) {
      try {
        this.opts.source.proxyDisconnected(this.opts.id);
      } catch (e) {
        this.logger.error({ err: e }, 'proxyDisconnected failed');
      }
      this.opts.observer?.onDisconnect?.(this.identity.kind);
    }
    this.hooks.onClose();
  }

  /**
   * Whether a push may start: connected, open and not blocked. When blocked it
   * owes one push instead (xDS back-pressure: keep only "push again", never a
   * queue of responses).
   */
  mayPush(): boolean {
    if (this.closed || this.identity === undefined) return false;
    return !this.deferIfBlocked();
  }

  /** True (and one push owed) when the transport is blocked: the caller stops sending. */
  deferIfBlocked(): boolean {
    if (this.blocked) {
      this.pushOwed = true;
      // The owed push answers the earliest change it carries.
      const cause = this.pushCause ?? Date.now();
      this.owedCause = Math.min(this.owedCause ?? cause, cause);
    }
    return this.blocked;
  }

  /** Runs the owner's push with the responses it writes timed from `changedAt`. */
  private pushFor(changedAt: number): void {
    this.pushCause = changedAt;
    try {
      this.hooks.push();
    } finally {
      this.pushCause = undefined;
    }
  }

  /**
   * Ends the stream for going over a limit: a warning, the metric, and a
   * status naming the limit. Nothing of the offending request was applied.
   */
  refuse(refusal: Refusal): void {
    if (this.closed) return;
    this.logger.warn(
      { reason: refusal.reason, remote: this.opts.remote },
      `stream ended: ${refusal.message}`,
    );
    this.opts.observer?.onRefused?.(refusal.reason);
    this.fail(refusal.code, refusal.message);
  }

  /** A request ignored on purpose, for the metric. */
  /**
   * Newly requested names of a type: those the proxy may never have are
   * counted and logged (the generator answers nothing for them).
   */
  requested(typeUrl: string, names: Iterable<string>): void {
    const refusal = this.opts.source.generators.get(typeUrl)?.refusal;
    const identity = this.identity;
    if (refusal === undefined || identity === undefined) return;
    for (const name of names) {
      const reason = refusal(name, identity);
      if (reason === undefined) continue;
      this.opts.observer?.onResourceRefused?.(typeUrl, reason);
      // A hostile proxy could ask for thousands: the first few are logged, all are counted.
      this.refusalsLogged++;
      if (this.refusalsLogged <= MAX_REFUSALS_LOGGED)
        this.logger.warn({ typeUrl, name: clip(name), reason }, 'refused a resource this proxy may not have');
      if (this.refusalsLogged === MAX_REFUSALS_LOGGED)
        this.logger.warn('further refusals on this stream are counted (skein_xds_refused_total), not logged');
    }
  }

  ignored(reason: 'unknown-type' | 'stale-nonce'): void {
    this.opts.observer?.onIgnored?.(reason);
  }

  /** The proxy ACKed `nonce` of `typeUrl`. */
  acked(typeUrl: string, nonce: string): void {
    const seconds = this.acks.settle(typeUrl, nonce);
    if (seconds !== undefined) this.opts.observer?.onAck?.(typeUrl, nonce, seconds);
  }

  /** The proxy NACKed `nonce` of `typeUrl` (rule 3). */
  nacked(typeUrl: string, nonce: string): void {
    this.acks.settle(typeUrl, nonce);
    this.opts.observer?.onNack?.(typeUrl);
  }

  /** One view for a push, so every type is generated from the same state. Undefined = keep the last config. */
  inputs(): PushInputs | undefined {
    if (this.identity === undefined) return undefined;
    try {
      // One context per push, so every type is generated from the same view.
      const ctx = this.opts.source.generationContext();
      return { proxy: this.opts.source.proxyContext(this.identity), ctx };
    } catch (e) {
      this.logger.error({ err: e }, 'cannot build proxy context; keeping the last configuration');
      return undefined;
    }
  }

  /** A nonce not used before on this stream. */
  nextNonce(): string {
    return (++this.nonceSeq).toString(36);
  }

  /** Hands one response to the transport, counting its bytes until flushed. */
  write(response: ChunkedResponse, typeUrl: string, nonce: string): void {
    this.acks.sent(typeUrl, nonce, this.pushCause ?? Date.now());
    this.opts.observer?.onResponse?.(typeUrl, nonce);
    const size = response.byteLength;
    this.buffered += size;
    const ok = this.opts.transport.write(response, () => {
      this.buffered -= size;
      // Resume once everything written has left: then push the latest state once.
      if (this.blocked && this.buffered === 0) {
        this.blocked = false;
        if (this.pushOwed) {
          const cause = this.owedCause ?? Date.now();
          this.pushOwed = false;
          this.owedCause = undefined;
          this.pushFor(cause);
        }
      }
    });
    if (!ok || this.buffered > this.opts.maxBufferedBytes) this.blocked = true;
  }

  /** Debug view around the per-type states; undefined until the first request authenticated the stream. */
  status(types: () => { [typeUrl: string]: TypeStatus }, protocol?: 'delta'): StreamStatus | undefined {
    if (this.identity === undefined || this.connectedAt === undefined) return undefined;
    const s: StreamStatus = {
      streamId: this.opts.id,
      identity: this.identity,
      connectedAt: this.connectedAt.toISOString(),
      ...(protocol !== undefined ? { protocol } : {}),
      received: { requests: this.requests, bytes: this.requestBytes },
      types: types(),
    };
    if (this.opts.remote !== undefined) s.remote = this.opts.remote;
    if (this.nodeId !== undefined) s.nodeId = this.nodeId;
    return s;
  }

  private fail(code: Status, message: string): void {
    this.opts.transport.fail(code, message);
    this.close();
  }
}
