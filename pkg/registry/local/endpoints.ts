// Local mode has no EndpointSlice controller; this does its job for manifests:
// endpoints of a selector Service are the running pods its selector matches.
import type {
  EndpointSlice,
  EndpointSliceEndpoint,
  EndpointSlicePort,
  Pod,
  Service,
  ServicePort,
} from '../../model/objects.js';

export const LABEL_SERVICE_NAME = 'kubernetes.io/service-name';
export const LABEL_MANAGED_BY = 'endpointslice.kubernetes.io/managed-by';
export const MANAGED_BY_LOCAL_REGISTRY = 'skein.dev/local-registry';
/** Derived slices are named `<service>-local` (then `-local-2`, ... if ports or IP families differ). */
export const DERIVED_SLICE_SUFFIX = '-local';

function selects(selector: Record<string, string>, labels: Record<string, string> | undefined): boolean {
  return Object.entries(selector).every(([k, v]) => labels?.[k] === v);
}

function podIPs(pod: Pod): string[] {
  const ips = [pod.status?.podIP, ...(pod.status?.podIPs ?? []).map((p) => p.ip)];
  return [...new Set(ips.filter((ip): ip is string => typeof ip === 'string' && ip !== ''))];
}

/**
 * The pod port a service port reaches: its numeric targetPort, a named
 * targetPort looked up in the pod's container ports, or the service port.
 * Undefined when the pod has no such named port (Kubernetes then leaves the
 * port out for that pod).
 */
export function resolveTargetPort(sp: ServicePort, pod: Pod): number | undefined {
  const target = sp.targetPort;
  if (target === undefined) return sp.port;
  if (typeof target === 'number') return target;
  if (/^[0-9]+$/.test(target)) return Number(target);
  const protocol = sp.protocol ?? 'TCP';
  for (const c of pod.spec.containers ?? []) {
    for (const cp of c.ports ?? []) {
      if (cp.name === target && (cp.protocol ?? 'TCP') === protocol) return cp.containerPort;
    }
  }
  return undefined;
}

function slicePort(sp: ServicePort, port: number): EndpointSlicePort {
  const out: EndpointSlicePort = {};
  if (sp.name !== undefined) out.name = sp.name;
  out.port = port;
  out.protocol = sp.protocol ?? 'TCP';
  if (sp.appProtocol !== undefined) out.appProtocol = sp.appProtocol;
  return out;
}

/** Ready unless the pod says otherwise: manifests rarely carry conditions. */
function podReady(pod: Pod): boolean {
  return pod.status?.conditions?.find((c) => c.type === 'Ready')?.status !== 'False';
}

function endpointOf(pod: Pod, ip: string): EndpointSliceEndpoint {
  const ready = podReady(pod);
  const out: EndpointSliceEndpoint = {
    addresses: [ip],
    conditions: { ready, serving: ready, terminating: false },
    targetRef: { kind: 'Pod', name: pod.metadata.name, namespace: pod.metadata.namespace ?? '' },
  };
  if (pod.spec.nodeName !== undefined) out.nodeName = pod.spec.nodeName;
  return out;
}

function sliceOf(
  svc: Service,
  name: string,
  addressType: 'IPv4' | 'IPv6',
  ports: EndpointSlicePort[],
): EndpointSlice {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name,
      namespace: svc.metadata.namespace,
      labels: { [LABEL_SERVICE_NAME]: svc.metadata.name, [LABEL_MANAGED_BY]: MANAGED_BY_LOCAL_REGISTRY },
    },
    addressType,
    endpoints: [],
    ports,
  };
}

/** Whether a pod can be an endpoint at all: terminal pods never serve again (as in the Kubernetes controller). */
function live(pod: Pod): boolean {
  return pod.status?.phase !== 'Succeeded' && pod.status?.phase !== 'Failed';
}

function byName(a: Pod, b: Pod): number {
  return a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0;
}

/** A Service's selector; undefined when it has none (its endpoints come from explicit slices only). */
function selectorOf(svc: Service): Record<string, string> | undefined {
  const selector = svc.spec.selector;
  return selector && Object.keys(selector).length > 0 ? selector : undefined;
}

/** The live pods of `candidates` a selector Service selects, sorted by name; [] without a selector. */
export function selectedPods(svc: Service, candidates: readonly Pod[]): Pod[] {
  const selector = selectorOf(svc);
  if (!selector) return [];
  return candidates
    .filter(
      (p) =>
        p.metadata.namespace === svc.metadata.namespace && selects(selector, p.metadata.labels) && live(p),
    )
    .sort(byName);
}

/** EndpointSlices of one Service: one per (IP family, resolved port set), endpoints sorted by pod name. */
export function deriveServiceSlices(svc: Service, pods: readonly Pod[]): EndpointSlice[] {
  return slicesOf(svc, selectedPods(svc, pods));
}

/** The slices of a selector Service whose selected pods are `members` (sorted by name). */
export function slicesOf(svc: Service, members: readonly Pod[]): EndpointSlice[] {
  if (!selectorOf(svc)) return [];
  const base = `${svc.metadata.name}${DERIVED_SLICE_SUFFIX}`;
  const groups = new Map<string, EndpointSlice>();
  for (const pod of members) {
    const ports: EndpointSlicePort[] = [];
    for (const sp of svc.spec.ports ?? []) {
      const port = resolveTargetPort(sp, pod);
      if (port !== undefined) ports.push(slicePort(sp, port));
    }
    for (const ip of podIPs(pod)) {
      const family = ip.includes(':') ? 'IPv6' : 'IPv4';
      const key = family + JSON.stringify(ports);
      let slice = groups.get(key);
      if (!slice) {
        const name = groups.size === 0 ? base : `${base}-${groups.size + 1}`;
        slice = sliceOf(svc, name, family, ports);
        groups.set(key, slice);
      }
      slice.endpoints.push(endpointOf(pod, ip));
    }
  }
  // Like Kubernetes' placeholder slice: a selector Service always has one, possibly empty.
  if (groups.size === 0) return [sliceOf(svc, base, 'IPv4', [])];
  return [...groups.values()];
}

/** Derived EndpointSlices of every selector Service (one-off; the registry keeps a SliceDeriver). */
export function deriveEndpointSlices(services: readonly Service[], pods: readonly Pod[]): EndpointSlice[] {
  return new SliceDeriver().derive(services, pods);
}

interface Derived {
  svc: Service;
  members: readonly Pod[];
  slices: EndpointSlice[];
}

// '\0' cannot occur in a label key or value, so a pair is one unambiguous map key.
const pairKey = (k: string, v: string): string => `${k}\0${v}`;

/**
 * Derives the slices of every selector Service, again and again as the
 * manifests change, with work in proportion to what changed: pods are indexed
 * by namespace and label, so a Service looks only at pods carrying one of its
 * selector's labels, and a Service whose object and selected pods are the very
 * objects of the last run keeps its slice objects, which the registry then
 * recognises as unchanged without comparing them. Parsed objects are never
 * mutated (a re-read file yields new ones), so identity means "unchanged".
 */
export class SliceDeriver {
  private last = new Map<string, Derived>();

  derive(services: readonly Service[], pods: readonly Pod[]): EndpointSlice[] {
    const index = new Map<string, Map<string, Pod[]>>();
    for (const p of pods) {
      if (!live(p)) continue;
      const ns = p.metadata.namespace ?? '';
      let byLabel = index.get(ns);
      if (!byLabel) {
        byLabel = new Map();
        index.set(ns, byLabel);
      }
      for (const [k, v] of Object.entries(p.metadata.labels ?? {})) {
        const key = pairKey(k, v);
        const list = byLabel.get(key);
        if (list) list.push(p);
        else byLabel.set(key, [p]);
      }
    }
    const next = new Map<string, Derived>();
    const out: EndpointSlice[] = [];
    for (const svc of services) {
      const selector = selectorOf(svc);
      if (!selector) continue;
      const byLabel = index.get(svc.metadata.namespace ?? '');
      // The shortest list of pods carrying one of the selector's pairs holds every member.
      let candidates: readonly Pod[] = [];
      let first = true;
      for (const [k, v] of Object.entries(selector)) {
        const list = byLabel?.get(pairKey(k, v)) ?? [];
        if (first || list.length < candidates.length) candidates = list;
        first = false;
      }
      const members = selectedPods(svc, candidates);
      const key = `${svc.metadata.namespace ?? ''}/${svc.metadata.name}`;
      const prev = this.last.get(key);
      const same =
        prev !== undefined &&
        prev.svc === svc &&
        prev.members.length === members.length &&
        prev.members.every((m, i) => m === members[i]);
      const derived = same ? prev : { svc, members, slices: slicesOf(svc, members) };
      next.set(key, derived);
      out.push(...derived.slices);
    }
    this.last = next;
    return out;
  }
}
