import { status as Status } from '@grpc/grpc-js';
import type { ProxyContext } from '../../catalog/types.js';
import { type GenerationContext, isWildcardType, PUSH_ORDER } from '../../envoy/types.js';
import type { Logger } from '../../logger/logger.js';
import type { ProxyIdentity } from '../../mesh/identity.js';
import type { EncodedResource } from '../cache/encoded.js';
import { type GenerationCache, subscriptionKey } from '../cache/generation.js';
import { contentVersion } from '../cache/version.js';
import { AuthenticationError } from './auth.js';
import { encodeDiscoveryResponse } from './service.js';
import type { DiscoveryRequest, ProxyConfigSource, StreamStatus, TypeStatus } from './types.js';

/** The write side of one gRPC stream, as the state machine sees it. */
export interface StreamTransport {
  /** Writes one encoded response; false = the transport wants us to wait. `flushed` runs once it left. */
  write(response: Buffer, flushed: () => void): boolean;
  /** Ends the stream with an error status. */
  fail(code: Status, message: string): void;
}

export interface AdsStreamOptions {
  id: string;
  remote?: string;
  transport: StreamTransport;
  /** Resolves the proxy identity when the first request arrives; throws AuthenticationError. */
  authenticate(first: DiscoveryRequest): ProxyIdentity;
  source: ProxyConfigSource;
  cache: GenerationCache;
  logger: Logger;
  controlPlaneId: string;
  /** Unflushed bytes above which the stream counts as blocked. */
  maxBufferedBytes: number;
  onClose(stream: AdsStream): void;
}

/** Per stream, per type state (xDS rule 3: versions and nonces are per type). */
interface TypeState {
  readonly typeUrl: string;
  wildcard: boolean;
  /** Explicitly subscribed names (without '*'). Replaced, never mutated, so caches may hold it. */
  names: ReadonlySet<string>;
  key: string;
  lastNonce?: string;
  /** version_info of the last response sent. */
  sentVersion?: string;
  /** What the proxy holds from us, pruned to its current subscription. */
  sent: readonly EncodedResource[];
  /** contentVersion(sent); a new response is sent only when the content version differs. */
  contentVersion?: string;
  ackedVersion?: string;
  nackedVersion?: string;
  lastNackMessage?: string;
}

/**
 * Whether a request names exactly the subscribed names (ignoring '*'), without
 * building a set: every ACK repeats the whole list. A request repeating a name
 * reads as different, which only costs the slow path.
 */
function sameNames(requested: readonly string[], names: ReadonlySet<string>): boolean {
  let count = 0;
  for (const n of requested) {
    if (n === '*') continue;
    if (!names.has(n)) return false;
    count++;
  }
  return count === names.size;
}

function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * One SotW ADS stream: subscriptions, nonces, versions and ACK/NACK per type,
 * and the decision of what to send on a request or a push.
 */
export class AdsStream {
  readonly id: string;
  private identity: ProxyIdentity | undefined;
  private connectedAt: Date | undefined;
  private nodeId: string | undefined;
  private readonly types = new Map<string, TypeState>();
  private nonceSeq = 0;
  private closed = false;
  private unsubscribePush: (() => void) | undefined;
  private log: Logger;
  // Back-pressure: bytes handed to the transport and not flushed yet, and
  // whether a push is owed once the transport drains (at most one: coalesced).
  private buffered = 0;
  private blocked = false;
  private pushOwed = false;

  constructor(private readonly opts: AdsStreamOptions) {
    this.id = opts.id;
    this.log = opts.logger.child({ stream: opts.id });
  }

  /** Handles one DiscoveryRequest; never throws. */
  handleRequest(req: DiscoveryRequest): void {
    if (this.closed) return;
    try {
      if (this.identity === undefined && !this.connect(req)) return;
      this.handleTypeRequest(req);
    } catch (e) {
      this.log.error({ err: e, typeUrl: req.typeUrl }, 'failed to handle discovery request');
    }
  }

  /** Regenerates every subscribed type in make-before-break order and sends what changed. Never throws. */
  push(): void {
    if (this.closed || this.identity === undefined) return;
    if (this.blocked) {
      this.pushOwed = true; // xDS back-pressure: keep only "push again", never a queue of responses
      return;
    }
    const inputs = this.inputs();
    if (inputs === undefined) return;
    for (const typeUrl of this.pushOrder()) {
      const st = this.types.get(typeUrl);
      if (st === undefined) continue;
      // Rule 10: if an earlier type failed, later ones might point at what it did not deliver.
      if (!this.respond(st, inputs.proxy, inputs.ctx)) break;
      if (this.blocked) {
        this.pushOwed = true;
        break;
      }
    }
  }

  /** Cleans up once; tells the source the proxy is gone. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.unsubscribePush?.();
    if (this.identity !== undefined) {
      try {
        this.opts.source.proxyDisconnected(this.id);
      } catch (e) {
        this.log.error({ err: e }, 'proxyDisconnected failed');
      }
    }
    this.opts.onClose(this);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Debug view; undefined until the first request authenticated the stream. */
  status(): StreamStatus | undefined {
    if (this.identity === undefined || this.connectedAt === undefined) return undefined;
    const types: { [typeUrl: string]: TypeStatus } = {};
    for (const st of this.types.values()) {
      const t: TypeStatus = { subscribed: st.wildcard ? '*' : [...st.names].sort() };
      if (st.sentVersion !== undefined) t.sentVersion = st.sentVersion;
      if (st.ackedVersion !== undefined) t.ackedVersion = st.ackedVersion;
      if (st.nackedVersion !== undefined) t.nackedVersion = st.nackedVersion;
      if (st.lastNackMessage !== undefined) t.lastNackMessage = st.lastNackMessage;
      types[st.typeUrl] = t;
    }
    const s: StreamStatus = {
      streamId: this.id,
      identity: this.identity,
      connectedAt: this.connectedAt.toISOString(),
      types,
    };
    if (this.opts.remote !== undefined) s.remote = this.opts.remote;
    if (this.nodeId !== undefined) s.nodeId = this.nodeId;
    return s;
  }

  private fail(code: Status, message: string): void {
    this.opts.transport.fail(code, message);
    this.close();
  }

  /** First request: authenticate, remember the node (rule 5), register with the source. */
  private connect(req: DiscoveryRequest): boolean {
    let identity: ProxyIdentity;
    try {
      identity = this.opts.authenticate(req);
    } catch (e) {
      const message = errorMessage(e);
      this.log.warn({ nodeId: req.node?.id }, `refused stream: ${message}`);
      this.fail(e instanceof AuthenticationError ? Status.UNAUTHENTICATED : Status.INTERNAL, message);
      return false;
    }
    this.log = this.log.child({ proxy: identity.cn });
    try {
      this.opts.source.proxyConnected(identity, this.id, this.opts.remote);
    } catch (e) {
      const message = errorMessage(e);
      this.log.warn(`refused proxy: ${message}`);
      // Not connected yet: no proxyDisconnected for this stream.
      this.opts.transport.fail(Status.PERMISSION_DENIED, message);
      this.closed = true;
      this.opts.onClose(this);
      return false;
    }
    this.identity = identity;
    this.connectedAt = new Date();
    this.nodeId = req.node?.id; // rule 5: only the first request must carry node
    this.unsubscribePush = this.opts.source.onPush(this.id, () => this.push());
    this.log.info({ remote: this.opts.remote }, 'proxy connected');
    return true;
  }

  private handleTypeRequest(req: DiscoveryRequest): void {
    const { typeUrl } = req;
    if (!this.opts.source.generators.has(typeUrl)) {
      this.log.debug({ typeUrl }, 'request for a type skein does not serve; ignored');
      return;
    }
    let st = this.types.get(typeUrl);
    // Rule 2: a nonce that is not the last one sent for this type is stale; ignore
    // the whole request, resource names included. An empty nonce is a (re)subscription.
    if (st?.lastNonce !== undefined && req.responseNonce !== '' && req.responseNonce !== st.lastNonce) {
      this.log.debug({ typeUrl, nonce: req.responseNonce, expected: st.lastNonce }, 'stale nonce; ignored');
      return;
    }
    const first = st === undefined;
    if (st === undefined) {
      st = { typeUrl, wildcard: false, names: new Set(), key: subscriptionKey(new Set()), sent: [] };
      this.types.set(typeUrl, st);
    }
    if (req.errorDetail !== undefined) {
      // Rule 3: a NACK; the proxy keeps its last good config and so do we. The
      // rejected content stays "sent", so it is not resent until it changes.
      st.nackedVersion = st.sentVersion;
      st.lastNackMessage = req.errorDetail.message;
      this.log.warn(
        { typeUrl, nonce: req.responseNonce, version: st.sentVersion, error: req.errorDetail.message },
        'proxy rejected configuration (NACK)',
      );
    } else if (req.responseNonce !== '') {
      st.ackedVersion = req.versionInfo;
    }
    this.updateSubscription(st, req.resourceNames, first);
    if (this.blocked) {
      this.pushOwed = true;
      return;
    }
    const inputs = this.inputs();
    if (inputs !== undefined) this.respond(st, inputs.proxy, inputs.ctx);
  }

  private updateSubscription(st: TypeState, requested: readonly string[], first: boolean): void {
    const star = requested.includes('*');
    // Rule 6: wildcard only for LDS/CDS — '*', or an empty list on the first
    // request (and an empty list keeps an existing wildcard). For RDS/EDS/SDS an
    // empty list means unsubscribe.
    const wildcard =
      isWildcardType(st.typeUrl) && (star || (requested.length === 0 && (first || st.wildcard)));
    if (!first && wildcard === st.wildcard && sameNames(requested, st.names)) return;
    const names = new Set(requested.filter((n) => n !== '*'));
    st.wildcard = wildcard;
    st.names = names;
    st.key = subscriptionKey(wildcard ? undefined : names);
    if (!wildcard) {
      // The proxy forgets what it unsubscribed from; a later re-subscription must resend it.
      const kept = st.sent.filter((r) => names.has(r.name));
      if (kept.length !== st.sent.length) {
        st.sent = kept;
        st.contentVersion = contentVersion(kept);
      }
    }
  }

  private inputs(): { proxy: ProxyContext; ctx: GenerationContext } | undefined {
    if (this.identity === undefined) return undefined;
    try {
      // One context per push, so every type is generated from the same view.
      const ctx = this.opts.source.generationContext();
      return { proxy: this.opts.source.proxyContext(this.identity), ctx };
    } catch (e) {
      this.log.error({ err: e }, 'cannot build proxy context; keeping the last configuration');
      return undefined;
    }
  }

  /** Sends the type's current set if it differs from what the proxy holds. False = generation failed. */
  private respond(st: TypeState, proxy: ProxyContext, ctx: GenerationContext): boolean {
    if (!st.wildcard && st.names.size === 0) return true; // unsubscribed (rule 6)
    const generator = this.opts.source.generators.get(st.typeUrl);
    if (generator === undefined) return true;
    const requested = st.wildcard ? undefined : st.names;
    let set: ReturnType<GenerationCache['get']>;
    try {
      set = this.opts.cache.get(st.typeUrl, proxy, ctx, { names: requested, key: st.key }, () =>
        generator.generate(proxy, ctx, requested),
      );
    } catch (e) {
      this.log.error({ err: e, typeUrl: st.typeUrl }, 'generation failed; keeping the last configuration');
      return false;
    }
    if (set.duplicateNames.length > 0)
      this.log.warn({ typeUrl: st.typeUrl, names: set.duplicateNames }, 'generator returned duplicate names');
    // Rules 4/5 and 3: content equal to what the proxy holds (or just rejected) is not sent again.
    if (set.version === st.contentVersion) return true;
    const nonce = (++this.nonceSeq).toString(36); // rule 1: fresh nonce per response
    const response = encodeDiscoveryResponse({
      versionInfo: set.version, // rule 3: per type; rule 7: LDS/CDS carry the full set
      resources: set.resources,
      typeUrl: st.typeUrl,
      nonce,
      controlPlaneId: this.opts.controlPlaneId,
    });
    st.lastNonce = nonce;
    st.sentVersion = set.version;
    st.contentVersion = set.version;
    st.sent = set.resources;
    this.write(response);
    this.log.debug({ typeUrl: st.typeUrl, version: set.version, nonce, count: set.resources.length }, 'sent');
    return true;
  }

  private write(response: Buffer): void {
    const size = response.length;
    this.buffered += size;
    const ok = this.opts.transport.write(response, () => {
      this.buffered -= size;
      // Resume once everything written has left: then push the latest state once.
      if (this.blocked && this.buffered === 0) {
        this.blocked = false;
        if (this.pushOwed) {
          this.pushOwed = false;
          this.push();
        }
      }
    });
    if (!ok || this.buffered > this.opts.maxBufferedBytes) this.blocked = true;
  }

  private pushOrder(): string[] {
    const order: string[] = [...PUSH_ORDER];
    for (const t of this.types.keys()) if (!order.includes(t)) order.push(t);
    return order;
  }
}
