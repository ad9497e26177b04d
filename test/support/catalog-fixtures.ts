// Small builders for mesh objects, for tests here and in packages that test
// against a MeshView (generators, xDS server). Not used at runtime.

import { LABEL_SERVICE_NAME } from '../../pkg/catalog/services.js';
import { LABEL_MONITORED_BY, LABEL_PROXY_UUID } from '../../pkg/mesh/constants.js';
import type {
  AnyObject,
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
} from '../../pkg/model/objects.js';

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

/**
 * A small mesh `skein` for tests that read a MeshView as a whole (the web
 * view's graph, /debug/policies). Namespaces shop and buyers; bookstore is a
 * split apex (v1 90, v2 10) over pods store-1 and store-2 (identity
 * shop/bookstore), warehouse has pod wh-1 without a proxy UUID; all services
 * HTTP on 14001. buyers/bookbuyer may GET /buy on bookstore
 * (shop/buyer-to-store); bookstore may call warehouse on any route
 * (shop/store-to-warehouse).
 */
export function shopMesh(): AnyObject[] {
  // Fresh per call: a test may change what it is given.
  const http = [{ name: 'http', port: 14001, appProtocol: 'http' }];
  return [
    namespace('shop', 'skein'),
    namespace('buyers', 'skein'),
    service('shop', 'bookstore', http),
    service('shop', 'bookstore-v1', http, { app: 'bookstore', version: 'v1' }),
    service('shop', 'bookstore-v2', http, { app: 'bookstore', version: 'v2' }),
    service('shop', 'warehouse', http),
    pod('shop', 'store-1', {
      sa: 'bookstore',
      labels: { app: 'bookstore', version: 'v1' },
      ip: '10.0.0.2',
      uuid: 'u-store-1',
    }),
    pod('shop', 'store-2', {
      sa: 'bookstore',
      labels: { app: 'bookstore', version: 'v2' },
      ip: '10.0.0.3',
      uuid: 'u-store-2',
    }),
    pod('shop', 'wh-1', { sa: 'warehouse', labels: { app: 'warehouse' }, ip: '10.0.0.4' }),
    pod('buyers', 'buyer-1', {
      sa: 'bookbuyer',
      labels: { app: 'bookbuyer' },
      ip: '10.0.1.2',
      uuid: 'u-buyer',
    }),
    endpointSlice('shop', 'bookstore', 'bookstore-a', [
      { ip: '10.0.0.2', pod: 'store-1' },
      { ip: '10.0.0.3', pod: 'store-2' },
    ]),
    endpointSlice('shop', 'bookstore-v1', 'bookstore-v1-a', [{ ip: '10.0.0.2', pod: 'store-1' }]),
    endpointSlice('shop', 'bookstore-v2', 'bookstore-v2-a', [{ ip: '10.0.0.3', pod: 'store-2' }]),
    endpointSlice('shop', 'warehouse', 'warehouse-a', [{ ip: '10.0.0.4', pod: 'wh-1' }]),
    httpRouteGroup('shop', 'store-routes', [{ name: 'buy', pathRegex: '/buy', methods: ['GET'] }]),
    httpRouteGroup('shop', 'everything', [{ name: 'all', pathRegex: '.*', methods: ['*'] }]),
    trafficTarget(
      'shop',
      'buyer-to-store',
      sa('bookstore', 'shop'),
      [sa('bookbuyer', 'buyers')],
      [{ kind: 'HTTPRouteGroup', name: 'store-routes', matches: ['buy'] }],
    ),
    trafficTarget(
      'shop',
      'store-to-warehouse',
      sa('warehouse', 'shop'),
      [sa('bookstore', 'shop')],
      [{ kind: 'HTTPRouteGroup', name: 'everything' }],
    ),
    trafficSplit('shop', 'split', 'bookstore', [
      { service: 'bookstore-v1', weight: 90 },
      { service: 'bookstore-v2', weight: 10 },
    ]),
  ];
}
