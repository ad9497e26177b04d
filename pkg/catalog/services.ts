import type { Identity } from '../mesh/identity.js';
import type { EndpointSlice, Pod, Service, ServicePort } from '../model/objects.js';
import type { Endpoint, MeshService, MeshServicePort, Protocol } from './types.js';

/** Kubernetes' cluster DNS suffix; fixed, unlike the (certificate) trust domain. */
export const CLUSTER_DOMAIN = 'svc.cluster.local';

/** Label the EndpointSlice controller puts on every slice it owns. */
export const LABEL_SERVICE_NAME = 'kubernetes.io/service-name';

export function serviceKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

export function serviceFqdn(namespace: string, name: string): string {
  return `${name}.${namespace}.${CLUSTER_DOMAIN}`;
}

const APP_PROTOCOLS: Readonly<Record<string, Protocol>> = {
  http: 'http',
  http2: 'http',
  h2c: 'http',
  'kubernetes.io/h2c': 'http',
  grpc: 'grpc',
  tcp: 'tcp',
};

/**
 * Protocol of a service port (OSM's convention, docs.openservicemesh.io "Application Protocol Selection"): `appProtocol`, else the
 * port-name prefix (`http-`, `grpc-`, `tcp-`, or exactly that name), else http.
 * HTTP/2 flavours map to http: the proxy speaks HTTP either way, and `grpc` is
 * reserved for ports that carry gRPC. An unknown appProtocol falls through to
 * the name.
 */
export function portProtocol(port: Pick<ServicePort, 'name' | 'appProtocol'>): Protocol {
  const app = port.appProtocol?.toLowerCase();
  if (app !== undefined) {
    const p = APP_PROTOCOLS[app];
    if (p) return p;
  }
  const name = port.name?.toLowerCase() ?? '';
  for (const p of ['http', 'grpc', 'tcp'] as const) {
    if (name === p || name.startsWith(`${p}-`)) return p;
  }
  return 'http';
}

/**
 * The port pods listen on: a number as given; a name through the container
 * ports of the selected pods (first pod by name that declares it); otherwise
 * the service port, as Kubernetes does when targetPort is omitted.
 */
export function resolveTargetPort(port: ServicePort, pods: readonly Pod[]): number {
  const t = port.targetPort;
  if (typeof t === 'number') return t;
  if (typeof t === 'string' && t !== '') {
    const asNumber = Number(t);
    if (Number.isInteger(asNumber) && asNumber > 0) return asNumber;
    for (const pod of pods) {
      for (const c of pod.spec?.containers ?? []) {
        const found = c.ports?.find((cp) => cp.name === t);
        if (found) return found.containerPort;
      }
    }
  }
  return port.port;
}

// Pods and MeshServices are immutable and kept identical while unchanged, so
// the per-pod copy can be shared by every push of that pod's proxy.
const servedCache = new WeakMap<Pod, WeakMap<MeshService, MeshService>>();

/**
 * The service as one pod serves it: named target ports resolved against that
 * pod's container ports (pods behind one Service may listen on different
 * numbers for the same port name). Returns the same object when nothing
 * differs, and the same copy for the same (service, pod) pair.
 */
export function servedByPod(svc: MeshService, pod: Pod): MeshService {
  let byService = servedCache.get(pod);
  const hit = byService?.get(svc);
  if (hit) return hit;
  let changed = false;
  const ports = svc.ports.map((p) => {
    if (p.targetPortName === undefined) return p;
    for (const c of pod.spec?.containers ?? []) {
      const found = c.ports?.find((cp) => cp.name === p.targetPortName);
      if (!found) continue;
      if (found.containerPort === p.targetPort) return p;
      changed = true;
      return { ...p, targetPort: found.containerPort };
    }
    return p;
  });
  const out = changed ? { ...svc, ports } : svc;
  if (!byService) {
    byService = new WeakMap();
    servedCache.set(pod, byService);
  }
  byService.set(svc, out);
  return out;
}

export function toMeshService(svc: Service, pods: readonly Pod[]): MeshService {
  const namespace = svc.metadata.namespace ?? '';
  const name = svc.metadata.name;
  const ports: MeshServicePort[] = (svc.spec?.ports ?? []).map((p) => {
    const mp: MeshServicePort = {
      port: p.port,
      targetPort: resolveTargetPort(p, pods),
      protocol: portProtocol(p),
    };
    if (p.name !== undefined && p.name !== '') mp.name = p.name;
    if (typeof p.targetPort === 'string' && !/^[0-9]+$/.test(p.targetPort)) mp.targetPortName = p.targetPort;
    return mp;
  });
  const out: MeshService = {
    namespace,
    name,
    key: serviceKey(namespace, name),
    fqdn: serviceFqdn(namespace, name),
    ports,
    selector: { ...(svc.spec?.selector ?? {}) },
  };
  // Headless services ('None') have no virtual IP to match on.
  const ip = svc.spec?.clusterIP;
  if (ip !== undefined && ip !== '' && ip !== 'None') out.clusterIP = ip;
  return out;
}

/**
 * Splits a proxyless-style host into name and namespace. Accepts
 * `<svc>.<ns>.svc.cluster.local`, `<svc>.<ns>.svc`, `<svc>.<ns>`, a trailing
 * dot, and a `:port` suffix.
 */
export function parseServiceHost(host: string): { name: string; namespace: string } | undefined {
  let h = host.trim().toLowerCase();
  const colon = h.lastIndexOf(':');
  if (colon >= 0 && /^\d+$/.test(h.slice(colon + 1))) h = h.slice(0, colon);
  if (h.endsWith('.')) h = h.slice(0, -1);
  for (const suffix of [`.${CLUSTER_DOMAIN}`, '.svc']) {
    if (h.endsWith(suffix)) {
      h = h.slice(0, -suffix.length);
      break;
    }
  }
  const parts = h.split('.');
  if (parts.length !== 2) return undefined;
  const [name, namespace] = parts as [string, string];
  if (name === '' || namespace === '') return undefined;
  return { name, namespace };
}

/** Distinct service accounts of the pods, sorted. A pod without one runs as `default`. */
export function podIdentities(pods: Iterable<Pod>): Identity[] {
  const byKey = new Map<string, Identity>();
  for (const pod of pods) {
    const id = {
      namespace: pod.metadata.namespace ?? '',
      serviceAccount: pod.spec?.serviceAccountName || 'default',
    };
    byKey.set(`${id.namespace}/${id.serviceAccount}`, id);
  }
  return [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, id]) => id);
}

/**
 * Ready endpoints of one service port from the service's EndpointSlices,
 * sorted by IP (then port) and deduplicated by address and port: pods sharing
 * an IP (hostNetwork pods on one node) are distinct endpoints on their own
 * ports. A slice port matches the service port by name (unnamed = ''), or is
 * used when it is the slice's only port and the service has one port. A slice without ports (as a hand-written local slice
 * may be) uses the resolved target port. `ready` absent counts as ready, as
 * the EndpointSlice API defines.
 */
export function sliceEndpoints(
  service: MeshService,
  servicePort: MeshServicePort,
  slices: readonly EndpointSlice[],
): Endpoint[] {
  const byAddress = new Map<string, Endpoint>();
  for (const slice of slices) {
    if (slice.addressType === 'FQDN') continue;
    const port = slicePort(slice, service, servicePort);
    if (port === undefined) continue;
    for (const ep of slice.endpoints ?? []) {
      if (ep.conditions?.ready === false) continue;
      for (const ip of ep.addresses ?? []) {
        const key = `${ip}|${port}`;
        if (byAddress.has(key)) continue;
        const e: Endpoint = { ip, port, ready: true };
        if (ep.targetRef?.kind === 'Pod') e.podName = ep.targetRef.name;
        byAddress.set(key, e);
      }
    }
  }
  return [...byAddress.values()].sort((a, b) => compareIps(a.ip, b.ip) || a.port - b.port);
}

function slicePort(slice: EndpointSlice, service: MeshService, sp: MeshServicePort): number | undefined {
  const ports = slice.ports ?? [];
  if (ports.length === 0) return sp.targetPort;
  const named = ports.find((p) => (p.name ?? '') === (sp.name ?? ''));
  const chosen = named ?? (ports.length === 1 && service.ports.length === 1 ? ports[0] : undefined);
  if (!chosen) return undefined;
  return chosen.port ?? sp.targetPort;
}

// IPv4 addresses sort numerically (10.0.0.9 before 10.0.0.10); anything else lexically.
function compareIps(a: string, b: string): number {
  const pa = ipv4Number(a);
  const pb = ipv4Number(b);
  if (pa !== undefined && pb !== undefined) return pa - pb;
  if (pa !== undefined) return -1;
  if (pb !== undefined) return 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

function ipv4Number(ip: string): number | undefined {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(ip);
  if (!m) return undefined;
  return ((Number(m[1]) * 256 + Number(m[2])) * 256 + Number(m[3])) * 256 + Number(m[4]);
}
