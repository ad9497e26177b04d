// Which answers of the MeshView and the SecretSource each proxy group's
// configuration was generated from, so that a change can be traced to the
// groups that read something it changed: everyone else needs no push and no
// generation at all. Generators are pure functions of what they read
// (ResourceGenerator contract), and the view hands out the very same object
// for an unchanged answer (MeshView identity contract), so "every answer a
// group read is identical now" means "its configuration is unchanged".
import { type DerivingView, derive } from '../../catalog/derive.js';
import type { Endpoint, InboundRule, MeshService, MeshView, SplitBackend } from '../../catalog/types.js';
import type { IssuedCertificate, SecretSource, TlsKeyPair } from '../../certificate/types.js';
import type { GenerationContext } from '../../envoy/types.js';
import type { Identity } from '../../mesh/identity.js';
import type { Pod } from '../../model/objects.js';

/** Stands for "not asked at the last check yet". */
const UNSEEN: unique symbol = Symbol('unseen');

/** What can be asked again: a MeshView or SecretSource method (never `version`). */
enum Kind {
  Permissive,
  TrustDomain,
  Services,
  Service,
  ServiceByHost,
  Endpoints,
  ServiceIdentities,
  OutboundServices,
  Split,
  InboundRules,
  TrustBundle,
  Certificate,
  /** A TLS Secret the ingress gateway presents (SecretSource.ingressTlsCertificate). */
  IngressTls,
  /** A derived answer (pkg/catalog/derive.ts): one question for a computation over the view. */
  Derived,
}

/** One question a generation asked (method and arguments), shared by every group that asked it. */
class Question {
  /** The answer at the last check, or the first one recorded since; UNSEEN until then. */
  answer: unknown = UNSEEN;
  /** The check round that last asked it, and whether the answer had changed then. */
  round = 0;
  changed = false;
  /** The recording that last listed it (de-duplicates within one generation). */
  recording = 0;

  constructor(
    readonly kind: Kind,
    readonly key: string,
    readonly port: number,
    readonly source?: Identity,
    readonly compute?: (view: MeshView) => unknown,
  ) {}

  ask(ctx: GenerationContext): unknown {
    const { mesh, secrets } = ctx;
    switch (this.kind) {
      case Kind.Permissive:
        return mesh.permissive;
      case Kind.TrustDomain:
        return mesh.trustDomain;
      case Kind.Services:
        return mesh.services();
      case Kind.Service:
        return mesh.service(this.key);
      case Kind.ServiceByHost:
        return mesh.serviceByHost(this.key);
      case Kind.Endpoints:
        return mesh.endpoints(this.key, this.port);
      case Kind.ServiceIdentities:
        return mesh.serviceIdentities(this.key);
      case Kind.OutboundServices:
        return this.source === undefined ? undefined : mesh.outboundServices(this.source);
      case Kind.Split:
        return mesh.split(this.key);
      case Kind.InboundRules:
        return mesh.inboundRules(this.key, this.port);
      case Kind.TrustBundle:
        return secrets.trustBundlePem;
      case Kind.Certificate:
        return secrets.serviceCertificate(this.key);
      case Kind.IngressTls:
        return secrets.ingressTlsCertificate?.(this.key);
      case Kind.Derived:
        return derive(mesh, this.key, this.compute ?? (() => undefined));
    }
  }
}

/** Questions by kind and arguments, found without building a key string per call. */
class QuestionTable {
  private readonly scalar: (Question | undefined)[] = [];
  private readonly byKey: Map<string, Question>[] = [];
  private readonly byKeyPort: Map<string, Map<number, Question>>[] = [];

  of(kind: Kind): Question {
    let q = this.scalar[kind];
    if (q === undefined) {
      q = new Question(kind, '', 0);
      this.scalar[kind] = q;
    }
    return q;
  }

  ofDerived(name: string, compute: (view: MeshView) => unknown): Question {
    let m = this.byKey[Kind.Derived];
    if (m === undefined) {
      m = new Map();
      this.byKey[Kind.Derived] = m;
    }
    let q = m.get(name);
    if (q === undefined) {
      q = new Question(Kind.Derived, name, 0, undefined, compute);
      m.set(name, q);
    }
    return q;
  }

  ofKey(kind: Kind, key: string, source?: Identity): Question {
    let m = this.byKey[kind];
    if (m === undefined) {
      m = new Map();
      this.byKey[kind] = m;
    }
    let q = m.get(key);
    if (q === undefined) {
      q = new Question(kind, key, 0, source);
      m.set(key, q);
    }
    return q;
  }

  ofKeyPort(kind: Kind, key: string, port: number): Question {
    let m = this.byKeyPort[kind];
    if (m === undefined) {
      m = new Map();
      this.byKeyPort[kind] = m;
    }
    let ports = m.get(key);
    if (ports === undefined) {
      ports = new Map();
      m.set(key, ports);
    }
    let q = ports.get(port);
    if (q === undefined) {
      q = new Question(kind, key, port);
      ports.set(port, q);
    }
    return q;
  }

  /** Forgets the questions not asked in `round`; returns how many remain. */
  prune(round: number): number {
    let live = 0;
    for (const [kind, q] of this.scalar.entries()) {
      if (q === undefined) continue;
      if (q.round === round) live++;
      else this.scalar[kind] = undefined;
    }
    for (const m of this.byKey) {
      if (m === undefined) continue;
      for (const [key, q] of m) {
        if (q.round === round) live++;
        else m.delete(key);
      }
    }
    for (const m of this.byKeyPort) {
      if (m === undefined) continue;
      for (const [key, ports] of m) {
        for (const [port, q] of ports) {
          if (q.round === round) live++;
          else ports.delete(port);
        }
        if (ports.size === 0) m.delete(key);
      }
    }
    return live;
  }
}

/** Same answer: the identical object, or for lists built per view (servicesOfPod) the identical elements. */
function sameAnswer(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * What one generation read. `volatile`: it read something that cannot be
 * asked again, so it is always affected. One object may stand for several
 * groups' entries (a shared entry, `share`): it is evaluated once per check.
 */
interface Reads {
  readonly questions: readonly Question[];
  readonly volatile: boolean;
  /** Recorded with an answer other than the last check's (or never checked): affected at the next check. */
  dirty: boolean;
  /** The check that last evaluated it, and whether it was affected then. */
  checked: number;
  hit: boolean;
}

/**
 * The pseudo-group of entries whose output does not depend on the proxy
 * (ResourceGenerator.shared): generated once for every group with the same
 * subscription, and linked into each group's record by `share`.
 */
export const SHARED_GROUP = '\0shared';

/** The outcome of one check: the groups that may have to change. */
export interface CheckResult {
  /** Recorded groups with a changed answer, or with a generation since the last check that saw another one. */
  readonly affected: ReadonlySet<string>;
  /** Distinct questions asked again (the check's cost, besides one comparison per recorded question). */
  readonly asked: number;
}

/** Whether `reads` read a changed answer at check `round` (asking each question once per round). */
function evaluate(reads: Reads, round: number, ctx: GenerationContext): number {
  if (reads.checked === round) return 0;
  let asked = 0;
  let hit = reads.volatile || reads.dirty;
  // Every question is asked even once the entry is known to be hit, so that
  // each live question's answer is the one at this check.
  for (const q of reads.questions) {
    if (q.round !== round) {
      q.round = round;
      const fresh = q.ask(ctx);
      q.changed = !sameAnswer(fresh, q.answer);
      q.answer = fresh;
      asked++;
    }
    if (q.changed) hit = true;
  }
  reads.checked = round;
  reads.hit = hit;
  reads.dirty = false;
  return asked;
}

/**
 * Records, per proxy group and cache entry (type and subscription), the
 * questions its last generation asked; `check` asks each live question once
 * against the new state and names the groups that read a changed answer, and
 * `carries` says, per entry, which of their sets are still valid: an
 * endpoint change regenerates the EDS sets that read it, not the groups'
 * clusters and listeners.
 *
 * Between two checks a stream may regenerate on its own (a new
 * subscription) from a newer state than its group-mates hold; a recording
 * whose answer differs from the answer at the last check (or, for a question
 * first asked since, from its first answer) therefore marks the entry dirty,
 * and the next check reports it however the state moved since. Two
 * generations of one entry that differ in output differ in the answer to some
 * question the older one asked (generators are deterministic), so comparing
 * each recording and each check with the last known answer misses no change.
 */
export class DependencyTracker {
  /** Internal (Recording): every question some live record lists. */
  readonly questions = new QuestionTable();
  private live = 0;
  /** group → type URL → subscription key → reads (the stream's own key strings: hashed once). */
  private readonly records = new Map<string, Map<string, Map<string, Reads>>>();
  private round = 0;
  private recordings = 0;
  /** Generations recorded so far (tests count them). */
  recorded = 0;

  /**
   * A context whose view and secrets note every question asked through them.
   * Pass it to the generator, then hand the recording to `record`.
   */
  recorder(ctx: GenerationContext): Recording {
    return new Recording(this.questions, ++this.recordings, ctx);
  }

  /** Stores what a generation for (group, type, subscription) read, replacing what that entry read before. */
  record(group: string, typeUrl: string, subscription: string, recording: Recording): void {
    this.recorded++;
    this.entriesOf(group, typeUrl).set(subscription, {
      // An exact-size copy: the recording's array grew by doubling.
      questions: recording.questions.slice(),
      volatile: recording.volatile,
      dirty: recording.volatile || recording.differs,
      checked: 0,
      hit: false,
    });
  }

  /**
   * Makes the group's entry depend on what the shared entry's last
   * generation read (SHARED_GROUP): the group holds that set, so a change it
   * read affects the group. A no-op while already linked.
   */
  share(group: string, typeUrl: string, subscription: string): void {
    const reads = this.records.get(SHARED_GROUP)?.get(typeUrl)?.get(subscription);
    if (reads === undefined) return;
    const entries = this.entriesOf(group, typeUrl);
    if (entries.get(subscription) !== reads) entries.set(subscription, reads);
  }

  private entriesOf(group: string, typeUrl: string): Map<string, Reads> {
    let types = this.records.get(group);
    if (types === undefined) {
      types = new Map();
      this.records.set(group, types);
    }
    let entries = types.get(typeUrl);
    if (entries === undefined) {
      entries = new Map();
      types.set(typeUrl, entries);
    }
    return entries;
  }

  /** Whether some generation of the group was recorded (and not forgotten). */
  has(group: string): boolean {
    return this.records.has(group);
  }

  /**
   * Asks every question a live group depends on against `ctx` and returns the
   * groups that may have to change. Records of groups that are not live are
   * dropped first (a group that comes back has no record, and no record means
   * affected), and questions nobody depends on any more are forgotten.
   */
  check(ctx: GenerationContext, live: (group: string) => boolean): CheckResult {
    const round = ++this.round;
    const affected = new Set<string>();
    let asked = 0;
    for (const group of this.records.keys())
      if (group !== SHARED_GROUP && !live(group)) this.records.delete(group);
    for (const [group, types] of this.records) {
      if (group === SHARED_GROUP) continue;
      let hit = false;
      for (const entries of types.values())
        for (const reads of entries.values()) {
          asked += evaluate(reads, round, ctx);
          if (reads.hit) hit = true;
        }
      if (hit) affected.add(group);
    }
    // A shared entry no live group holds any more is forgotten (and its set not carried over).
    for (const entries of this.records.get(SHARED_GROUP)?.values() ?? [])
      for (const [subscription, reads] of entries) if (reads.checked !== round) entries.delete(subscription);
    this.live = this.questions.prune(round);
    return { affected, asked };
  }

  /**
   * Whether the set of (group, type, subscription) generated before the last check is
   * still valid: that check found none of its answers changed. An entry
   * recorded since, or never, is not.
   */
  carries(group: string, typeUrl: string, subscription: string): boolean {
    const reads = this.records.get(group)?.get(typeUrl)?.get(subscription);
    return reads !== undefined && reads.checked === this.round && !reads.hit;
  }

  /** Questions some live record listed at the last check (tests). */
  get size(): number {
    return this.live;
  }
}

/** One generation's notes: the questions it asked, in first-asked order. */
export class Recording {
  readonly questions: Question[] = [];
  /** Some answer differs from the one at the last check (or was never checked). */
  differs = false;
  /** Read something that cannot be asked again (servicesOfPod with a pod object, podOfProxy). */
  volatile = false;
  readonly ctx: GenerationContext;

  constructor(
    readonly table: QuestionTable,
    private readonly id: number,
    ctx: GenerationContext,
  ) {
    this.ctx = { mesh: new RecordingView(ctx.mesh, this), secrets: new RecordingSecrets(ctx.secrets, this) };
  }

  /** Notes `answer` to `q` and returns it. */
  note<T>(q: Question, answer: T): T {
    if (q.recording !== this.id) {
      q.recording = this.id;
      this.questions.push(q);
      // A question nobody asked at the last check starts from its first answer:
      // a later recording or check that sees another one still tells.
      if (q.answer === UNSEEN) q.answer = answer;
      else if (!sameAnswer(answer, q.answer)) this.differs = true;
    }
    return answer;
  }
}

/** A MeshView that notes every question; `version` is not a dependency (every view has a new one). */
class RecordingView implements DerivingView {
  constructor(
    private readonly view: MeshView,
    private readonly rec: Recording,
  ) {}

  get version(): number {
    return this.view.version;
  }
  get permissive(): boolean {
    return this.rec.note(this.rec.table.of(Kind.Permissive), this.view.permissive);
  }
  get trustDomain(): string {
    return this.rec.note(this.rec.table.of(Kind.TrustDomain), this.view.trustDomain);
  }
  services(): readonly MeshService[] {
    return this.rec.note(this.rec.table.of(Kind.Services), this.view.services());
  }
  service(key: string): MeshService | undefined {
    return this.rec.note(this.rec.table.ofKey(Kind.Service, key), this.view.service(key));
  }
  serviceByHost(host: string): MeshService | undefined {
    return this.rec.note(this.rec.table.ofKey(Kind.ServiceByHost, host), this.view.serviceByHost(host));
  }
  endpoints(key: string, port: number): readonly Endpoint[] {
    return this.rec.note(this.rec.table.ofKeyPort(Kind.Endpoints, key, port), this.view.endpoints(key, port));
  }
  serviceIdentities(key: string): readonly Identity[] {
    return this.rec.note(this.rec.table.ofKey(Kind.ServiceIdentities, key), this.view.serviceIdentities(key));
  }
  /** A derived answer is one question, computed on the wrapped view (its reads are not noted one by one). */
  derived<T>(name: string, compute: (view: MeshView) => T): T {
    return this.rec.note(this.rec.table.ofDerived(name, compute), compute(this.view));
  }
  inMesh(namespace: string): boolean {
    // Generators read membership through the ProxyContext (the group key).
    this.rec.volatile = true;
    return this.view.inMesh(namespace);
  }
  podOfProxy(uuid: string): Pod | undefined {
    // Generators get their pod through the ProxyContext (the group key); a pod
    // read here is not tracked, so the group counts as always affected.
    this.rec.volatile = true;
    return this.view.podOfProxy(uuid);
  }
  servicesOfPod(pod: Pod): readonly MeshService[] {
    this.rec.volatile = true;
    return this.view.servicesOfPod(pod);
  }
  outboundServices(source: Identity): readonly MeshService[] {
    const q = this.rec.table.ofKey(Kind.OutboundServices, `${source.namespace}/${source.serviceAccount}`, {
      namespace: source.namespace,
      serviceAccount: source.serviceAccount,
    });
    return this.rec.note(q, this.view.outboundServices(source));
  }
  split(apexKey: string): readonly SplitBackend[] | undefined {
    return this.rec.note(this.rec.table.ofKey(Kind.Split, apexKey), this.view.split(apexKey));
  }
  inboundRules(key: string, port: number): readonly InboundRule[] {
    return this.rec.note(
      this.rec.table.ofKeyPort(Kind.InboundRules, key, port),
      this.view.inboundRules(key, port),
    );
  }
}

/** A SecretSource that notes the trust bundle and each certificate read; `version` is not a dependency. */
class RecordingSecrets implements SecretSource {
  constructor(
    private readonly secrets: SecretSource,
    private readonly rec: Recording,
  ) {}

  get trustBundlePem(): string {
    return this.rec.note(this.rec.table.of(Kind.TrustBundle), this.secrets.trustBundlePem);
  }
  get version(): number | undefined {
    return this.secrets.version;
  }
  serviceCertificate(identityKey: string): IssuedCertificate | undefined {
    return this.rec.note(
      this.rec.table.ofKey(Kind.Certificate, identityKey),
      this.secrets.serviceCertificate(identityKey),
    );
  }
  ingressTlsCertificate(secretKey: string): TlsKeyPair | undefined {
    return this.rec.note(
      this.rec.table.ofKey(Kind.IngressTls, secretKey),
      this.secrets.ingressTlsCertificate?.(secretKey),
    );
  }
}
