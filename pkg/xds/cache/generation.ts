import type { ProxyContext } from '../../catalog/types.js';
import type { GenerationContext, Resource } from '../../envoy/types.js';
import { type DependencyTracker, SHARED_GROUP } from './deps.js';
import type { EncodedResource, ResourceInterner } from './encoded.js';
import { contentVersion } from './version.js';

/** What one stream subscribed to for one type. */
export interface Subscription {
  /** undefined = wildcard (LDS/CDS only). */
  readonly names: ReadonlySet<string> | undefined;
  /** Stable key of `names` ('*' for a wildcard); computed when the subscription changes. */
  readonly key: string;
}

export function subscriptionKey(names: ReadonlySet<string> | undefined): string {
  return names === undefined ? '*' : `[${[...names].sort().join('\n')}]`;
}

/** A ready-to-send resource set for one type: filtered, de-duplicated, sorted, versioned. */
export interface GeneratedSet {
  readonly resources: readonly EncodedResource[];
  readonly version: string;
  /** Names the generator returned more than once (a generator bug; the first one is kept). */
  readonly duplicateNames: readonly string[];
}

/**
 * Caches generator output per (view version, typeUrl, proxy group, requested
 * names): proxies of one group share the work and the result. Only the
 * current view version is kept; a new version drops the old entries and
 * sweeps the interner. Types that also read the SecretSource (SDS) are cached
 * per secrets version as well, in their own map so an issuance drops only them.
 *
 * The entries of the version before are kept until the next one: a set
 * regenerated for a new version that holds exactly the same encoded resources
 * (the interner returns the same objects for unchanged messages) is answered
 * with the previous set itself, so its version hash is not computed again.
 *
 * With a DependencyTracker, every generation runs on a recording context and
 * its reads are recorded per group and entry, and `carryOver` moves the sets a
 * check found unaffected to the new version without generating them again.
 *
 * A type whose generator does not look at the proxy (`shared`, EDS) is cached
 * per subscription alone: every group with the same subscription (in
 * permissive mode, every proxy) shares one generation and one set, recorded
 * once under SHARED_GROUP and linked into each group's record.
 */
export class GenerationCache {
  private entries = new SetTable();
  private secretEntries = new SetTable();
  private previousEntries = new SetTable();
  private previousSecretEntries = new SetTable();
  /** The tables as of the last carryOver. */
  private checked = { main: this.entries, secret: this.secretEntries };
  private viewVersion: number | undefined;
  private trustBundle: string | undefined;
  private secretsVersion: number | undefined;
  private readonly secretTypes: ReadonlySet<string>;
  hits = 0;
  misses = 0;

  constructor(
    private readonly interner: ResourceInterner,
    secretDependentTypes: readonly string[] = [],
    /** Records what each generation read (targeted pushes); none = plain per-version caching. */
    readonly tracker?: DependencyTracker,
  ) {
    this.secretTypes = new Set(secretDependentTypes);
  }

  /**
   * `generate` must build from the context it is given (a recording one when
   * tracking). `shared`: its output depends on the context and the
   * subscription only, never on the proxy (ResourceGenerator.shared).
   */
  get(
    typeUrl: string,
    proxy: ProxyContext,
    ctx: GenerationContext,
    subscription: Subscription,
    generate: (ctx: GenerationContext) => Resource[],
    shared = false,
  ): GeneratedSet {
    this.advance(ctx);
    let entries = this.entries;
    let previous = this.previousEntries;
    if (this.secretTypes.has(typeUrl)) {
      // A source without a version cannot say when its output moves: rebuild every time.
      if (ctx.secrets.version === undefined)
        return this.build(
          this.run(typeUrl, proxy.groupKey, ctx, subscription, generate),
          subscription.names,
          undefined,
        );
      entries = this.secretEntries;
      previous = this.previousSecretEntries;
    }
    const groupKey = shared && !this.secretTypes.has(typeUrl) ? SHARED_GROUP : proxy.groupKey;
    const group = `${typeUrl} ${groupKey}`;
    let set = entries.get(group, subscription.key);
    if (set) {
      this.hits++;
    } else {
      this.misses++;
      set = this.build(
        this.run(typeUrl, groupKey, ctx, subscription, generate),
        subscription.names,
        previous.get(group, subscription.key),
      );
      entries.set(group, subscription.key, set, groupKey, typeUrl);
    }
    // The proxy's group holds the shared set now: a change it read affects the group.
    if (groupKey === SHARED_GROUP) this.tracker?.share(proxy.groupKey, typeUrl, subscription.key);
    return set;
  }

  /**
   * Moves to `ctx` (as a lookup would) and keeps, for every group `unaffected`
   * approves, the sets of the version before that the new one lacks: a
   * dependency check found that nothing they were generated from changed.
   * Returns how many sets were carried over.
   */
  carryOver(
    ctx: GenerationContext,
    unaffected: (groupKey: string, typeUrl: string, subscription: string) => boolean,
  ): number {
    this.advance(ctx);
    // A lookup between two checks may have started a table already: the sets
    // valid at the last check are then two tables back.
    let carried = this.entries.adopt(this.previousEntries, unaffected);
    if (this.checked.main !== this.previousEntries)
      carried += this.entries.adopt(this.checked.main, unaffected);
    if (ctx.secrets.version !== undefined) {
      carried += this.secretEntries.adopt(this.previousSecretEntries, unaffected);
      if (this.checked.secret !== this.previousSecretEntries)
        carried += this.secretEntries.adopt(this.checked.secret, unaffected);
    }
    this.checked = { main: this.entries, secret: this.secretEntries };
    return carried;
  }

  /** Starts new tables when the view, the trust bundle or (for secret types) the secrets moved. */
  private advance(ctx: GenerationContext): void {
    // A CA rotation changes what generators embed without a new view version.
    if (ctx.mesh.version !== this.viewVersion || ctx.secrets.trustBundlePem !== this.trustBundle) {
      this.previousEntries = this.entries;
      this.previousSecretEntries = this.secretEntries;
      this.entries = new SetTable();
      this.secretEntries = new SetTable();
      this.viewVersion = ctx.mesh.version;
      this.trustBundle = ctx.secrets.trustBundlePem;
      this.secretsVersion = ctx.secrets.version;
      this.interner.advance();
    } else if (ctx.secrets.version !== this.secretsVersion) {
      this.previousSecretEntries = this.secretEntries;
      this.secretEntries = new SetTable();
      this.secretsVersion = ctx.secrets.version;
    }
  }

  /** Runs the generator, on a recording context when tracking dependencies. */
  private run(
    typeUrl: string,
    groupKey: string,
    ctx: GenerationContext,
    subscription: Subscription,
    generate: (ctx: GenerationContext) => Resource[],
  ): Resource[] {
    const tracker = this.tracker;
    if (tracker === undefined) return generate(ctx);
    const recording = tracker.recorder(ctx);
    let resources: Resource[];
    try {
      resources = generate(recording.ctx);
    } catch (e) {
      // The stream keeps its last configuration; retry the group on every round until it generates.
      recording.volatile = true;
      tracker.record(groupKey, typeUrl, subscription.key, recording);
      throw e;
    }
    // Output built from nothing the recording saw was built from something it
    // cannot watch (a callback that ignored the context it was given): always
    // affected, never carried over.
    if (recording.questions.length === 0 && resources.length > 0) recording.volatile = true;
    tracker.record(groupKey, typeUrl, subscription.key, recording);
    return resources;
  }

  get size(): number {
    return this.entries.size + this.secretEntries.size;
  }

  private build(
    resources: Resource[],
    names: ReadonlySet<string> | undefined,
    before: GeneratedSet | undefined,
  ): GeneratedSet {
    const seen = new Set<string>();
    const duplicateNames: string[] = [];
    const out: EncodedResource[] = [];
    for (const r of resources) {
      // Generators may return more than requested; send only what was asked for.
      if (names !== undefined && !names.has(r.name)) continue;
      if (seen.has(r.name)) {
        duplicateNames.push(r.name); // xDS rule 9: no duplicate names in one response
        continue;
      }
      seen.add(r.name);
      out.push(this.interner.intern(r));
    }
    out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    if (before !== undefined && duplicateNames.length === 0 && sameResources(before, out)) return before;
    return { resources: out, version: contentVersion(out), duplicateNames };
  }
}

/**
 * Sets by (type and group, subscription key). Two levels because a
 * subscription key can be long (every subscribed name): kept as the stream's
 * own string, its hash is computed once rather than on every lookup of a
 * freshly concatenated key.
 */
class SetTable {
  private readonly byGroup = new Map<
    string,
    { groupKey: string; typeUrl: string; sets: Map<string, GeneratedSet> }
  >();
  size = 0;

  get(group: string, subscription: string): GeneratedSet | undefined {
    return this.byGroup.get(group)?.sets.get(subscription);
  }

  set(group: string, subscription: string, set: GeneratedSet, groupKey: string, typeUrl: string): void {
    let entry = this.byGroup.get(group);
    if (entry === undefined) {
      entry = { groupKey, typeUrl, sets: new Map() };
      this.byGroup.set(group, entry);
    }
    if (!entry.sets.has(subscription)) this.size++;
    entry.sets.set(subscription, set);
  }

  /** Copies the sets of `from` that `keep` approves and that this table lacks. */
  adopt(from: SetTable, keep: (groupKey: string, typeUrl: string, subscription: string) => boolean): number {
    let n = 0;
    for (const [group, entry] of from.byGroup) {
      for (const [subscription, set] of entry.sets) {
        if (!keep(entry.groupKey, entry.typeUrl, subscription)) continue;
        if (this.get(group, subscription) !== undefined) continue;
        this.set(group, subscription, set, entry.groupKey, entry.typeUrl);
        n++;
      }
    }
    return n;
  }
}

/** The same encoded resource objects in the same order, and no duplicates reported before either. */
function sameResources(set: GeneratedSet, resources: readonly EncodedResource[]): boolean {
  if (set.duplicateNames.length > 0 || set.resources.length !== resources.length) return false;
  for (let i = 0; i < resources.length; i++) if (set.resources[i] !== resources[i]) return false;
  return true;
}
