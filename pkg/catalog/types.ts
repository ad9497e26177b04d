import type { Identity, ProxyIdentity } from '../mesh/identity.js';
import type { HTTPMatch, Pod } from '../model/objects.js';

/** Application protocol of a service port: `appProtocol`, else the port-name prefix, else http. */
export type Protocol = 'http' | 'grpc' | 'tcp';

export interface MeshServicePort {
  name?: string;
  /** The service port clients dial. */
  port: number;
  /**
   * The port the pods listen on. A named target port is resolved through the
   * container ports of the selected pods (the first that declares it); in a
   * ProxyContext it is resolved against that proxy's own pod.
   */
  targetPort: number;
  /** The target port's name when the Service gave one (`targetPort: grpc-api`). */
  targetPortName?: string;
  protocol: Protocol;
}

/** A Service in a monitored namespace. */
export interface MeshService {
  namespace: string;
  name: string;
  /** `<namespace>/<name>` */
  key: string;
  /** `<name>.<namespace>.svc.cluster.local` */
  fqdn: string;
  clusterIP?: string;
  ports: MeshServicePort[];
  selector: Record<string, string>;
}

export interface Endpoint {
  ip: string;
  /** Target port on the pod. */
  port: number;
  ready: boolean;
  podName?: string;
}

/** One weighted backend of a TrafficSplit apex. */
export interface SplitBackend {
  service: MeshService;
  weight: number;
}

/**
 * Permissive mode's source set in a rule: every identity of the mesh (and, on a
 * plaintext chain, every caller). The word is also what /debug, the CLI and the
 * web UI print for it (a string value, not TypeScript's any).
 */
export const EVERY_SOURCE = 'any'; // a string value, not TypeScript's any
export type EverySource = typeof EVERY_SOURCE;

/** Who may reach one port of a destination service, and how. */
export interface InboundRule {
  /** Allowed source identities, or EVERY_SOURCE (permissive mode). */
  sources: Identity[] | EverySource;
  /**
   * For http/grpc ports: the HTTP matches allowed (ORed), or 'all' when the rule
   * allows every request (permissive mode, or a TCPRoute covering this port).
   */
  http: HTTPMatch[] | 'all';
  /** The SMI object behind this rule (`TrafficTarget <ns>/<name>`), or 'permissive'. */
  origin: string;
}

/**
 * MeshView is an immutable, computed view of the mesh at one store version:
 * what the policy engine knows, in the terms the xDS generators need.
 *
 * Contract: every method is a pure function of the view (same answer every
 * call); a new view is made for every change. Methods are cheap enough to call
 * per proxy — expensive answers are memoized inside the view.
 *
 * Identity contract (structural sharing across views): answers are immutable,
 * and a view built with `previous` returns, for the same question, the very
 * object (===) an earlier view of the chain returned whenever its content is
 * unchanged — for `services()`, `service()`, `endpoints()`,
 * `serviceIdentities()`, `outboundServices()`, `split()` and `inboundRules()`
 * (and the MeshService objects inside lists). Consumers may therefore memoise
 * pure functions of these answers on their identity (WeakMap) and treat a new
 * object as "may have changed"; a miss only costs recomputation, never a wrong
 * answer. Empty answers may be one shared frozen array for every question, so
 * such memos must also key on what was asked (the service key, port, …).
 */
export interface MeshView {
  /** Store version this view was computed from. */
  readonly version: number;
  readonly permissive: boolean;
  readonly trustDomain: string;

  /** Services in monitored namespaces, sorted by key. */
  services(): readonly MeshService[];
  service(key: string): MeshService | undefined;
  /** Find a service by a proxyless-style host: `<svc>.<ns>.svc.cluster.local`, `<svc>.<ns>.svc` or `<svc>.<ns>`. */
  serviceByHost(host: string): MeshService | undefined;
  /** Endpoints of one service port (by its service port number), sorted by IP. */
  endpoints(serviceKey: string, port: number): readonly Endpoint[];
  /** Identities (service accounts) of the pods backing a service; for SAN matching. */
  serviceIdentities(serviceKey: string): readonly Identity[];

  /** Whether the namespace is part of the mesh (it carries the mesh's monitored-by label). */
  inMesh(namespace: string): boolean;
  /** The pod carrying this proxy UUID label, if any (monitored namespaces only). */
  podOfProxy(uuid: string): Pod | undefined;
  /** Services whose selector matches the pod. */
  servicesOfPod(pod: Pod): readonly MeshService[];

  /** Services the identity may call (permissive: all). Includes split apexes. */
  outboundServices(source: Identity): readonly MeshService[];
  /** TrafficSplit backends of an apex service (merged across splits), or undefined. */
  split(apexKey: string): readonly SplitBackend[] | undefined;
  /** Inbound policy for one port of a destination service. Empty = deny all (SMI mode). */
  inboundRules(serviceKey: string, port: number): readonly InboundRule[];
}

/** What a generator knows about the proxy it builds for. */
export interface ProxyContext {
  identity: ProxyIdentity;
  pod?: Pod;
  podIP?: string;
  /** Services this proxy's pod backs. */
  services: readonly MeshService[];
  /**
   * The proxy's namespace is not in the mesh (it left, or never joined): its
   * workload is meant to run as it would without a mesh. Not set while the
   * namespace is in the mesh, whether or not its pod is known yet.
   */
  outsideMesh?: true;
  /**
   * Proxies with the same group key get the same configuration (same kind,
   * identity, backed services, and for proxyless servers the pod IP), so output
   * can be cached per group rather than per proxy.
   */
  groupKey: string;
}
