// One benchmark proxy: a SotW ADS client that subscribes the way Envoy does
// (wildcard CDS and LDS, then EDS/RDS/SDS by the names those reference), ACKs
// every response, and on a lost stream reconnects with a short backoff,
// re-requesting what it holds (versions and names) like Envoy after a restart.
import { TypeUrl } from '../../pkg/envoy/types.js';
import { ADS_SOTW_PATH, encodeDiscoveryRequest } from '../../pkg/xds/server/service.js';
import type { DiscoveryRequest } from '../../pkg/xds/server/types.js';
import { CODE_OF, type FleetClientOptions, FleetStreamClient, REQUEST_ORDER } from './fleet-client.js';
import { decodeEnvelope } from './xds-decode.js';

/** DiscoveryRequest.node (discovery.proto). */
const SOTW_NODE_FIELD = 2;

interface TypeState {
  version: string;
  nonce: string;
  /** Subscribed names (non-wildcard types); sorted. */
  names: string[];
  /** Names in the last response on the current stream. */
  received: Set<string> | undefined;
  /** CDS/LDS: what the last response references. */
  eds: Set<string>;
  rds: Set<string>;
  sds: Set<string>;
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

export class FleetClient extends FleetStreamClient<DiscoveryRequest, TypeState> {
  constructor(opts: FleetClientOptions) {
    super(opts, ADS_SOTW_PATH, encodeDiscoveryRequest, SOTW_NODE_FIELD, () => ({
      version: '',
      nonce: '',
      names: [],
      received: undefined,
      eds: new Set(),
      rds: new Set(),
      sds: new Set(),
    }));
  }

  protected onStreamOpen(): void {
    // A new stream: nothing received on it yet; nonces belong to the old stream.
    for (const st of this.types.values()) {
      st.received = undefined;
      st.nonce = '';
    }
    let first = true;
    for (const typeUrl of REQUEST_ORDER) {
      const st = this.state(typeUrl);
      const wildcard = typeUrl === TypeUrl.Cluster || typeUrl === TypeUrl.Listener;
      if (!wildcard && st.names.length === 0) continue;
      this.send(typeUrl, st, first);
      first = false;
    }
  }

  private send(typeUrl: string, st: TypeState, withNode = false): void {
    const req: DiscoveryRequest = {
      versionInfo: st.version,
      resourceNames: st.names,
      typeUrl,
      responseNonce: st.nonce,
    };
    // xDS: only the first request of a stream must carry the node.
    this.write(req, withNode);
  }

  protected onResponse(bytes: Buffer): void {
    const res = decodeEnvelope(bytes);
    const code = CODE_OF[res.typeUrl];
    const st = this.types.get(res.typeUrl);
    if (!code || !st) return;
    const received = new Set<string>();
    const eds = new Set<string>();
    const rds = new Set<string>();
    const sds = new Set<string>();
    for (const r of res.resources) {
      const f = this.opts.facts.of(r);
      received.add(f.name);
      for (const n of f.edsClusters) eds.add(n);
      for (const n of f.routes) rds.add(n);
      for (const n of f.secrets) sds.add(n);
    }
    st.version = res.versionInfo;
    st.nonce = res.nonce;
    // xDS rule 7: LDS/CDS responses are the full set; RDS/EDS/SDS name their
    // resources one by one, so a response may carry only the changed ones.
    if (res.typeUrl === TypeUrl.Cluster || res.typeUrl === TypeUrl.Listener || !st.received) {
      st.received = received;
    } else {
      for (const n of received) st.received.add(n);
    }
    st.eds = eds;
    st.rds = rds;
    st.sds = sds;
    // ACK with the current subscription (xDS: the ACK repeats the names).
    this.send(res.typeUrl, st);
    if (res.typeUrl === TypeUrl.Cluster || res.typeUrl === TypeUrl.Listener) this.resubscribe();
    this.reportAck(code, res.versionInfo, bytes);
  }

  /** What CDS and LDS reference: EDS from clusters, RDS from listeners, SDS from both. */
  private wanted(): Map<string, string[]> {
    const cds = this.state(TypeUrl.Cluster);
    const lds = this.state(TypeUrl.Listener);
    return new Map([
      [TypeUrl.ClusterLoadAssignment, [...cds.eds].sort()],
      [TypeUrl.RouteConfiguration, [...lds.rds].sort()],
      [TypeUrl.Secret, [...new Set([...cds.sds, ...lds.sds])].sort()],
    ]);
  }

  private resubscribe(): void {
    for (const [typeUrl, names] of this.wanted()) {
      const st = this.state(typeUrl);
      if (sameList(st.names, names)) continue;
      st.names = names;
      // Unsubscribed names are forgotten; the server resends them on re-subscription.
      if (st.received) st.received = new Set(names.filter((n) => st.received?.has(n)));
      this.send(typeUrl, st);
    }
  }

  /** CDS and LDS received on this stream, and every name they reference too. */
  protected complete(): boolean {
    if (!this.state(TypeUrl.Cluster).received || !this.state(TypeUrl.Listener).received) return false;
    for (const [typeUrl, names] of this.wanted()) {
      const got = this.state(typeUrl).received;
      if (names.length === 0) continue;
      if (!got) return false;
      for (const n of names) if (!got.has(n)) return false;
    }
    return true;
  }

  /** For diagnostics: what this proxy still misses. */
  missing(): string[] {
    const out: string[] = [];
    if (!this.state(TypeUrl.Cluster).received) out.push('CDS');
    if (!this.state(TypeUrl.Listener).received) out.push('LDS');
    for (const [typeUrl, names] of this.wanted()) {
      const got = this.state(typeUrl).received;
      for (const n of names) if (!got?.has(n)) out.push(`${CODE_OF[typeUrl]}:${n}`);
    }
    return out;
  }
}
