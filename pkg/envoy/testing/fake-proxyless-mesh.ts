// A small hand-written MeshView in the bookstore shape for the proxyless
// generator tests: bookbuyer → bookstore (apex, TrafficSplit over
// bookstore-v1/-v2) on grpc port 14001, SMI rules allowing bookbuyer to buy
// and (with the right header) restock, and a meshed "mallory" no rule allows.
import type {
  Endpoint,
  InboundRule,
  MeshService,
  MeshServicePort,
  MeshView,
  ProxyContext,
  SplitBackend,
} from '../../catalog/types.js';
import type { SecretSource } from '../../certificate/types.js';
import { LABEL_PROXY_UUID } from '../../mesh/constants.js';
import { type Identity, type ProxyIdentity, proxyCommonName } from '../../mesh/identity.js';
import type { HTTPMatch, Pod } from '../../model/objects.js';
import type { GenerationContext } from '../types.js';

export const TRUST_DOMAIN = 'cluster.local';
export const BOOKSTORE_PORT = 14001;

export type Workload = 'bookbuyer' | 'mallory' | 'bookstore-v1' | 'bookstore-v2';
const ALL_WORKLOADS: readonly Workload[] = ['bookbuyer', 'mallory', 'bookstore-v1', 'bookstore-v2'];

interface WorkloadSpec {
  uuid: string;
  namespace: string;
  serviceAccount: string;
  labels: Record<string, string>;
}

export const WORKLOADS: Readonly<Record<Workload, WorkloadSpec>> = {
  bookbuyer: {
    uuid: '11111111-1111-4111-8111-111111111111',
    namespace: 'bookbuyer',
    serviceAccount: 'bookbuyer',
    labels: { app: 'bookbuyer' },
  },
  mallory: {
    uuid: '22222222-2222-4222-8222-222222222222',
    namespace: 'bookbuyer',
    serviceAccount: 'mallory',
    labels: { app: 'mallory' },
  },
  'bookstore-v1': {
    uuid: '33333333-3333-4333-8333-333333333333',
    namespace: 'bookstore',
    serviceAccount: 'bookstore-v1',
    labels: { app: 'bookstore', version: 'v1' },
  },
  'bookstore-v2': {
    uuid: '44444444-4444-4444-8444-444444444444',
    namespace: 'bookstore',
    serviceAccount: 'bookstore-v2',
    labels: { app: 'bookstore', version: 'v2' },
  },
};

/** The HTTPRouteGroup matches the bookstore TrafficTargets allow (gRPC paths). */
export const BOOKSTORE_MATCHES: readonly HTTPMatch[] = [
  { name: 'buy', pathRegex: '/bookstore\\.Bookstore/Buy', methods: ['POST'] },
  {
    name: 'restock',
    pathRegex: '/bookstore\\.Bookstore/Restock',
    methods: ['*'],
    headers: { 'x-role': 'clerk|manager' },
  },
];

export interface FakeMeshOptions {
  permissive?: boolean;
  /** Pod IPs; default distinct 10.x addresses. */
  ips?: Partial<Record<Workload, string>>;
  /** Target port of each bookstore version (the apex uses v1's); default 14001. */
  targetPorts?: { v1?: number; v2?: number };
  /** Split weights of the apex; default 75/25. */
  weights?: { v1: number; v2: number };
}

const DEFAULT_IPS: Record<Workload, string> = {
  bookbuyer: '10.0.0.10',
  mallory: '10.0.0.11',
  'bookstore-v1': '10.0.1.21',
  'bookstore-v2': '10.0.1.22',
};

function grpcPort(targetPort: number): MeshServicePort {
  return { name: 'grpc-bookstore', port: BOOKSTORE_PORT, targetPort, protocol: 'grpc' };
}

function service(namespace: string, name: string, selector: Record<string, string>, port: MeshServicePort) {
  const svc: MeshService = {
    namespace,
    name,
    key: `${namespace}/${name}`,
    fqdn: `${name}.${namespace}.svc.cluster.local`,
    ports: [port],
    selector,
  };
  return svc;
}

export class FakeProxylessMesh implements MeshView {
  readonly version = 1;
  readonly permissive: boolean;
  readonly trustDomain = TRUST_DOMAIN;
  readonly pods: readonly Pod[];
  private readonly all: readonly MeshService[];
  private readonly splits: Map<string, SplitBackend[]>;
  private readonly targetPorts: Record<'v1' | 'v2', number>;

  constructor(private readonly options: FakeMeshOptions = {}) {
    this.permissive = options.permissive ?? false;
    this.targetPorts = {
      v1: options.targetPorts?.v1 ?? BOOKSTORE_PORT,
      v2: options.targetPorts?.v2 ?? BOOKSTORE_PORT,
    };
    const apex = service('bookstore', 'bookstore', { app: 'bookstore' }, grpcPort(this.targetPorts.v1));
    const v1 = service(
      'bookstore',
      'bookstore-v1',
      { app: 'bookstore', version: 'v1' },
      grpcPort(this.targetPorts.v1),
    );
    const v2 = service(
      'bookstore',
      'bookstore-v2',
      { app: 'bookstore', version: 'v2' },
      grpcPort(this.targetPorts.v2),
    );
    this.all = [apex, v1, v2];
    const weights = options.weights ?? { v1: 75, v2: 25 };
    this.splits = new Map([
      [
        apex.key,
        [
          { service: v1, weight: weights.v1 },
          { service: v2, weight: weights.v2 },
        ],
      ],
    ]);
    this.pods = ALL_WORKLOADS.map((w) => this.pod(w));
  }

  ip(w: Workload): string {
    return this.options.ips?.[w] ?? DEFAULT_IPS[w];
  }

  private pod(w: Workload): Pod {
    const spec = WORKLOADS[w];
    const port =
      w === 'bookstore-v1' ? this.targetPorts.v1 : w === 'bookstore-v2' ? this.targetPorts.v2 : undefined;
    return {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: `${w}-0`,
        namespace: spec.namespace,
        labels: { ...spec.labels, [LABEL_PROXY_UUID]: spec.uuid },
      },
      spec: {
        serviceAccountName: spec.serviceAccount,
        containers: [{ name: w, ports: port === undefined ? [] : [{ name: 'grpc', containerPort: port }] }],
      },
      status: { phase: 'Running', podIP: this.ip(w) },
    };
  }

  services(): readonly MeshService[] {
    return this.all;
  }
  service(key: string): MeshService | undefined {
    return this.all.find((s) => s.key === key);
  }
  serviceByHost(host: string): MeshService | undefined {
    return this.all.find((s) =>
      [s.fqdn, `${s.name}.${s.namespace}.svc`, `${s.name}.${s.namespace}`].includes(host),
    );
  }
  private podsOf(svc: MeshService): Pod[] {
    return this.pods.filter((p) =>
      Object.entries(svc.selector).every(([k, v]) => p.metadata.labels?.[k] === v),
    );
  }
  endpoints(serviceKey: string, port: number): readonly Endpoint[] {
    const svc = this.service(serviceKey);
    if (!svc?.ports.some((p) => p.port === port)) return [];
    return this.podsOf(svc)
      .map((p) => ({
        ip: p.status?.podIP ?? '',
        port: p.spec.containers?.[0]?.ports?.[0]?.containerPort ?? port,
        ready: true,
        podName: p.metadata.name,
      }))
      .sort((a, b) => (a.ip < b.ip ? -1 : a.ip > b.ip ? 1 : a.port - b.port));
  }
  serviceIdentities(serviceKey: string): readonly Identity[] {
    const svc = this.service(serviceKey);
    if (!svc) return [];
    return this.podsOf(svc).map((p) => ({
      namespace: p.metadata.namespace ?? '',
      serviceAccount: p.spec.serviceAccountName ?? 'default',
    }));
  }
  podOfProxy(uuid: string): Pod | undefined {
    return this.pods.find((p) => p.metadata.labels?.[LABEL_PROXY_UUID] === uuid);
  }
  servicesOfPod(pod: Pod): readonly MeshService[] {
    return this.all.filter((s) => this.podsOf(s).includes(pod));
  }
  outboundServices(source: Identity): readonly MeshService[] {
    if (this.permissive) return this.all;
    return source.namespace === 'bookbuyer' && source.serviceAccount === 'bookbuyer' ? this.all : [];
  }
  split(apexKey: string): readonly SplitBackend[] | undefined {
    return this.splits.get(apexKey);
  }
  inboundRules(serviceKey: string, port: number): readonly InboundRule[] {
    const svc = this.service(serviceKey);
    if (!svc?.ports.some((p) => p.port === port)) return [];
    if (this.permissive) return [{ sources: 'any', http: 'all', origin: 'permissive' }];
    // One TrafficTarget per destination service account.
    return this.serviceIdentities(serviceKey).map((id) => ({
      sources: [{ namespace: 'bookbuyer', serviceAccount: 'bookbuyer' }],
      http: [...BOOKSTORE_MATCHES],
      origin: `TrafficTarget ${id.namespace}/${id.serviceAccount}`,
    }));
  }
}

export function proxyIdentity(w: Workload): ProxyIdentity {
  const spec = WORKLOADS[w];
  const base = {
    uuid: spec.uuid,
    kind: 'grpc' as const,
    serviceAccount: spec.serviceAccount,
    namespace: spec.namespace,
    trustDomain: TRUST_DOMAIN,
  };
  return { ...base, cn: proxyCommonName(base) };
}

/** The ProxyContext the xDS server would build for a proxyless workload. */
export function proxyContextFor(mesh: MeshView, identity: ProxyIdentity): ProxyContext {
  const pod = mesh.podOfProxy(identity.uuid);
  const podIP = pod?.status?.podIP;
  return {
    identity,
    ...(pod ? { pod } : {}),
    ...(podIP ? { podIP } : {}),
    services: pod ? mesh.servicesOfPod(pod) : [],
    groupKey: `${identity.cn}|${podIP ?? ''}`,
  };
}

const NO_SECRETS: SecretSource = { trustBundlePem: '', serviceCertificate: () => undefined };

export function generationContext(mesh: MeshView): GenerationContext {
  return { mesh, secrets: NO_SECRETS };
}

export function spiffe(w: Workload): string {
  const spec = WORKLOADS[w];
  return `spiffe://${TRUST_DOMAIN}/ns/${spec.namespace}/sa/${spec.serviceAccount}`;
}
