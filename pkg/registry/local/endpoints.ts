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

/** EndpointSlices of one Service: one per (IP family, resolved port set), endpoints sorted by pod name. */
export function deriveServiceSlices(svc: Service, pods: readonly Pod[]): EndpointSlice[] {
  const selector = svc.spec.selector;
  // Services without a selector get their endpoints from explicit slices only.
  if (!selector || Object.keys(selector).length === 0) return [];
  const base = `${svc.metadata.name}${DERIVED_SLICE_SUFFIX}`;
  const groups = new Map<string, EndpointSlice>();
  const members = pods
    .filter(
      (p) =>
        p.metadata.namespace === svc.metadata.namespace &&
        selects(selector, p.metadata.labels) &&
        // Terminal pods never serve again (as in the Kubernetes controller).
        p.status?.phase !== 'Succeeded' &&
        p.status?.phase !== 'Failed',
    )
    .sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0));
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

/** Derived EndpointSlices of every selector Service. */
export function deriveEndpointSlices(services: readonly Service[], pods: readonly Pod[]): EndpointSlice[] {
  const byNamespace = new Map<string, Pod[]>();
  for (const p of pods) {
    const ns = p.metadata.namespace ?? '';
    const list = byNamespace.get(ns) ?? [];
    list.push(p);
    byNamespace.set(ns, list);
  }
  return services.flatMap((svc) =>
    deriveServiceSlices(svc, byNamespace.get(svc.metadata.namespace ?? '') ?? []),
  );
}
