// Benchmark topology: a manifests directory for the controller's local mode
// with N sidecar proxies (one per pod) spread over S services in a handful of
// namespaces, SMI access policy scoping each proxy's config, and a few
// TrafficSplits.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { LABEL_MONITORED_BY, LABEL_PROXY_UUID } from '../../pkg/mesh/constants.js';
import { proxyCommonName, spiffeId } from '../../pkg/mesh/identity.js';

export const BENCH_TRUST_DOMAIN = 'cluster.local';
export const BENCH_MESH = 'skein';
export const SERVICE_PORT = 8080;
export const TARGET_PORT = 8080;

export interface TopologyOptions {
  proxies: number;
  services: number;
  permissive: boolean;
  /** Namespaces the services are spread over (default 10, fewer when there are fewer services). */
  namespaces?: number;
  /** Source identities each TrafficTarget allows (default 3). */
  sourcesPerService?: number;
  /** Share of services that are TrafficSplit apexes (default 5%, at least 1). */
  splitShare?: number;
  /** The first N services' accounts each get an Egress (egressDoc); default 0. */
  egressPolicies?: number;
  /** The first N services each get an IngressBackend (ingressBackendDoc); default 0. */
  ingressBackends?: number;
  /** Services get a clusterIP (serviceClusterIP), as the API server assigns one; default none. */
  clusterIPs?: boolean;
}

export interface BenchService {
  index: number;
  name: string;
  namespace: string;
  /** Each service runs as its own service account of the same name. */
  serviceAccount: string;
  /** Indices of the services whose identities this one admits (SMI mode). */
  sources: number[];
  /** Set when the service is a TrafficSplit apex with `<name>-v1`/`<name>-v2` backends. */
  split: boolean;
}

export interface BenchProxy {
  index: number;
  uuid: string;
  cn: string;
  spiffe: string;
  service: number;
  podIP: string;
}

export interface Topology {
  dir: string;
  namespaces: string[];
  services: BenchService[];
  proxies: BenchProxy[];
  permissive: boolean;
  /** Files in `dir`, by what they hold (the change driver rewrites some). */
  files: { meshConfig: string; split: (svc: BenchService) => string };
}

/** Deterministic v4-shaped UUID for proxy/pod number `n` (the `4`/`8` nibbles keep the form valid). */
export function benchUuid(n: number): string {
  return `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
}

/**
 * A fake pod IP in 10.0.0.0/8 for pod number `n` (only data: nothing dials it; the API
 * server refuses loopback pod IPs in Endpoints). `block` separates the initial pods (0)
 * from ones the changes add (1+).
 */
export function benchIp(n: number, block = 0): string {
  return `10.${10 + block}.${(n >> 8) & 255}.${n & 255}`;
}

function nsName(i: number): string {
  return `bench-${i}`;
}

function svcName(i: number): string {
  return `svc-${i}`;
}

/** Which pod versions a service's pods carry: apexes alternate v1/v2 so each backend has pods. */
export function podVersion(svc: BenchService, ordinal: number): string {
  return svc.split ? `v${(ordinal % 2) + 1}` : 'v1';
}

function yamlDocs(docs: Record<string, unknown>[]): string {
  // JSON is valid YAML; one document per object keeps the files simple to produce.
  return docs.map((d) => JSON.stringify(d)).join('\n---\n') + '\n';
}

/** A unique clusterIP in 10.96.0.0/16 for a service (0), or its split backend v1 (1) or v2 (2). */
export function serviceClusterIP(svc: BenchService, variant: 0 | 1 | 2): string {
  const n = svc.index * 3 + variant + 1;
  return `10.96.${(n >> 8) & 255}.${n & 255}`;
}

export function serviceDoc(
  svc: BenchService,
  name = svc.name,
  version?: string,
  clusterIP?: string,
): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: svc.namespace, labels: { app: name } },
    spec: {
      ...(clusterIP ? { clusterIP } : {}),
      selector: version ? { app: svc.name, version } : { app: svc.name },
      ports: [{ name: 'http', port: SERVICE_PORT, targetPort: 'http', appProtocol: 'http' }],
    },
  };
}

export function podDoc(
  svc: BenchService,
  podName: string,
  uuid: string,
  ip: string,
  version: string,
): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: podName,
      namespace: svc.namespace,
      labels: { app: svc.name, version, [LABEL_PROXY_UUID]: uuid },
    },
    spec: {
      serviceAccountName: svc.serviceAccount,
      containers: [
        { name: 'app', image: 'bench/app:v1', ports: [{ name: 'http', containerPort: TARGET_PORT }] },
      ],
    },
    status: {
      phase: 'Running',
      podIP: ip,
      podIPs: [{ ip }],
      conditions: [{ type: 'Ready', status: 'True' }],
    },
  };
}

export function trafficTargetDoc(
  name: string,
  dest: BenchService,
  sources: readonly BenchService[],
): Record<string, unknown> {
  return {
    apiVersion: 'access.smi-spec.io/v1alpha3',
    kind: 'TrafficTarget',
    metadata: { name, namespace: dest.namespace },
    spec: {
      destination: { kind: 'ServiceAccount', name: dest.serviceAccount, namespace: dest.namespace },
      sources: sources.map((s) => ({
        kind: 'ServiceAccount',
        name: s.serviceAccount,
        namespace: s.namespace,
      })),
      rules: [{ kind: 'HTTPRouteGroup', name: 'all-routes', matches: ['all'] }],
    },
  };
}

export function trafficSplitDoc(apex: BenchService, v1Weight: number): Record<string, unknown> {
  return {
    apiVersion: 'split.smi-spec.io/v1alpha2',
    kind: 'TrafficSplit',
    metadata: { name: `${apex.name}-split`, namespace: apex.namespace },
    spec: {
      service: apex.name,
      backends: [
        { service: `${apex.name}-v1`, weight: v1Weight },
        { service: `${apex.name}-v2`, weight: 100 - v1Weight },
      ],
    },
  };
}

/** An Egress for one source account: its own HTTP host on port 80 and HTTPS host on 443. */
export function egressDoc(svc: BenchService): Record<string, unknown> {
  return {
    apiVersion: 'policy.skein.dev/v1alpha1',
    kind: 'Egress',
    metadata: { name: `${svc.name}-egress`, namespace: svc.namespace },
    spec: {
      sources: [{ kind: 'ServiceAccount', name: svc.serviceAccount, namespace: svc.namespace }],
      hosts: [`${svc.name}.api.example.com`],
      ports: [
        { number: 80, protocol: 'http' },
        { number: 443, protocol: 'https' },
      ],
    },
  };
}

/** An IngressBackend admitting plaintext http from 10.0.0.0/8 (an ingress controller's range) to a service. */
export function ingressBackendDoc(svc: BenchService): Record<string, unknown> {
  return {
    apiVersion: 'policy.skein.dev/v1alpha1',
    kind: 'IngressBackend',
    metadata: { name: `${svc.name}-ingress`, namespace: svc.namespace },
    spec: {
      backends: [{ name: svc.name, port: { number: TARGET_PORT, protocol: 'http' } }],
      sources: [{ kind: 'IPRange', name: '10.0.0.0/8' }],
    },
  };
}

export function meshConfigDoc(permissive: boolean): Record<string, unknown> {
  return {
    apiVersion: 'config.skein.dev/v1alpha1',
    kind: 'MeshConfig',
    metadata: { name: BENCH_MESH, namespace: 'skein-system' },
    spec: {
      traffic: { permissive },
      certificate: { validity: '24h', trustDomain: BENCH_TRUST_DOMAIN },
    },
  };
}

export async function writeManifest(file: string, docs: Record<string, unknown>[]): Promise<void> {
  await writeFile(file, yamlDocs(docs));
}

/** Plans the topology (no I/O). */
export function planTopology(opts: TopologyOptions, dir: string): Topology {
  if (opts.services < 1) throw new Error('at least one service');
  if (opts.proxies < 2 * opts.services)
    throw new Error(`${opts.proxies} proxies cannot give ${opts.services} services 2 pods each`);
  const nsCount = Math.max(1, Math.min(opts.namespaces ?? 10, opts.services));
  const namespaces = Array.from({ length: nsCount }, (_, i) => nsName(i));
  const sourceCount = Math.min(opts.sourcesPerService ?? 3, opts.services - 1);
  const splitEvery = Math.max(1, Math.round(1 / (opts.splitShare ?? 0.05)));
  const services: BenchService[] = Array.from({ length: opts.services }, (_, i) => ({
    index: i,
    name: svcName(i),
    namespace: nsName(i % nsCount),
    serviceAccount: svcName(i),
    // Service i admits the next few services: every identity is a source of as
    // many services as it admits, so each proxy's outbound config is scoped alike.
    sources: Array.from({ length: sourceCount }, (_, k) => (i + k + 1) % opts.services),
    split: i % splitEvery === 0,
  }));
  const proxies: BenchProxy[] = Array.from({ length: opts.proxies }, (_, n) => {
    const service = n % opts.services;
    const svc = services[service];
    if (!svc) throw new Error('unreachable');
    const uuid = benchUuid(n);
    const identity = { namespace: svc.namespace, serviceAccount: svc.serviceAccount };
    return {
      index: n,
      uuid,
      cn: proxyCommonName({ uuid, kind: 'sidecar', ...identity, trustDomain: BENCH_TRUST_DOMAIN }),
      spiffe: spiffeId(identity, BENCH_TRUST_DOMAIN),
      service,
      podIP: benchIp(n),
    };
  });
  return {
    dir,
    namespaces,
    services,
    proxies,
    permissive: opts.permissive,
    files: {
      meshConfig: path.join(dir, 'meshconfig.yaml'),
      split: (svc) => path.join(dir, `split-${svc.name}.yaml`),
    },
  };
}

/** Writes the manifests: one file per service (service, account, pods, its TrafficTarget) plus shared ones. */
export async function writeTopology(opts: TopologyOptions, dir: string): Promise<Topology> {
  const topo = planTopology(opts, dir);
  await mkdir(dir, { recursive: true });
  await writeManifest(path.join(dir, 'namespaces.yaml'), [
    ...topo.namespaces.map((name) => ({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name, labels: { [LABEL_MONITORED_BY]: BENCH_MESH } },
    })),
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'skein-system' } },
  ]);
  // One route group per namespace; every TrafficTarget of the namespace refers to it.
  await writeManifest(
    path.join(dir, 'routes.yaml'),
    topo.namespaces.map((namespace) => ({
      apiVersion: 'specs.smi-spec.io/v1alpha4',
      kind: 'HTTPRouteGroup',
      metadata: { name: 'all-routes', namespace },
      spec: { matches: [{ name: 'all', pathRegex: '.*', methods: ['*'] }] },
    })),
  );
  await writeManifest(topo.files.meshConfig, [meshConfigDoc(opts.permissive)]);
  const podsOf = new Map<number, BenchProxy[]>();
  for (const p of topo.proxies) podsOf.set(p.service, [...(podsOf.get(p.service) ?? []), p]);
  for (const svc of topo.services) {
    const ip = (variant: 0 | 1 | 2) => (opts.clusterIPs ? serviceClusterIP(svc, variant) : undefined);
    const docs: Record<string, unknown>[] = [
      {
        apiVersion: 'v1',
        kind: 'ServiceAccount',
        metadata: { name: svc.serviceAccount, namespace: svc.namespace },
      },
      serviceDoc(svc, svc.name, undefined, ip(0)),
    ];
    if (svc.split)
      docs.push(
        serviceDoc(svc, `${svc.name}-v1`, 'v1', ip(1)),
        serviceDoc(svc, `${svc.name}-v2`, 'v2', ip(2)),
      );
    (podsOf.get(svc.index) ?? []).forEach((p, ordinal) => {
      docs.push(podDoc(svc, `${svc.name}-${ordinal}`, p.uuid, p.podIP, podVersion(svc, ordinal)));
    });
    const sources = svc.sources.map((i) => topo.services[i]).filter((s) => s !== undefined);
    if (sources.length > 0) docs.push(trafficTargetDoc(`${svc.name}-access`, svc, sources));
    if (svc.index < (opts.egressPolicies ?? 0)) docs.push(egressDoc(svc));
    if (svc.index < (opts.ingressBackends ?? 0)) docs.push(ingressBackendDoc(svc));
    await writeManifest(path.join(dir, `${svc.name}.yaml`), docs);
    if (svc.split) await writeManifest(topo.files.split(svc), [trafficSplitDoc(svc, 50)]);
  }
  return topo;
}
