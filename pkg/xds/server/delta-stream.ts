import type { ProxyContext } from '../../catalog/types.js';
import { type GenerationContext, isWildcardType, TypeUrl } from '../../envoy/types.js';
import type { Logger } from '../../logger/logger.js';
import type { EncodedResource } from '../cache/encoded.js';
import { type GeneratedSet, subscriptionKey } from '../cache/generation.js';
import { contentVersion } from '../cache/version.js';
import { deltaDiscoveryResponse } from './delta-codec.js';
import { type Refusal, tooManyNames } from './limits.js';
import { clip, pushOrder, StreamLifecycle, type StreamOptions, typeStatus } from './stream-lifecycle.js';
import type { DeltaDiscoveryRequest, StreamStatus, TypeStatus } from './types.js';

export interface DeltaAdsStreamOptions extends StreamOptions<DeltaDiscoveryRequest> {
  onClose(stream: DeltaAdsStream): void;
}

/** Responses not (N)ACKed yet whose system version is remembered, per type; older ones are forgotten. */
const MAX_PENDING_NONCES = 32;

/** Per stream, per type state (xDS rule 11: subscriptions and versions are per type). */
interface DeltaTypeState {
  readonly typeUrl: string;
  /**
   * LDS/CDS only: set by an empty first subscription or '*', ended only by
   * unsubscribing '*'. Names subscribed later add to it; neither they nor
   * initial_resource_versions turn it into a named subscription.
   */
  wildcard: boolean;
  /** Explicitly subscribed names (never '*'). Replaced, never mutated, so caches may hold it. */
  names: ReadonlySet<string>;
  key: string;
  /**
   * What the client holds: name → resource version (our content hash). Filled
   * by what we send and by initial_resource_versions on a reconnect; '' forces
   * the next response to state the resource (sent, or removed).
   */
  readonly known: Map<string, string>;
  /** The last encoded resource sent per name, for the debug view (valid while `known` has the name). */
  readonly sent: Map<string, EncodedResource>;
  /** The generated sets the client is known to hold exactly: an identical set on a push needs no diff. */
  synced: readonly GeneratedSet[] | undefined;
  /** nonce → system version of responses not (N)ACKed yet. */
  readonly pending: Map<string, string>;
  sentVersion?: string;
  ackedVersion?: string;
  nackedVersion?: string;
  lastNackMessage?: string;
}

/** The resources a client lacks or holds in another version, and the names it holds that are gone. */
interface Diff {
  updates: EncodedResource[];
  removed: string[];
  /** Version of the whole tracked set (DeltaDiscoveryResponse.system_version_info, debugging only). */
  version: string;
}

/** What a response carries: everything ('first' even when empty), or one half of a push. */
type Part = 'first' | 'all' | 'updates' | 'removals';

function sameSets(a: readonly GeneratedSet[] | undefined, b: readonly GeneratedSet[]): boolean {
  return a !== undefined && a.length === b.length && a.every((s, i) => s === b[i]);
}

/**
 * One Delta ADS stream (`DeltaAggregatedResources`): per-type subscribe and
 * unsubscribe deltas, per-resource versions (the content hash of each encoded
 * resource), `removed_resources`, nonces and ACK/NACK. Same inputs, push
 * triggers and back-pressure as the SotW AdsStream.
 */
export class DeltaAdsStream {
  readonly id: string;
  private readonly types = new Map<string, DeltaTypeState>();
  /** Clusters updated in place by the last CDS response; their endpoints go out again (cluster-rewarm.ts). */
  private readonly rewarm = new Set<string>();
  /** Connection, cleanup and back-pressure (unflushed bytes, at most one owed push), as in AdsStream. */
  private readonly life: StreamLifecycle<DeltaDiscoveryRequest>;

  constructor(private readonly opts: DeltaAdsStreamOptions) {
    this.id = opts.id;
    this.life = new StreamLifecycle(opts, {
      log: opts.logger.child({ stream: opts.id, delta: true }),
      connectedMessage: 'proxy connected (delta)',
      push: () => this.push(),
      onClose: () => opts.onClose(this),
    });
  }

  private get log(): Logger {
    return this.life.log;
  }

  /** Handles one DeltaDiscoveryRequest; never throws. */
  handleRequest(req: DeltaDiscoveryRequest): void {
    this.life.receive(req, (r) => this.handleTypeRequest(r), 'failed to handle delta discovery request');
  }

  /**
   * Regenerates every subscribed type and sends what changed, make before
   * break (xDS rule 10): new and changed resources in the order CDS → EDS →
   * SDS → LDS → RDS, then removals in the reverse order, so nothing is taken
   * away while something sent earlier may still point at it. Never throws.
   */
  push(): void {
    if (!this.life.mayPush()) return; // back-pressure: a blocked stream owes one push
    const inputs = this.life.inputs();
    if (inputs === undefined) return;
    const order = pushOrder(this.types.keys());
    const withRemovals: [DeltaTypeState, readonly GeneratedSet[]][] = [];
    for (const typeUrl of order) {
      const st = this.types.get(typeUrl);
      if (st === undefined) continue;
      const sets = this.generate(st, inputs.proxy, inputs.ctx);
      // Rule 10: if an earlier type failed, later ones might point at what it did not deliver.
      if (sets === undefined) return;
      if (this.respond(st, sets, 'updates')) withRemovals.push([st, sets]);
      if (this.life.deferIfBlocked()) return;
    }
    for (const [st, sets] of withRemovals.reverse()) {
      this.respond(st, sets, 'removals');
      if (this.life.deferIfBlocked()) return;
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
      for (const st of this.types.values()) {
        const named = [...st.names].sort();
        const extra = st.wildcard && named.length > 0 ? named : undefined;
        types[st.typeUrl] = typeStatus(st.wildcard ? '*' : named, st, extra);
      }
      return types;
    }, 'delta');
  }

  /** Debug view: per type, the encoded resources last sent that the client still holds. */
  sentResources(): Map<string, readonly EncodedResource[]> {
    const out = new Map<string, readonly EncodedResource[]>();
    for (const st of this.types.values()) {
      if (st.sentVersion === undefined) continue;
      const held: EncodedResource[] = [];
      for (const [name, r] of st.sent) if (st.known.has(name)) held.push(r);
      out.set(st.typeUrl, held);
    }
    return out;
  }

  private handleTypeRequest(req: DeltaDiscoveryRequest): void {
    const { typeUrl } = req;
    if (!this.opts.source.generators.has(typeUrl)) {
      // Not an error: Envoy may ask for types a control plane does not serve, and waits for nothing.
      this.log.debug({ typeUrl: clip(typeUrl) }, 'request for a type skein does not serve; ignored');
      this.life.ignored('unknown-type');
      return;
    }
    let st = this.types.get(typeUrl);
    const first = st === undefined;
    if (st === undefined) {
      st = {
        typeUrl,
        wildcard: false,
        names: new Set(),
        key: subscriptionKey(new Set()),
        known: new Map(),
        sent: new Map(),
        synced: undefined,
        pending: new Map(),
      };
      this.types.set(typeUrl, st);
    }
    if (req.responseNonce !== '' || req.errorDetail !== undefined) this.acknowledge(st, req);
    // Unlike SotW (rule 2), a request with an old nonce still carries a
    // subscription delta that nothing will repeat: it is always applied.
    const changed = this.updateSubscription(st, req, first);
    if (!changed) return; // a plain ACK or NACK: nothing to answer (rules 3, 4)
    if (this.life.deferIfBlocked()) return;
    const inputs = this.life.inputs();
    if (inputs === undefined) return;
    const sets = this.generate(st, inputs.proxy, inputs.ctx);
    // The first request of a type is answered even when nothing differs: a
    // new wildcard client waits for one before it counts as initialised (as
    // in SotW), and a reconnecting client (initial_resource_versions) learns
    // it is in sync. Not a new named subscription: an empty answer to it
    // would end Envoy's warming of the resource it waits for.
    const force = first && (st.wildcard || st.known.size > 0);
    if (sets !== undefined) this.respond(st, sets, force ? 'first' : 'all');
  }

  /** ACK or NACK of an earlier response, paired by nonce (rule 1). */
  private acknowledge(st: DeltaTypeState, req: DeltaDiscoveryRequest): void {
    const version = st.pending.get(req.responseNonce);
    if (version !== undefined) {
      // Responses are answered in order: this one settles every earlier one too.
      for (const nonce of st.pending.keys()) {
        st.pending.delete(nonce);
        if (nonce === req.responseNonce) break;
      }
    }
    if (req.errorDetail !== undefined) {
      // Rule 3: the proxy keeps what it had. What we sent stays recorded as
      // sent, so the same content is not sent again until it changes.
      if (version !== undefined) st.nackedVersion = version;
      st.lastNackMessage = req.errorDetail.message;
      this.life.nacked(st.typeUrl, req.responseNonce);
      this.log.warn(
        { typeUrl: st.typeUrl, nonce: req.responseNonce, version, error: req.errorDetail.message },
        'proxy rejected configuration (NACK)',
      );
    } else if (version !== undefined) {
      st.ackedVersion = version;
      this.life.acked(st.typeUrl, req.responseNonce);
    } else {
      this.log.debug({ typeUrl: st.typeUrl, nonce: req.responseNonce }, 'ACK of an unknown or old nonce');
    }
  }

  /** Applies one request's subscription delta; true when the client may now be owed a response. */
  private updateSubscription(st: DeltaTypeState, req: DeltaDiscoveryRequest, first: boolean): boolean {
    const { resourceNamesSubscribe: subscribe, resourceNamesUnsubscribe: unsubscribe } = req;
    const wildcardType = isWildcardType(st.typeUrl);
    if (first) {
      // Rule 6: only LDS/CDS have a wildcard; an empty first subscription is one.
      if (wildcardType && subscribe.length === 0) st.wildcard = true;
      // Rule 11: on a reconnect the client says what it holds; those versions
      // count as sent. They say nothing about what it subscribes to.
      for (const [name, version] of req.initialResourceVersions) st.known.set(name, version);
    } else if (subscribe.length === 0 && unsubscribe.length === 0) {
      return false;
    }
    const wasWildcard = st.wildcard;
    let names: Set<string> | undefined;
    for (const name of subscribe) {
      if (name === '*') {
        if (wildcardType) st.wildcard = true;
        else this.log.debug({ typeUrl: st.typeUrl }, '"*" for a type without wildcard; ignored');
        continue;
      }
      if (!st.names.has(name)) {
        names ??= new Set(st.names);
        names.add(name);
        this.life.requested(st.typeUrl, [name]);
      }
      // The client must get every name it subscribes to, even one we believe
      // it holds: it may have dropped it meanwhile. Not on the reconnect's
      // first request, where initial_resource_versions say what it holds.
      if (!first || !req.initialResourceVersions.has(name)) st.known.delete(name);
    }
    for (const name of unsubscribe) {
      if (name === '*') {
        st.wildcard = false;
        continue;
      }
      const explicit = (names ?? st.names).has(name);
      if (explicit) {
        names ??= new Set(st.names);
        names.delete(name);
      }
      // Still covered by the wildcard: the client wants to be told whether the
      // resource still exists ('' = state it next time, resent or removed).
      if (st.wildcard && explicit) st.known.set(name, '');
      else if (!st.wildcard) st.known.delete(name);
    }
    if (names !== undefined && names.size > this.opts.maxNamesPerType) {
      // Subscriptions add up over requests in Delta: the limit is on what the stream holds.
      // Nothing of this request is kept: the stream ends.
      this.life.refuse(tooManyNames({ maxNamesPerType: this.opts.maxNamesPerType }, names.size, st.typeUrl));
      return false;
    }
    if (names !== undefined) {
      st.names = names;
      st.key = subscriptionKey(names);
    }
    if (!st.wildcard && (first || wasWildcard)) {
      // The client drops what it no longer subscribes to by itself: nothing to
      // remove. (Unsubscribed names were dropped above already.)
      const tracked = names ?? st.names;
      for (const name of st.known.keys()) if (!tracked.has(name)) st.known.delete(name);
    }
    st.synced = undefined;
    return true;
  }

  /** The type's current sets (wildcard and/or named), shared per group through the cache. Undefined = failed. */
  private generate(
    st: DeltaTypeState,
    proxy: ProxyContext,
    ctx: GenerationContext,
  ): readonly GeneratedSet[] | undefined {
    const generator = this.opts.source.generators.get(st.typeUrl);
    if (generator === undefined) return [];
    const sets: GeneratedSet[] = [];
    try {
      if (st.wildcard)
        sets.push(
          this.opts.cache.get(
            st.typeUrl,
            proxy,
            ctx,
            { names: undefined, key: subscriptionKey(undefined) },
            (c) => generator.generate(proxy, c, undefined),
            generator.shared,
          ),
        );
      // Names subscribed next to a wildcard may lie outside what the wildcard yields.
      if (st.names.size > 0) {
        const names = st.names;
        sets.push(
          this.opts.cache.get(
            st.typeUrl,
            proxy,
            ctx,
            { names, key: st.key },
            (c) => generator.generate(proxy, c, names),
            generator.shared,
          ),
        );
      }
    } catch (e) {
      this.log.error({ err: e, typeUrl: st.typeUrl }, 'generation failed; keeping the last configuration');
      return undefined;
    }
    for (const set of sets)
      if (set.duplicateNames.length > 0)
        this.log.warn(
          { typeUrl: st.typeUrl, names: set.duplicateNames },
          'generator returned duplicate names',
        );
    return sets;
  }

  private diff(st: DeltaTypeState, sets: readonly GeneratedSet[]): Diff {
    let current: readonly EncodedResource[];
    let version: string;
    if (sets.length === 1 && sets[0] !== undefined) {
      current = sets[0].resources;
      version = sets[0].version;
    } else {
      // Wildcard plus named: one resource per name (rule 9), the wildcard's copy first.
      const byName = new Map<string, EncodedResource>();
      for (const set of sets) for (const r of set.resources) if (!byName.has(r.name)) byName.set(r.name, r);
      current = [...byName.values()];
      version = current.length === 0 ? '' : contentVersion(current);
    }
    const present = new Set<string>();
    const updates: EncodedResource[] = [];
    for (const r of current) {
      present.add(r.name);
      // Per-resource version = content hash: send only what the client holds in another version (or not at all).
      if (st.known.get(r.name) !== r.hash) updates.push(r);
    }
    const removed: string[] = [];
    // Held by the client but no longer in the set: for a wildcard, gone from
    // what the proxy gets; for a named subscription, no longer existing.
    for (const name of st.known.keys()) if (!present.has(name)) removed.push(name);
    return { updates, removed, version };
  }

  /**
   * Sends the part of the type's difference asked for. Returns true when
   * removals remain to be sent (only for part 'updates').
   */
  private respond(st: DeltaTypeState, sets: readonly GeneratedSet[], part: Part): boolean {
    // A changed Cluster warms until its endpoints arrive again (cluster-rewarm.ts):
    // forgetting them makes the diff resend them.
    const rewarming =
      st.typeUrl === TypeUrl.ClusterLoadAssignment && part !== 'removals' && this.rewarm.size > 0;
    if (rewarming) {
      for (const name of this.rewarm) st.known.delete(name);
      this.rewarm.clear();
    }
    if (part !== 'first' && !rewarming && sameSets(st.synced, sets)) return false; // rule 4: an unchanged push costs no diff
    const d = this.diff(st, sets);
    if (st.typeUrl === TypeUrl.Cluster && part !== 'removals')
      for (const r of d.updates) if (st.known.has(r.name)) this.rewarm.add(r.name);
    const updates = part === 'removals' ? [] : d.updates;
    const removed = part === 'updates' ? [] : d.removed;
    const removalsLeft = part === 'updates' && d.removed.length > 0;
    if (!removalsLeft && (part !== 'removals' || d.updates.length === 0)) st.synced = sets;
    if (part !== 'first' && updates.length === 0 && removed.length === 0) return removalsLeft; // rule 4
    const nonce = this.life.nextNonce(); // rule 1: fresh nonce per response
    const response = deltaDiscoveryResponse({
      systemVersionInfo: d.version,
      resources: updates,
      removedResources: removed,
      typeUrl: st.typeUrl,
      nonce,
      controlPlaneId: this.opts.controlPlaneId,
    });
    for (const r of updates) {
      st.known.set(r.name, r.hash);
      st.sent.set(r.name, r);
    }
    for (const name of removed) {
      st.known.delete(name);
      st.sent.delete(name);
    }
    st.pending.set(nonce, d.version);
    if (st.pending.size > MAX_PENDING_NONCES) {
      const oldest = st.pending.keys().next().value;
      if (oldest !== undefined) st.pending.delete(oldest);
    }
    st.sentVersion = d.version;
    this.life.write(response, st.typeUrl, nonce);
    this.log.debug(
      { typeUrl: st.typeUrl, version: d.version, nonce, count: updates.length, removed: removed.length },
      'sent',
    );
    return removalsLeft;
  }
}
