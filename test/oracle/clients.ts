// ADS clients that behave like real proxies, for the convergence oracle:
// Envoy sidecars subscribe to CDS and LDS as wildcards and to the RDS, EDS and
// SDS names those reference; proxyless gRPC clients name their Listeners and
// follow them to routes, clusters and endpoints. Every response is ACKed with
// its version and nonce; a stream that ends is re-opened (the controller
// restarted), re-sending what the client holds as real clients do (SotW: the
// last accepted version; Delta: initial_resource_versions). Each client keeps
// the resources it holds per type, which is what the oracle compares.
import type * as grpc from '@grpc/grpc-js';
import { type ProtoObject, type Resource, TypeUrl } from '../../pkg/envoy/types.js';
import { crossReferenceProblems, referencesOf } from '../support/envoy/crossref.js';
import { sleep } from '../support/processes.js';
import { RawDeltaClient, type ReceivedDeltaResponse } from '../support/xds/delta-test-client.js';
import { RawAdsClient, type ReceivedResponse } from '../support/xds/test-client.js';

export interface ClientSpec {
  /** For messages: what this client stands for. */
  label: string;
  protocol: 'sotw' | 'delta';
  kind: 'sidecar' | 'grpc';
  namespace: string;
  serviceAccount: string;
  uuid: string;
  /** Proxyless only: the Listener names it asks for (client targets and its server listeners). */
  listeners?: string[];
  /** The plaintext port (identity from node.id) instead of mTLS. */
  insecure?: boolean;
}

/** Where and how a client reaches a controller; credentials already carry the client's identity. */
export interface Dial {
  address: string;
  credentials: grpc.ChannelCredentials;
  nodeId: string;
}

interface TypeState {
  /** name → [per-resource version (Delta), message]. */
  held: Map<string, { version: string; message: ProtoObject }>;
  /** Named subscription (unused for a wildcard). */
  names: Set<string>;
  /** SotW: last accepted version and nonce of this type. */
  version: string;
  nonce: string;
  answered: boolean;
}

const SIDECAR_TYPES = [
  TypeUrl.Cluster,
  TypeUrl.ClusterLoadAssignment,
  TypeUrl.Listener,
  TypeUrl.RouteConfiguration,
  TypeUrl.Secret,
];
const GRPC_TYPES = [
  TypeUrl.Listener,
  TypeUrl.RouteConfiguration,
  TypeUrl.Cluster,
  TypeUrl.ClusterLoadAssignment,
];

function toResources(held: TypeState['held'], typeUrl: TypeUrl): Resource[] {
  return [...held].map(([name, h]) => ({ name, typeUrl, message: h.message }));
}

function nameOf(m: ProtoObject): string {
  const n = m['name'] ?? m['cluster_name'];
  return typeof n === 'string' ? n : '';
}

export class OracleClient {
  private readonly types = new Map<string, TypeState>();
  private call: RawAdsClient | RawDeltaClient | undefined;
  private closed = false;
  private loop: Promise<void> | undefined;
  /** Streams opened; more than one means the client reconnected. */
  streams = 0;
  responses = 0;
  lastError = '';
  /** Resources received for names not subscribed to (ignored), for diagnostics. */
  readonly unrequested: string[] = [];

  constructor(
    readonly spec: ClientSpec,
    private readonly dial: () => Dial,
  ) {
    for (const t of spec.kind === 'sidecar' ? SIDECAR_TYPES : GRPC_TYPES)
      this.types.set(t, { held: new Map(), names: new Set(), version: '', nonce: '', answered: false });
    if (spec.kind === 'grpc') this.state(TypeUrl.Listener).names = new Set(spec.listeners ?? []);
  }

  start(): void {
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.closed = true;
    this.call?.close();
    await this.loop;
  }

  /** What the client holds now: type → name → message. */
  snapshot(): Map<string, Map<string, ProtoObject>> {
    return new Map(
      [...this.types].map(([t, st]) => [t, new Map([...st.held].map(([n, h]) => [n, h.message]))]),
    );
  }

  /** Dangling references in what the client holds (a name referenced and never served). */
  danglingReferences(): string[] {
    // Sorted: the checker also wants generator order, which arrival order is not.
    const of = (t: TypeUrl) =>
      toResources(this.types.get(t)?.held ?? new Map(), t).sort((a, b) =>
        a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
      );
    return crossReferenceProblems({
      listeners: of(TypeUrl.Listener),
      routes: of(TypeUrl.RouteConfiguration),
      clusters: of(TypeUrl.Cluster),
      endpoints: of(TypeUrl.ClusterLoadAssignment),
      secrets: of(TypeUrl.Secret),
    });
  }

  /** Every subscribed type answered on the current stream. */
  ready(): boolean {
    return [...this.types].every(([t, st]) => st.answered || (!this.wildcard(t) && st.names.size === 0));
  }

  private state(t: string): TypeState {
    const st = this.types.get(t);
    if (!st) throw new Error(`${this.spec.label}: no type ${t}`);
    return st;
  }

  private wildcard(t: string): boolean {
    return this.spec.kind === 'sidecar' && (t === TypeUrl.Listener || t === TypeUrl.Cluster);
  }

  private async run(): Promise<void> {
    while (!this.closed) {
      const d = this.dial();
      const opts = { address: d.address, credentials: d.credentials };
      const call = this.spec.protocol === 'sotw' ? new RawAdsClient(opts) : new RawDeltaClient(opts);
      this.call = call;
      this.streams++;
      for (const st of this.types.values()) st.answered = false;
      this.open(d.nodeId);
      try {
        for (;;) {
          const res = await call.next(3_600_000);
          this.responses++;
          if (res instanceof Object && 'removedResources' in res) this.onDelta(res);
          else this.onSotw(res);
        }
      } catch (err) {
        this.lastError = err instanceof Error ? err.message : String(err);
      }
      call.close();
      if (!this.closed) await sleep(100);
    }
  }

  /** The first requests of a stream, in Envoy's order (CDS before LDS), node on the first only. */
  private open(nodeId: string): void {
    const node = { id: nodeId, cluster: 'skein-oracle' };
    let first = true;
    for (const [t, st] of this.types) {
      const wildcard = this.wildcard(t);
      if (!wildcard && st.names.size === 0) continue;
      const withNode = first ? { node } : {};
      first = false;
      if (this.call instanceof RawAdsClient) {
        this.call.send({
          typeUrl: t,
          versionInfo: st.version,
          resourceNames: wildcard ? [] : [...st.names],
          ...withNode,
        });
      } else if (this.call instanceof RawDeltaClient) {
        this.call.send({
          typeUrl: t,
          resourceNamesSubscribe: wildcard ? [] : [...st.names],
          initialResourceVersions: new Map([...st.held].map(([n, h]) => [n, h.version])),
          ...withNode,
        });
      }
    }
  }

  private onSotw(res: ReceivedResponse): void {
    const st = this.types.get(res.typeUrl);
    if (!st || !(this.call instanceof RawAdsClient)) return;
    const incoming = new Map(res.messages.map((m) => [nameOf(m), { version: res.versionInfo, message: m }]));
    // LDS and CDS responses carry every resource (so a missing one is deleted); RDS, EDS
    // and SDS only add or replace: their resources go when no longer subscribed.
    if (res.typeUrl === TypeUrl.Listener || res.typeUrl === TypeUrl.Cluster) st.held = incoming;
    else
      for (const [n, h] of incoming) {
        if (st.names.has(n)) st.held.set(n, h);
        else this.unrequested.push(`${res.typeUrl.split('.').pop()} ${n}`);
      }
    st.version = res.versionInfo;
    st.nonce = res.nonce;
    st.answered = true;
    this.call.ack(res, this.wildcard(res.typeUrl) ? [] : [...st.names]);
    this.resubscribe();
  }

  private onDelta(res: ReceivedDeltaResponse): void {
    const st = this.types.get(res.typeUrl);
    if (!st || !(this.call instanceof RawDeltaClient)) return;
    res.messages.forEach((m, i) => {
      const name = res.names[i] ?? nameOf(m);
      // As Envoy does: a named type keeps only what it subscribes to (a push sent
      // before the server read an unsubscription may still carry the name).
      if (this.wildcard(res.typeUrl) || st.names.has(name))
        st.held.set(name, { version: res.versions.get(name) ?? '', message: m });
      else this.unrequested.push(`${res.typeUrl.split('.').pop()} ${name}`);
    });
    for (const n of res.removedResources) st.held.delete(n);
    st.answered = true;
    this.call.ack(res);
    this.resubscribe();
  }

  /** The names each dependent type must be subscribed to, from what the client holds. */
  private wanted(): Map<string, Set<string>> {
    const listeners = toResources(this.state(TypeUrl.Listener).held, TypeUrl.Listener);
    const out = new Map<string, Set<string>>();
    if (this.spec.kind === 'sidecar') {
      const clusters = toResources(this.state(TypeUrl.Cluster).held, TypeUrl.Cluster);
      const refs = referencesOf([...listeners, ...clusters]);
      out.set(TypeUrl.RouteConfiguration, refs.routes);
      out.set(TypeUrl.ClusterLoadAssignment, referencesOf(clusters).edsClusters);
      out.set(TypeUrl.Secret, refs.secrets);
    } else {
      const routes = toResources(this.state(TypeUrl.RouteConfiguration).held, TypeUrl.RouteConfiguration);
      const clusters = toResources(this.state(TypeUrl.Cluster).held, TypeUrl.Cluster);
      out.set(TypeUrl.RouteConfiguration, referencesOf(listeners).routes);
      out.set(TypeUrl.Cluster, referencesOf(routes).clusters);
      out.set(TypeUrl.ClusterLoadAssignment, referencesOf(clusters).edsClusters);
    }
    return out;
  }

  /**
   * Follows the references: subscribes to new names, unsubscribes (and forgets)
   * dropped ones, until nothing changes. A dropped Cluster drops its endpoints
   * in the same turn, as grpc-js's dependency manager does: the server owes no
   * response to an unsubscription (Delta) or to a narrowed SotW request whose
   * remaining resources are unchanged, so nothing else would prompt it.
   */
  private resubscribe(): void {
    while (this.resubscribeOnce()) {}
  }

  /** One pass in dependency order; whether any subscription changed. */
  private resubscribeOnce(): boolean {
    for (const [t, names] of this.wanted()) {
      const st = this.state(t);
      const added = [...names].filter((n) => !st.names.has(n));
      const removed = [...st.names].filter((n) => !names.has(n));
      if (added.length === 0 && removed.length === 0) continue;
      st.names = names;
      for (const n of removed) st.held.delete(n);
      if (this.call instanceof RawAdsClient) {
        this.call.send({
          typeUrl: t,
          versionInfo: st.version,
          responseNonce: st.nonce,
          resourceNames: [...names],
        });
      } else if (this.call instanceof RawDeltaClient) {
        this.call.send({ typeUrl: t, resourceNamesSubscribe: added, resourceNamesUnsubscribe: removed });
      }
      // What depends on this type is computed afresh from what is held now.
      return true;
    }
    return false;
  }

  describe(): string {
    const counts = [...this.types].map(([t, st]) => `${t.split('.').pop()}=${st.held.size}`).join(' ');
    return `${this.spec.label}: streams ${this.streams}, responses ${this.responses}, holds ${counts}, ignored ${this.unrequested.length} unrequested${this.lastError ? `, last stream end: ${this.lastError}` : ''}`;
  }
}
