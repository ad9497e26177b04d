import { EventEmitter } from 'node:events';
import type { ProxyIdentity } from '../mesh/identity.js';
import type { Pod } from '../model/objects.js';
import { servedByPod } from './services.js';
import type { MeshService, MeshView, ProxyContext } from './types.js';

/** One live xDS stream of a proxy. */
export interface ConnectedProxy {
  identity: ProxyIdentity;
  streamId: string;
  connectedAt: Date;
  remoteAddress?: string;
}

export interface DisconnectedProxy extends ConnectedProxy {
  disconnectedAt: Date;
}

export interface ProxyRegistryOptions {
  /** How long a disconnected stream is remembered (default 10 minutes). */
  retainMs?: number;
  /** At most this many disconnected streams are remembered (default 1000). */
  maxRetained?: number;
  /** Clock, for tests. */
  now?: () => number;
}

/**
 * Tracks the proxies connected to this controller, by xDS stream. A proxy
 * (UUID) may hold several streams at once: a reconnect can overlap the old
 * stream until the server notices it is dead.
 */
export class ProxyRegistry extends EventEmitter<{
  connect: [ConnectedProxy];
  disconnect: [DisconnectedProxy];
}> {
  private readonly streams = new Map<string, ConnectedProxy>();
  private readonly byUuid = new Map<string, Set<string>>();
  // Insertion order is disconnect order, so the oldest entries are first.
  private readonly recent = new Map<string, DisconnectedProxy>();
  private readonly retainMs: number;
  private readonly maxRetained: number;
  private readonly now: () => number;

  constructor(opts: ProxyRegistryOptions = {}) {
    super();
    this.retainMs = opts.retainMs ?? 10 * 60_000;
    this.maxRetained = opts.maxRetained ?? 1000;
    this.now = opts.now ?? Date.now;
  }

  connect(
    identity: ProxyIdentity,
    meta: { streamId: string; connectedAt: Date; remoteAddress?: string },
  ): ConnectedProxy {
    if (this.streams.has(meta.streamId)) throw new Error(`stream ${meta.streamId} is already registered`);
    const p: ConnectedProxy = { identity, streamId: meta.streamId, connectedAt: meta.connectedAt };
    if (meta.remoteAddress !== undefined) p.remoteAddress = meta.remoteAddress;
    this.streams.set(p.streamId, p);
    const uuid = identity.uuid.toLowerCase();
    const ids = this.byUuid.get(uuid);
    if (ids) ids.add(p.streamId);
    else this.byUuid.set(uuid, new Set([p.streamId]));
    this.emit('connect', p);
    return p;
  }

  /** Forgets a stream; returns it, or undefined when it was not connected. */
  disconnect(streamId: string): DisconnectedProxy | undefined {
    const p = this.streams.get(streamId);
    if (!p) return undefined;
    this.streams.delete(streamId);
    const uuid = p.identity.uuid.toLowerCase();
    const ids = this.byUuid.get(uuid);
    ids?.delete(streamId);
    if (ids?.size === 0) this.byUuid.delete(uuid);
    const d: DisconnectedProxy = { ...p, disconnectedAt: new Date(this.now()) };
    this.recent.delete(streamId); // re-insert at the end: the map stays in disconnect order
    this.recent.set(streamId, d);
    this.prune();
    this.emit('disconnect', d);
    return d;
  }

  /** Live streams, oldest connection first. */
  connected(): ConnectedProxy[] {
    return [...this.streams.values()];
  }

  get size(): number {
    return this.streams.size;
  }

  stream(streamId: string): ConnectedProxy | undefined {
    return this.streams.get(streamId);
  }

  /** Live streams of one proxy UUID (several while a reconnect overlaps). */
  byProxyUuid(uuid: string): ConnectedProxy[] {
    const out: ConnectedProxy[] = [];
    for (const id of this.byUuid.get(uuid.toLowerCase()) ?? []) {
      const p = this.streams.get(id);
      if (p) out.push(p);
    }
    return out;
  }

  /** Streams that ended within the retention window, most recent last. */
  recentlyDisconnected(): DisconnectedProxy[] {
    this.prune();
    return [...this.recent.values()];
  }

  private prune(): void {
    const cutoff = this.now() - this.retainMs;
    for (const [id, d] of this.recent) {
      if (this.recent.size > this.maxRetained || d.disconnectedAt.getTime() < cutoff) this.recent.delete(id);
      else break;
    }
  }
}

/**
 * Why a proxy must not get the configuration of the pod carrying its UUID
 * label, or undefined when it may: the certificate's namespace and service
 * account must be the pod's (OSM checks the same — a stolen UUID must not
 * grant another identity's view).
 */
export function proxyPodMismatch(identity: ProxyIdentity, pod: Pod): string | undefined {
  const ns = pod.metadata.namespace ?? '';
  const sa = pod.spec?.serviceAccountName || 'default';
  if (ns !== identity.namespace)
    return `pod ${ns}/${pod.metadata.name} is in namespace ${ns}, not ${identity.namespace}`;
  if (sa !== identity.serviceAccount) {
    return `pod ${ns}/${pod.metadata.name} runs as service account ${sa}, not ${identity.serviceAccount}`;
  }
  return undefined;
}

/**
 * What the generators know about a proxy. The pod is the one labelled with the
 * proxy's UUID; a pod running as a different identity is not attached (see
 * proxyPodMismatch), so such a proxy backs no services.
 *
 * `lastPod` is the pod the proxy's stream had before, used only while no pod
 * carries the UUID: a pod object can be gone (force-deleted, or removed before
 * its process stops) while its proxy still serves callers whose endpoints
 * have not caught up, and taking its services away would deny them.
 */
export function proxyContext(identity: ProxyIdentity, view: MeshView, lastPod?: Pod): ProxyContext {
  // The gateway runs in the control-plane namespace, never a monitored one: it
  // is part of the mesh by its kind (only the webhook issues that kind, to
  // pods it labels in that namespace, pkg/injector/gateway.ts).
  const outsideMesh = identity.kind !== 'gateway' && !view.inMesh(identity.namespace);
  // A namespace that left the mesh takes its pods with it: no last pod there.
  const found = view.podOfProxy(identity.uuid) ?? (outsideMesh ? undefined : lastPod);
  const pod = found && proxyPodMismatch(identity, found) === undefined ? found : undefined;
  const services = pod ? view.servicesOfPod(pod).map((s) => servedByPod(s, pod)) : [];
  const podIP = pod?.status?.podIP || undefined;
  // Sidecars of one identity backing the same services get identical config;
  // proxyless servers also bind their listener name to the pod IP.
  const groupKey = [
    identity.kind,
    `${identity.namespace}/${identity.serviceAccount}`,
    // Target ports are part of the key: pods of one service may resolve a
    // named target port to different numbers.
    services
      .map((s) => `${s.key}:${s.ports.map((p) => p.targetPort).join('+')}`)
      .sort()
      .join(','),
    identity.kind === 'grpc' ? (podIP ?? '') : '',
    // Outside the mesh a proxy gets other configuration than one whose pod is not known yet.
    ...(outsideMesh ? ['outside'] : []),
  ].join('|');
  const ctx: ProxyContext = { identity, services, groupKey };
  if (outsideMesh) ctx.outsideMesh = true;
  if (pod) ctx.pod = pod;
  if (podIP !== undefined) ctx.podIP = podIP;
  return ctx;
}

/** A proxy's group key (ProxyContext.groupKey) and the view answers it was derived from. */
export interface ProxyGroup {
  readonly groupKey: string;
  readonly pod: Pod | undefined;
  readonly services: readonly MeshService[];
  readonly inMesh: boolean;
}

/**
 * The proxy's group at `view`, or `previous` itself when the pod carrying its
 * UUID and the service list are the very objects it was derived from: the
 * group key is a function of the identity, that pod and the services
 * (servicesOfPod reads only those; the list is the same object while no
 * service changed, MeshView identity contract). Costs a lookup when unchanged.
 */
export function proxyGroup(
  identity: ProxyIdentity,
  view: MeshView,
  previous?: ProxyGroup,
  /** The proxy's context in `view`; a caller that keeps contexts passes its own. */
  contextIn: (identity: ProxyIdentity, view: MeshView) => ProxyContext = proxyContext,
): ProxyGroup {
  const pod = view.podOfProxy(identity.uuid);
  const services = view.services();
  const inMesh = identity.kind === 'gateway' || view.inMesh(identity.namespace);
  if (
    previous !== undefined &&
    previous.pod === pod &&
    previous.services === services &&
    previous.inMesh === inMesh
  )
    return previous;
  return { groupKey: contextIn(identity, view).groupKey, pod, services, inMesh };
}
