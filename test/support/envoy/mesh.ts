// Test helper: the bookstore mesh as SMI objects in a MeshStore, seen through
// the real policy engine (buildMeshView) and real ProxyContexts, so generator
// tests exercise the same answers the controller would give them.
//
//   bookbuyer ──▶ bookstore (apex, split 75/25) ──▶ bookstore-v1 | bookstore-v2
//   bookstore-v1/v2 ──▶ bookwarehouse (grpc 14001, tcp 3306→13306) ──▶ mysql (headless, tcp 3306)
//   bookthief: a meshed identity no TrafficTarget names.
//
// bookbuyer's TrafficTarget names bookstore-v1's service account only, so it
// may call the apex and bookstore-v1 but not bookstore-v2, which it reaches
// only through the split; bookstore-v2 has no inbound rule at all.

import { proxyContext } from '../../../pkg/catalog/proxies.js';
import type { MeshView, ProxyContext } from '../../../pkg/catalog/types.js';
import { buildMeshView } from '../../../pkg/catalog/view.js';
import type { IssuedCertificate, SecretSource } from '../../../pkg/certificate/types.js';
import type { GenerationContext } from '../../../pkg/envoy/types.js';
import { DEFAULT_MESH_NAME, LABEL_PROXY_UUID, type ProxyKind } from '../../../pkg/mesh/constants.js';
import { proxyCommonName } from '../../../pkg/mesh/identity.js';
import type { AnyObject, HTTPMatch, Pod, ServicePort } from '../../../pkg/model/objects.js';
import { deriveEndpointSlices } from '../../../pkg/registry/local/endpoints.js';
import { MeshStore } from '../../../pkg/registry/store.js';
import {
  httpRouteGroup,
  meshConfig,
  namespace,
  pod,
  sa,
  service,
  tcpRoute,
  trafficSplit,
  trafficTarget,
} from '../catalog-fixtures.js';

const MATCH_BOOKS_BOUGHT: HTTPMatch = {
  name: 'books-bought',
  pathRegex: '/books-bought',
  methods: ['GET'],
  headers: { 'user-agent': '.*-http-client/*.*', 'client-app': 'bookbuyer' },
};
const MATCH_BUY_A_BOOK: HTTPMatch = {
  name: 'buy-a-book',
  pathRegex: '.*a-book.*new',
  methods: ['GET', 'POST'],
};

export interface BookstoreOptions {
  permissive?: boolean;
  /** Split weights of the apex; default 75/25. */
  weights?: { v1: number; v2: number };
  /** Container port behind the bookstore services' named target port, per version; default 14001. */
  targetPorts?: { v1?: number; v2?: number };
  /** The matches of bookstore's HTTPRouteGroup; default books-bought and buy-a-book. */
  bookstoreMatches?: HTTPMatch[];
  /** An extra TCP port on the split apex and both backends. */
  tcpSplitPort?: { port: number; targetPort: number };
}

/** Every pod of the mesh, each with a proxy UUID label. */
export const POD_NAMES = [
  'bookbuyer-1',
  'bookthief-1',
  'bookstore-v1-1',
  'bookstore-v1-2',
  'bookstore-v2-1',
  'bookwarehouse-1',
  'mysql-1',
] as const;
export type PodName = (typeof POD_NAMES)[number];

/** A stable proxy UUID per pod name. */
function uuidFor(name: string): string {
  let h = 0;
  for (const c of name) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  return `${h.toString(16).padStart(8, '0')}-0000-4000-8000-000000000000`;
}

function meshPod(
  ns: string,
  name: PodName,
  account: string,
  ip: string,
  labels: Record<string, string>,
  apiPort?: number,
): Pod {
  const containerPorts = apiPort === undefined ? [] : [{ name: 'api', containerPort: apiPort }];
  return pod(ns, name, { sa: account, ip, labels, uuid: uuidFor(name), containerPorts });
}

/** The objects of the bookstore mesh, as a registry would put them in the store. */
export function bookstoreObjects(opts: BookstoreOptions = {}): AnyObject[] {
  const v1Port = opts.targetPorts?.v1 ?? 14001;
  const v2Port = opts.targetPorts?.v2 ?? 14001;
  const bookstorePorts: ServicePort[] = [{ name: 'http', port: 14001, targetPort: 'api' }];
  if (opts.tcpSplitPort) bookstorePorts.push({ name: 'tcp-x', ...opts.tcpSplitPort });
  const bookstores = [sa('bookstore-v1', 'bookstore'), sa('bookstore-v2', 'bookstore')];
  const v1 = { app: 'bookstore', version: 'v1' };
  const v2 = { app: 'bookstore', version: 'v2' };
  const services = [
    service('bookstore', 'bookstore', bookstorePorts, { app: 'bookstore' }, '10.96.0.10'),
    service('bookstore', 'bookstore-v1', bookstorePorts, v1, '10.96.0.11'),
    service('bookstore', 'bookstore-v2', bookstorePorts, v2, '10.96.0.12'),
    service(
      'bookwarehouse',
      'bookwarehouse',
      [
        { name: 'grpc-api', port: 14001, targetPort: 14001 },
        { name: 'tcp-db', port: 3306, targetPort: 13306 },
      ],
      { app: 'bookwarehouse' },
      '10.96.0.20',
    ),
    service(
      'bookwarehouse',
      'mysql',
      [{ name: 'tcp-mysql', port: 3306, targetPort: 3306 }],
      { app: 'mysql' },
      'None',
    ),
  ];
  const pods = [
    meshPod('bookbuyer', 'bookbuyer-1', 'bookbuyer', '10.244.0.10', { app: 'bookbuyer' }),
    meshPod('bookthief', 'bookthief-1', 'bookthief', '10.244.0.20', { app: 'bookthief' }),
    meshPod('bookstore', 'bookstore-v1-1', 'bookstore-v1', '10.244.1.10', v1, v1Port),
    meshPod('bookstore', 'bookstore-v1-2', 'bookstore-v1', '10.244.1.11', v1, v1Port),
    meshPod('bookstore', 'bookstore-v2-1', 'bookstore-v2', '10.244.1.20', v2, v2Port),
    meshPod('bookwarehouse', 'bookwarehouse-1', 'bookwarehouse', '10.244.2.10', { app: 'bookwarehouse' }),
    meshPod('bookwarehouse', 'mysql-1', 'mysql', '10.244.2.20', { app: 'mysql' }),
  ];
  return [
    ...['bookbuyer', 'bookthief', 'bookstore', 'bookwarehouse'].map((ns) => namespace(ns, DEFAULT_MESH_NAME)),
    meshConfig(DEFAULT_MESH_NAME, 'skein-system', { traffic: { permissive: opts.permissive ?? false } }),
    ...services,
    ...pods,
    ...deriveEndpointSlices(services, pods),
    httpRouteGroup(
      'bookstore',
      'bookstore-routes',
      opts.bookstoreMatches ?? [MATCH_BOOKS_BOUGHT, MATCH_BUY_A_BOOK],
    ),
    trafficTarget(
      'bookstore',
      'bookstore',
      sa('bookstore-v1'),
      [sa('bookbuyer', 'bookbuyer')],
      [{ kind: 'HTTPRouteGroup', name: 'bookstore-routes' }],
    ),
    trafficSplit('bookstore', 'bookstore-split', 'bookstore', [
      { service: 'bookstore-v1', weight: opts.weights?.v1 ?? 75 },
      { service: 'bookstore-v2', weight: opts.weights?.v2 ?? 25 },
    ]),
    httpRouteGroup('bookwarehouse', 'everything', [{ name: 'everything', pathRegex: '.*', methods: ['*'] }]),
    tcpRoute('bookwarehouse', 'db', [13306]),
    tcpRoute('bookwarehouse', 'mysql', [3306]),
    // One target for the gRPC API, one for the database port (a TCPRoute).
    ...[
      ['bookwarehouse', { kind: 'HTTPRouteGroup', name: 'everything' }] as const,
      ['db', { kind: 'TCPRoute', name: 'db' }] as const,
    ].map(([name, rule]) => trafficTarget('bookwarehouse', name, sa('bookwarehouse'), bookstores, [rule])),
    trafficTarget(
      'bookwarehouse',
      'mysql',
      sa('mysql'),
      [sa('bookwarehouse')],
      [{ kind: 'TCPRoute', name: 'mysql' }],
    ),
  ];
}

/** A store holding the given objects. */
export function storeOf(objects: readonly AnyObject[]): MeshStore {
  const store = new MeshStore();
  for (const o of objects) store.upsert(o);
  return store;
}

/** The policy engine's view of a store, for the default mesh name. */
export function viewOf(store: MeshStore): MeshView {
  return buildMeshView(store, { meshName: DEFAULT_MESH_NAME });
}

/** The bookstore mesh as the real policy engine sees it. */
export function bookstoreMesh(opts: BookstoreOptions = {}): MeshView {
  return viewOf(storeOf(bookstoreObjects(opts)));
}

/** The ProxyContext of a pod's proxy (a sidecar, or a proxyless gRPC workload). */
export function proxyFor(mesh: MeshView, podName: PodName, kind: ProxyKind = 'sidecar'): ProxyContext {
  const p = mesh.podOfProxy(uuidFor(podName));
  if (p?.metadata.name !== podName) throw new Error(`no pod ${podName}`);
  const base = {
    uuid: p.metadata.labels?.[LABEL_PROXY_UUID] ?? '',
    kind,
    serviceAccount: p.spec.serviceAccountName ?? 'default',
    namespace: p.metadata.namespace ?? '',
    trustDomain: mesh.trustDomain,
  };
  return proxyContext({ ...base, cn: proxyCommonName(base) }, mesh);
}

/**
 * A pod's proxy after its namespace left the mesh (the monitored-by label
 * removed), with the view that sees it so: the identity is the one the proxy
 * connected with, the context what skein derives for it now.
 */
export function leftTheMesh(
  podName: PodName,
  kind: ProxyKind = 'sidecar',
  opts: BookstoreOptions = {},
): { mesh: MeshView; proxy: ProxyContext } {
  const identity = proxyFor(bookstoreMesh(opts), podName, kind).identity;
  const objects = bookstoreObjects(opts).map((o) =>
    o.kind === 'Namespace' && o.metadata.name === identity.namespace
      ? { ...o, metadata: { ...o.metadata, labels: {} } }
      : o,
  );
  const mesh = viewOf(storeOf(objects));
  return { mesh, proxy: proxyContext(identity, mesh) };
}

/**
 * The view with some answers replaced (everything else from the real view):
 * for feeding a generator input the engine never produces, or counting calls.
 */
export function overrideView(view: MeshView, overrides: Partial<MeshView>): MeshView {
  return new Proxy(view, {
    get(target, prop) {
      if (Object.hasOwn(overrides, prop)) return Reflect.get(overrides, prop);
      const value = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** The mesh with every source also allowed to call one more service (answers the engine never gives). */
export function alsoCalling(mesh: MeshView, serviceKey: string): MeshView {
  const extra = mesh.service(serviceKey);
  if (!extra) throw new Error(`no service ${serviceKey}`);
  return overrideView(mesh, { outboundServices: (source) => [...mesh.outboundServices(source), extra] });
}

/**
 * The bookstore mesh in every mode the whole-mesh tests cover: SMI,
 * permissive, SMI with a TCP port on the split apex and its backends, and
 * that with bookbuyer also calling mysql (two outbound TCP ports).
 */
export function bookstoreVariants(): [string, MeshView][] {
  const tcpSplit = () => bookstoreMesh({ tcpSplitPort: { port: 9000, targetPort: 9001 } });
  return [
    ['smi', bookstoreMesh()],
    ['permissive', bookstoreMesh({ permissive: true })],
    ['smi+tcp split', tcpSplit()],
    ['smi+two tcp ports', alsoCalling(tcpSplit(), 'bookwarehouse/mysql')],
  ];
}

/**
 * The mesh with the apex split answering these weights as given, zeros
 * included (the policy engine drops them): for generators' own filtering.
 */
export function rawSplit(mesh: MeshView, weights: { v1: number; v2?: number }): MeshView {
  const backend = (name: string, weight: number) => {
    const service = mesh.service(`bookstore/${name}`);
    if (!service) throw new Error(`no service bookstore/${name}`);
    return { service, weight };
  };
  const backends = [backend('bookstore-v1', weights.v1)];
  if (weights.v2 !== undefined) backends.push(backend('bookstore-v2', weights.v2));
  return overrideView(mesh, { split: (key) => (key === 'bookstore/bookstore' ? backends : undefined) });
}

export const FAKE_TRUST_BUNDLE = '-----BEGIN CERTIFICATE-----\nfake-root\n-----END CERTIFICATE-----\n';

/**
 * A SecretSource that has issued certificates for the given identity keys
 * only. Like the certificate manager, it returns the same certificate object
 * for an identity until it changes.
 */
export function fakeSecrets(issued: readonly string[] | 'all'): SecretSource {
  const certs = new Map<string, IssuedCertificate>();
  return {
    trustBundlePem: FAKE_TRUST_BUNDLE,
    serviceCertificate(key: string): IssuedCertificate | undefined {
      if (issued !== 'all' && !issued.includes(key)) return undefined;
      const known = certs.get(key);
      if (known) return known;
      const [ns, sa] = key.split('/');
      const cert: IssuedCertificate = {
        commonName: `${sa}.${ns}.cluster.local`,
        certPem: `-----BEGIN CERTIFICATE-----\ncert-of-${key}\n-----END CERTIFICATE-----\n`,
        keyPem: `-----BEGIN PRIVATE KEY-----\nkey-of-${key}\n-----END PRIVATE KEY-----\n`,
        caPem: FAKE_TRUST_BUNDLE,
        serialNumber: '01',
        notBefore: new Date(0),
        notAfter: new Date(86_400_000),
        uriSans: [`spiffe://cluster.local/ns/${ns}/sa/${sa}`],
        dnsSans: [],
      };
      certs.set(key, cert);
      return cert;
    },
  };
}

/** The generation context over a mesh, with every certificate issued unless told otherwise. */
export function generationContext(
  mesh: MeshView,
  issued: readonly string[] | 'all' = 'all',
): GenerationContext {
  return { mesh, secrets: fakeSecrets(issued) };
}
