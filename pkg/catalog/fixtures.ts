// Small builders for mesh objects, for tests here and in packages that test
// against a MeshView (generators, xDS server). Not used at runtime.
import { LABEL_MONITORED_BY, LABEL_PROXY_UUID } from '../mesh/constants.js';
import type {
  EndpointSlice,
  HTTPMatch,
  HTTPRouteGroup,
  IdentityRef,
  MeshConfig,
  MeshConfigSpec,
  Namespace,
  Pod,
  Service,
  ServicePort,
  TCPRoute,
  TrafficSplit,
  TrafficSplitBackend,
  TrafficTarget,
  TrafficTargetRule,
} from '../model/objects.js';
import { LABEL_SERVICE_NAME } from './services.js';

export function namespace(name: string, mesh?: string): Namespace {
  const metadata = mesh ? { name, labels: { [LABEL_MONITORED_BY]: mesh } } : { name };
  return { apiVersion: 'v1', kind: 'Namespace', metadata, spec: undefined };
}

export function meshConfig(name: string, ns: string, spec: MeshConfigSpec): MeshConfig {
  return {
    apiVersion: 'config.skein.dev/v1alpha1',
    kind: 'MeshConfig',
    metadata: { name, namespace: ns },
    spec,
  };
}

export function service(
  ns: string,
  name: string,
  ports: ServicePort[],
  selector: Record<string, string> = { app: name },
  clusterIP?: string,
): Service {
  const spec = clusterIP === undefined ? { selector, ports } : { selector, ports, clusterIP };
  return { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: ns }, spec };
}

export interface PodOptions {
  sa?: string;
  labels?: Record<string, string>;
  ip?: string;
  uuid?: string;
  containerPorts?: { name?: string; containerPort: number }[];
  phase?: string;
}

export function pod(ns: string, name: string, o: PodOptions = {}): Pod {
  const labels = { ...(o.labels ?? {}), ...(o.uuid ? { [LABEL_PROXY_UUID]: o.uuid } : {}) };
  const p: Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns, labels },
    spec: { containers: [{ name: 'app', ports: o.containerPorts ?? [] }] },
  };
  if (o.sa !== undefined) p.spec.serviceAccountName = o.sa;
  if (o.ip !== undefined || o.phase !== undefined) {
    p.status = { phase: o.phase ?? 'Running' };
    if (o.ip !== undefined) p.status.podIP = o.ip;
  }
  return p;
}

export function endpointSlice(
  ns: string,
  svcName: string,
  name: string,
  endpoints: { ip: string; ready?: boolean; pod?: string }[],
  ports?: { name?: string; port?: number }[],
): EndpointSlice {
  const s: EndpointSlice = {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name, namespace: ns, labels: { [LABEL_SERVICE_NAME]: svcName } },
    addressType: 'IPv4',
    endpoints: endpoints.map((e) => ({
      addresses: [e.ip],
      ...(e.ready === undefined ? {} : { conditions: { ready: e.ready } }),
      ...(e.pod ? { targetRef: { kind: 'Pod', name: e.pod, namespace: ns } } : {}),
    })),
  };
  if (ports) s.ports = ports;
  return s;
}

export function sa(name: string, ns?: string): IdentityRef {
  return ns === undefined
    ? { kind: 'ServiceAccount', name }
    : { kind: 'ServiceAccount', name, namespace: ns };
}

export function trafficTarget(
  ns: string,
  name: string,
  destination: IdentityRef,
  sources: IdentityRef[],
  rules: TrafficTargetRule[],
): TrafficTarget {
  return {
    apiVersion: 'access.smi-spec.io/v1alpha3',
    kind: 'TrafficTarget',
    metadata: { name, namespace: ns },
    spec: { destination, sources, rules },
  };
}

export function httpRouteGroup(ns: string, name: string, matches: HTTPMatch[]): HTTPRouteGroup {
  return {
    apiVersion: 'specs.smi-spec.io/v1alpha4',
    kind: 'HTTPRouteGroup',
    metadata: { name, namespace: ns },
    spec: { matches },
  };
}

export function tcpRoute(ns: string, name: string, ports?: number[]): TCPRoute {
  return {
    apiVersion: 'specs.smi-spec.io/v1alpha4',
    kind: 'TCPRoute',
    metadata: { name, namespace: ns },
    spec: { matches: ports === undefined ? {} : { ports } },
  };
}

export function trafficSplit(
  ns: string,
  name: string,
  apex: string,
  backends: TrafficSplitBackend[],
  apiVersion = 'split.smi-spec.io/v1alpha2',
): TrafficSplit {
  return {
    apiVersion,
    kind: 'TrafficSplit',
    metadata: { name, namespace: ns },
    spec: { service: apex, backends },
  };
}
