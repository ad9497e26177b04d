// One benchmark proxy on Delta ADS: subscribes the way Envoy does on the
// delta protocol (wildcard CDS and LDS, then EDS/RDS/SDS names as CDS and LDS
// reference them, as subscribe/unsubscribe deltas), keeps what it holds
// across streams and reconnects with initial_resource_versions.
import { TypeUrl } from '../../pkg/envoy/types.js';
import { encodeDeltaDiscoveryRequest } from '../../pkg/xds/server/delta-codec.js';
import { ADS_DELTA_PATH } from '../../pkg/xds/server/service.js';
import type { DeltaDiscoveryRequest } from '../../pkg/xds/server/types.js';
import { CODE_OF, type FleetClientOptions, FleetStreamClient, REQUEST_ORDER } from './fleet-client.js';
import { decodeDeltaEnvelope, type ResourceFacts } from './xds-decode.js';

interface Held {
  version: string;
  facts: ResourceFacts;
}

interface TypeState {
  /** What the proxy holds, kept across streams like Envoy does. */
  readonly held: Map<string, Held>;
  /** Named types: the names subscribed (re-subscribed on a new stream). */
  subscribed: Set<string>;
  /** A response of this type arrived on the current stream. */
  answered: boolean;
}

/** DeltaDiscoveryRequest.node (discovery.proto). */
const DELTA_NODE_FIELD = 1;

const isWildcard = (typeUrl: string): boolean => typeUrl === TypeUrl.Cluster || typeUrl === TypeUrl.Listener;

export class DeltaFleetClient extends FleetStreamClient<DeltaDiscoveryRequest, TypeState> {
  constructor(opts: FleetClientOptions) {
    super(opts, ADS_DELTA_PATH, encodeDeltaDiscoveryRequest, DELTA_NODE_FIELD, () => ({
      held: new Map(),
      subscribed: new Set(),
      answered: false,
    }));
  }

  protected onStreamOpen(): void {
    let first = true;
    for (const typeUrl of REQUEST_ORDER) {
      const st = this.state(typeUrl);
      st.answered = false;
      if (!isWildcard(typeUrl) && st.subscribed.size === 0) continue;
      // A wildcard re-subscribes with an empty list; what it holds goes in
      // initial_resource_versions (never as names).
      this.send(
        {
          typeUrl,
          resourceNamesSubscribe: isWildcard(typeUrl) ? [] : [...st.subscribed],
          initialResourceVersions: new Map([...st.held].map(([n, h]) => [n, h.version])),
        },
        first,
      );
      first = false;
    }
  }

  private send(req: Partial<DeltaDiscoveryRequest> & { typeUrl: string }, withNode = false): void {
    this.write(
      {
        resourceNamesSubscribe: [],
        resourceNamesUnsubscribe: [],
        initialResourceVersions: new Map(),
        responseNonce: '',
        ...req,
      },
      withNode,
    );
  }

  protected onResponse(bytes: Buffer): void {
    const res = decodeDeltaEnvelope(bytes);
    const code = CODE_OF[res.typeUrl];
    const st = this.types.get(res.typeUrl);
    if (!code || !st) return;
    for (const r of res.resources) st.held.set(r.name, { version: r.version, facts: this.opts.facts.of(r) });
    for (const n of res.removed) st.held.delete(n);
    st.answered = true;
    this.send({ typeUrl: res.typeUrl, responseNonce: res.nonce });
    if (isWildcard(res.typeUrl)) this.resubscribe();
    this.reportAck(code, res.systemVersionInfo, bytes);
  }

  /** What the held clusters and listeners reference: EDS from clusters, RDS from listeners, SDS from both. */
  private wanted(): Map<string, Set<string>> {
    const eds = new Set<string>();
    const rds = new Set<string>();
    const sds = new Set<string>();
    for (const h of this.state(TypeUrl.Cluster).held.values()) {
      for (const n of h.facts.edsClusters) eds.add(n);
      for (const n of h.facts.secrets) sds.add(n);
    }
    for (const h of this.state(TypeUrl.Listener).held.values()) {
      for (const n of h.facts.routes) rds.add(n);
      for (const n of h.facts.secrets) sds.add(n);
    }
    return new Map([
      [TypeUrl.ClusterLoadAssignment, eds],
      [TypeUrl.RouteConfiguration, rds],
      [TypeUrl.Secret, sds],
    ]);
  }

  /** Subscription deltas for what CDS and LDS reference now. */
  private resubscribe(): void {
    for (const [typeUrl, names] of this.wanted()) {
      const st = this.state(typeUrl);
      const added = [...names].filter((n) => !st.subscribed.has(n));
      const removed = [...st.subscribed].filter((n) => !names.has(n));
      if (added.length === 0 && removed.length === 0) continue;
      st.subscribed = names;
      // Unsubscribed names are forgotten; the server sends them again on re-subscription.
      for (const n of removed) st.held.delete(n);
      this.send({ typeUrl, resourceNamesSubscribe: added, resourceNamesUnsubscribe: removed });
    }
  }

  /**
   * In sync on this stream: CDS and LDS answered, and every referenced name
   * held with its type answered (the server answers a reconnect's first
   * request of each type, even when nothing changed).
   */
  protected complete(): boolean {
    if (!this.state(TypeUrl.Cluster).answered || !this.state(TypeUrl.Listener).answered) return false;
    for (const [typeUrl, names] of this.wanted()) {
      if (names.size === 0) continue;
      const st = this.state(typeUrl);
      if (!st.answered) return false;
      for (const n of names) if (!st.held.has(n)) return false;
    }
    return true;
  }

  /** For diagnostics: what this proxy still misses. */
  missing(): string[] {
    const out: string[] = [];
    if (!this.state(TypeUrl.Cluster).answered) out.push('CDS');
    if (!this.state(TypeUrl.Listener).answered) out.push('LDS');
    for (const [typeUrl, names] of this.wanted()) {
      const st = this.state(typeUrl);
      for (const n of names) if (!st.held.has(n)) out.push(`${CODE_OF[typeUrl]}:${n}`);
    }
    return out;
  }
}
