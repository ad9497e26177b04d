// The JSON shape of `/debug/graph` and of each `/debug/events` message. Shared by
// the controller (pkg/ui/graph.ts) and the browser page (pkg/ui/web/), so it
// imports nothing: the page is type-checked without Node's types.

/** One proxy's overall state: the worst of its per-type states, or DISCONNECTED. */
/**
 * Permissive mode's source set, as the graph carries it: catalog's EVERY_SOURCE
 * (catalog/types.ts), restated because the web bundle imports this file alone.
 */
export const EVERY_SOURCE = 'any'; // a string value, not TypeScript's any
/** The external destination kind for any address outside the mesh (a string value, not TypeScript's any). */
export const ANY_ADDRESS = 'any'; // a string value, not TypeScript's any

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
  /** `<namespace>/<serviceAccount>` of each allowed source, or EVERY_SOURCE (permissive). */
  sources: string[] | typeof EVERY_SOURCE;
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

/**
 * A destination outside the mesh that some Egress lets a source reach, as the
 * source's sidecar tells it apart: a host name (HTTP Host, TLS SNI), an
 * address range, or anything at all (a rule with neither, or passthrough).
 */
export interface GraphExternal {
  /** `ext:host:<host>`, `ext:cidr:<cidr>`, or `ext:any` */
  id: string;
  kind: 'host' | 'cidr' | typeof ANY_ADDRESS;
  label: string;
  /**
   * ext:any only, when every destination outside the mesh passes through (so
   * Egress objects are moot and no egress edge is drawn): why, in words.
   */
  passthrough?: string;
  /** With passthrough: the Egress objects (`<ns>/<name>`) it makes moot. */
  moot?: string[];
}

/** Where ingress traffic comes from: an IngressBackend's IPRange, or a Service source the mesh has no node for. */
export interface GraphIngressSource {
  /** `in:ip:<cidr>` or `in:svc:<ns>/<name>` */
  id: string;
  kind: 'IPRange' | 'Service';
  label: string;
  /** The source prefixes it stands for. */
  cidrs: string[];
}

/** One destination port of an egress edge: what the source's sidecar lets out there. */
export interface GraphEgressPort {
  port: number;
  protocol: 'http' | 'https' | 'tcp' | 'tcp-server-first';
  /** Destination address ranges the rule is limited to; empty = any address. */
  ipRanges: string[];
  /** http: the requests allowed (`GET /v1/.*`, or `all requests`). */
  routes?: string[];
  /** The Egress objects behind it, `<ns>/<name>`. */
  egresses: string[];
}

/** One backend target port of an ingress edge: what the backend's sidecar admits from this source. */
export interface GraphIngressPort {
  /** The pod's port (IngressBackend `port.number`). */
  targetPort: number;
  protocol: 'http' | 'https';
  /** https: whether the client must present a mesh-CA certificate (mTLS) or not (skipClientCertValidation). */
  clientCert?: 'mTLS' | 'skip';
  /** The above in words: `http`, `https mTLS`, `https (no client cert)`. */
  how: string;
  /** Client certificate SANs required (AuthenticatedPrincipal sources); empty = any the CA issued. */
  principals: string[];
  /** TLS SNI values admitted; empty = any. */
  sniHosts: string[];
  /** Host/paths the Ingresses route here (`shop.example.com /books*`), or `any host and path`. */
  routes: string[];
  /** The requests its HTTPRouteGroups admit, or `all requests`. */
  requests: string[];
  /** `<ns>/<name>` of the IngressBackend admitting it (one entry per IngressBackend: each is its own RBAC policy). */
  ingressBackend: string;
  /** `<ns>/<name>` of the Ingresses whose routes apply. */
  ingresses: string[];
}

/** What the source's sidecars reported for an edge over the controller's window (pkg/stats). */
export interface GraphTraffic {
  /** Requests per second. */
  rps: number;
  /** Non-5xx share of the completed responses, 0–100, one decimal; absent without responses. */
  successPercent?: number;
  /** Latency quantiles (ms) of the requests. */
  p50Ms?: number;
  p99Ms?: number;
  /** Requests and 5xx responses in the window, and the seconds it covers. */
  requests: number;
  errors: number;
  seconds: number;
  /** Source proxies that reported. */
  proxies: number;
  /** `12.3 rps · 98.1% ok` */
  label: string;
}

export interface GraphEdge {
  id: string;
  /** Node ids. */
  source: string;
  target: string;
  /** traffic: calls the sidecars reported where no allow edge is drawn (permissive mode, or policy changed since). */
  kind: 'allow' | 'split' | 'egress' | 'ingress' | 'traffic';
  /** allow and traffic: request rate and success the source's sidecars reported. */
  traffic?: GraphTraffic;
  /** allow: the TrafficTarget names behind it (`<ns>/<name>`). */
  targets?: string[];
  /** allow: the destination ports and the routes allowed on them. */
  ports?: { port: number; routes: string[] }[];
  /** split: the backend's weight and its share of the apex's total, 0–100. */
  weight?: number;
  percent?: number;
  /** egress: per destination port and protocol. */
  egress?: GraphEgressPort[];
  /** ingress: per backend target port. */
  ingress?: GraphIngressPort[];
  /** egress/ingress: problems in force on the objects behind the edge (also in `problems`). */
  problems?: GraphProblem[];
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
  /** Destinations outside the mesh that Egress (or passthrough) lets sources reach. */
  external: GraphExternal[];
  /** IngressBackend sources outside the mesh. */
  ingressSources: GraphIngressSource[];
  edges: GraphEdge[];
  /** Invalid objects and policy problems in force, oldest first. */
  problems: GraphProblem[];
  counts: {
    namespaces: number;
    services: number;
    proxies: number;
    /** Allow edges. */
    edges: number;
    egress: number;
    ingress: number;
    /** Edges with reported traffic. */
    traffic: number;
    byState: Record<ProxyState, number>;
  };
}
