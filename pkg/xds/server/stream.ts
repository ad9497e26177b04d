import type { ProxyContext } from '../../catalog/types.js';
import { type GenerationContext, isWildcardType, TypeUrl } from '../../envoy/types.js';
import type { Logger } from '../../logger/logger.js';
import type { EncodedResource } from '../cache/encoded.js';
import { type GenerationCache, subscriptionKey } from '../cache/generation.js';
import { contentVersion } from '../cache/version.js';
import { changedClusters, takeRewarmed, withRewarmed } from './cluster-rewarm.js';
import type { Refusal } from './limits.js';
import { discoveryResponse } from './service.js';
import { carriesFullSet, changedSince } from './sotw-partial.js';
import { clip, pushOrder, StreamLifecycle, type StreamOptions, typeStatus } from './stream-lifecycle.js';
import type { DiscoveryRequest, StreamStatus, TypeStatus } from './types.js';

export type { StreamTransport } from './stream-lifecycle.js';

export interface AdsStreamOptions extends StreamOptions<DiscoveryRequest> {
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
  /**
   * Set by a NACK: the next response carries the full set. A client may have
   * applied part of a rejected response (Envoy applies it watch by watch
   * until one fails), so only a full set says again what it should hold.
   */
  resendAll?: boolean;
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

/**
 * One SotW ADS stream: subscriptions, nonces, versions and ACK/NACK per type,
 * and the decision of what to send on a request or a push.
 */
export class AdsStream {
  readonly id: string;
  private readonly types = new Map<string, TypeState>();
  /**
   * Clusters whose content changed in the last CDS response, so their
   * ClusterLoadAssignments go out again even though unchanged (cluster-rewarm.ts).
   */
  private readonly rewarm = new Set<string>();
  /** Connection, cleanup and back-pressure, shared with DeltaAdsStream. */
  private readonly life: StreamLifecycle<DiscoveryRequest>;

  constructor(private readonly opts: AdsStreamOptions) {
    this.id = opts.id;
    this.life = new StreamLifecycle(opts, {
      log: opts.logger.child({ stream: opts.id }),
      connectedMessage: 'proxy connected',
      push: () => this.push(),
      onClose: () => opts.onClose(this),
    });
  }

  private get log(): Logger {
    return this.life.log;
  }

  /** Handles one DiscoveryRequest; never throws. */
  handleRequest(req: DiscoveryRequest): void {
    this.life.receive(req, (r) => this.handleTypeRequest(r), 'failed to handle discovery request');
  }

  /** Regenerates every subscribed type in make-before-break order and sends what changed. Never throws. */
  push(): void {
    if (!this.life.mayPush()) return; // back-pressure: a blocked stream owes one push
    const inputs = this.life.inputs();
    if (inputs === undefined) return;
    for (const typeUrl of pushOrder(this.types.keys())) {
      const st = this.types.get(typeUrl);
      if (st === undefined) continue;
      // Rule 10: if an earlier type failed, later ones might point at what it did not deliver.
      if (!this.respond(st, inputs.proxy, inputs.ctx)) break;
      if (this.life.deferIfBlocked()) break;
    }
  }

  /** Cleans up once; tells the source the proxy is gone. */
  close(): void {
    this.life.close();
  }

  /** Ends the stream for going over a limit (limits.ts), with a status naming it. */
  refuse(refusal: Refusal): void {
    this.life.refuse(refusal);
  }

  get isClosed(): boolean {
    return this.life.isClosed;
  }

  /** Debug view; undefined until the first request authenticated the stream. */
  status(): StreamStatus | undefined {
    return this.life.status(() => {
      const types: { [typeUrl: string]: TypeStatus } = {};
      for (const st of this.types.values())
        types[st.typeUrl] = typeStatus(st.wildcard ? '*' : [...st.names].sort(), st);
      return types;
    });
  }

  /** Debug view: per type, the encoded resources the proxy was last sent (pruned to its subscription). */
  sentResources(): Map<string, readonly EncodedResource[]> {
    const out = new Map<string, readonly EncodedResource[]>();
    for (const st of this.types.values()) if (st.sentVersion !== undefined) out.set(st.typeUrl, st.sent);
    return out;
  }

  private handleTypeRequest(req: DiscoveryRequest): void {
    const { typeUrl } = req;
    if (!this.opts.source.generators.has(typeUrl)) {
      // Not an error: Envoy may ask for types a control plane does not serve, and waits for nothing.
      this.log.debug({ typeUrl: clip(typeUrl) }, 'request for a type skein does not serve; ignored');
      this.life.ignored('unknown-type');
      return;
    }
    let st = this.types.get(typeUrl);
    // Rule 2: a nonce that is not the last one sent for this type is stale; ignore
    // the whole request, resource names included. An empty nonce is a (re)subscription.
    if (st?.lastNonce !== undefined && req.responseNonce !== '' && req.responseNonce !== st.lastNonce) {
      this.log.debug(
        { typeUrl, nonce: clip(req.responseNonce), expected: st.lastNonce },
        'stale nonce; ignored',
      );
      this.life.ignored('stale-nonce');
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
      st.resendAll = true;
      this.life.nacked(typeUrl, req.responseNonce);
      this.log.warn(
        { typeUrl, nonce: req.responseNonce, version: st.sentVersion, error: req.errorDetail.message },
        'proxy rejected configuration (NACK)',
      );
    } else if (req.responseNonce !== '') {
      st.ackedVersion = req.versionInfo;
      this.life.acked(typeUrl, req.responseNonce);
    }
    this.updateSubscription(st, req.resourceNames, first);
    if (this.life.deferIfBlocked()) return;
    const inputs = this.life.inputs();
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
    const before = st.names;
    // Lazily: only a type whose generator refuses names reads them.
    this.life.requested(st.typeUrl, newNames(names, before));
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

  /** Sends the type's current set if it differs from what the proxy holds. False = generation failed. */
  private respond(st: TypeState, proxy: ProxyContext, ctx: GenerationContext): boolean {
    if (!st.wildcard && st.names.size === 0) return true; // unsubscribed (rule 6)
    const generator = this.opts.source.generators.get(st.typeUrl);
    if (generator === undefined) return true;
    const requested = st.wildcard ? undefined : st.names;
    let set: ReturnType<GenerationCache['get']>;
    try {
      set = this.opts.cache.get(
        st.typeUrl,
        proxy,
        ctx,
        { names: requested, key: st.key },
        (c) => generator.generate(proxy, c, requested),
        generator.shared,
      );
    } catch (e) {
      this.log.error({ err: e, typeUrl: st.typeUrl }, 'generation failed; keeping the last configuration');
      return false;
    }
    if (set.duplicateNames.length > 0)
      this.log.warn({ typeUrl: st.typeUrl, names: set.duplicateNames }, 'generator returned duplicate names');
    const rewarmed =
      st.typeUrl === TypeUrl.ClusterLoadAssignment ? takeRewarmed(this.rewarm, set.resources) : [];
    // Rules 4/5 and 3: content equal to what the proxy holds (or just rejected) is not sent again.
    if (set.version === st.contentVersion && rewarmed.length === 0) return true;
    // Rule 7: LDS/CDS carry the full set; RDS/EDS/SDS only what the proxy lacks
    // (sotw-partial.ts), except in the stream's first response of the type.
    const full = st.sentVersion === undefined || st.resendAll === true || carriesFullSet(st.typeUrl);
    const resources = full ? set.resources : withRewarmed(changedSince(st.sent, set.resources), rewarmed);
    if (st.typeUrl === TypeUrl.Cluster && st.sentVersion !== undefined)
      for (const name of changedClusters(st.sent, set.resources)) this.rewarm.add(name);
    if (!full && resources.length === 0) {
      // Only names that no longer exist left the set: the proxy keeps them
      // (SotW cannot delete them) and needs nothing new.
      st.sent = set.resources;
      st.contentVersion = set.version;
      return true;
    }
    const nonce = this.life.nextNonce(); // rule 1: fresh nonce per response
    const response = discoveryResponse({
      // Rule 3: per type. It names the whole set the proxy holds once it applied
      // this response, a partial one included, so equal versions mean equal content.
      versionInfo: set.version,
      resources,
      typeUrl: st.typeUrl,
      nonce,
      controlPlaneId: this.opts.controlPlaneId,
    });
    st.lastNonce = nonce;
    st.sentVersion = set.version;
    st.contentVersion = set.version;
    st.sent = set.resources;
    st.resendAll = false;
    this.life.write(response, st.typeUrl, nonce);
    this.log.debug({ typeUrl: st.typeUrl, version: set.version, nonce, count: resources.length }, 'sent');
    return true;
  }
}

function* newNames(names: Iterable<string>, before: ReadonlySet<string>): Iterable<string> {
  for (const n of names) if (!before.has(n)) yield n;
}
