// The JSON shape of `/debug/graph` and of each `/debug/events` message. Shared by
// the controller (pkg/ui/graph.ts) and the browser page (pkg/ui/web/), so it
// imports nothing: the page is type-checked without Node's types.

/** One proxy's overall state: the worst of its per-type states, or DISCONNECTED. */
export type ProxyState = 'SYNCED' | 'STALE' | 'NACKED' | 'DISCONNECTED';

/** Per xDS type, as `/debug/proxies` reports it. */
export interface GraphTypeStatus {
  /** Short name: CDS, EDS, LDS, RDS, SDS (or the type URL when unknown). */
  type: string;
  typeUrl: string;
  sent?: string;
  acked?: string;
  nacked?: string;
  lastNack?: string;
  syncState: 'SYNCED' | 'STALE' | 'NACKED' | 'NOT_SENT';
}

export interface GraphProxy {
  /** Graph node id; unique per parent (a pod backing two services appears under both). */
  id: string;
  /** The pod's name, or the proxy UUID when no pod carries it. */
  label: string;
  state: ProxyState;
  /** `<namespace>/<serviceAccount>` of its certificate (unknown for an endpoint whose proxy never connected). */
  identity?: string;
  kind?: string;
  uuid?: string;
  streamId?: string;
  pod?: { namespace: string; name: string };
  connectedAt?: string;
  disconnectedAt?: string;
  types: GraphTypeStatus[];
}

export interface GraphRule {
  /** `<namespace>/<serviceAccount>` of each allowed source, or 'any' (permissive). */
  sources: string[] | 'any';
  /** e.g. `GET /buy`, or `all requests`. */
  routes: string[];
  /** `TrafficTarget <ns>/<name>`, or 'permissive'. */
  origin: string;
}

export interface GraphPort {
  port: number;
  name?: string;
  protocol: string;
  targetPort: number;
  rules: GraphRule[];
}

export interface GraphEndpoint {
  ip: string;
  port: number;
  ready: boolean;
  pod?: string;
}

export interface GraphService {
  /** `svc:<namespace>/<name>` */
  id: string;
  key: string;
  namespace: string;
  name: string;
  fqdn: string;
  clusterIP?: string;
  ports: GraphPort[];
  endpoints: GraphEndpoint[];
  /** Identities (`<ns>/<sa>`) of the pods backing it. */
  identities: string[];
  split?: { service: string; weight: number }[];
  proxies: GraphProxy[];
}

/** A source identity that backs no service (e.g. a client-only workload). */
export interface GraphIdentity {
  /** `id:<namespace>/<serviceAccount>` */
  id: string;
  key: string;
  namespace: string;
  name: string;
  proxies: GraphProxy[];
}

export interface GraphEdge {
  id: string;
  /** Node ids. */
  source: string;
  target: string;
  kind: 'allow' | 'split';
  /** allow: the TrafficTarget names behind it (`<ns>/<name>`). */
  targets?: string[];
  /** allow: the destination ports and the routes allowed on them. */
  ports?: { port: number; routes: string[] }[];
  /** split: the backend's weight and its share of the apex's total, 0–100. */
  weight?: number;
  percent?: number;
  label: string;
}

/** One problem in force, as `/debug/problems` lists it (pkg/registry/problem-book.ts). */
export interface GraphProblem {
  /** `invalid-object`: the registry skipped a version; `policy`: valid objects that cannot apply as written. */
  type: 'invalid-object' | 'policy';
  /** A manifest file (local mode), `kubernetes:<Kind>/<ns>/<name>`, or `policy`. */
  source: string;
  kind?: string;
  namespace?: string;
  name?: string;
  reason: string;
  /** ISO time the problem was first seen (unchanged by repeats). */
  since: string;
  /** What the mesh uses instead, in words. */
  inForce: string;
}

export interface MeshGraph {
  mesh: string;
  /** MeshView (store) version the graph was built from. */
  version: number;
  /** Permissive mode: every meshed service may call every other, so no allow edges are drawn. */
  permissive: boolean;
  namespaces: string[];
  services: GraphService[];
  identities: GraphIdentity[];
  edges: GraphEdge[];
  /** Invalid objects and policy problems in force, oldest first. */
  problems: GraphProblem[];
  counts: {
    namespaces: number;
    services: number;
    proxies: number;
    edges: number;
    byState: Record<ProxyState, number>;
  };
}
