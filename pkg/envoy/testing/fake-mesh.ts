// Test helper: a hand-written MeshView with the shape of OSM's bookstore demo,
// so generator tests do not depend on the real policy engine.
//
//   bookbuyer ──▶ bookstore (apex, split 75/25) ──▶ bookstore-v1 | bookstore-v2
//   bookstore-v1/v2 ──▶ bookwarehouse (grpc 14001, tcp 3306→13306) ──▶ mysql (headless, tcp 3306)
//   bookthief: allowed nothing in SMI mode.
//
// bookbuyer's outbound services deliberately list the apex and bookstore-v1
// but not bookstore-v2, which it reaches only through the split.
import type {
  Endpoint,
  InboundRule,
  MeshService,
  MeshServicePort,
  MeshView,
  ProxyContext,
  SplitBackend,
} from '../../catalog/types.js';
import type { IssuedCertificate, SecretSource } from '../../certificate/types.js';
import { LABEL_PROXY_UUID } from '../../mesh/constants.js';
import { type Identity, identityKey, proxyCommonName } from '../../mesh/identity.js';
import type { HTTPMatch, Pod } from '../../model/objects.js';

export interface FakeMeshSpec {
  permissive: boolean;
  trustDomain: string;
  services: MeshService[];
  pods: Pod[];
  /** SMI mode: service keys each identity key may call. */
  outbound: Record<string, string[]>;
  /** SMI mode: rules by `<svcKey>|<port>`. */
  inbound: Record<string, InboundRule[]>;
  splits: Record<string, { service: string; weight: number }[]>;
}

const PERMISSIVE_RULE: InboundRule = { sources: 'any', http: 'all', origin: 'permissive' };

/** A MeshView over a FakeMeshSpec; endpoints come from pods matching each selector. */
export class FakeMesh implements MeshView {
  readonly version = 1;
  readonly permissive: boolean;
  readonly trustDomain: string;
  private readonly byKey = new Map<string, MeshService>();
  /** Counts outboundServices calls, to prove generators share the memoised plan. */
  outboundCalls = 0;

  constructor(readonly spec: FakeMeshSpec) {
    this.permissive = spec.permissive;
    this.trustDomain = spec.trustDomain;
    for (const s of spec.services) this.byKey.set(s.key, s);
  }

  services(): readonly MeshService[] {
    return [...this.spec.services].sort((a, b) => (a.key < b.key ? -1 : 1));
  }
  service(key: string): MeshService | undefined {
    return this.byKey.get(key);
  }
  serviceByHost(host: string): MeshService | undefined {
    const [name, ns] = host.split('.');
    return ns === undefined ? undefined : this.byKey.get(`${ns}/${name}`);
  }
  private podsOf(svc: MeshService): Pod[] {
    return this.spec.pods.filter(
      (p) =>
        p.metadata.namespace === svc.namespace &&
        Object.entries(svc.selector).every(([k, v]) => p.metadata.labels?.[k] === v),
    );
  }
  endpoints(serviceKey: string, port: number): readonly Endpoint[] {
    const svc = this.byKey.get(serviceKey);
    const sp = svc?.ports.find((p) => p.port === port);
    if (!svc || !sp) return [];
    return this.podsOf(svc)
      .map((p) => ({
        ip: p.status?.podIP ?? '',
        port: sp.targetPort,
        ready: p.status?.phase === 'Running',
        podName: p.metadata.name,
      }))
      .sort((a, b) => (a.ip < b.ip ? -1 : 1));
  }
  serviceIdentities(serviceKey: string): readonly Identity[] {
    const svc = this.byKey.get(serviceKey);
    if (!svc) return [];
    const seen = new Map<string, Identity>();
    for (const p of this.podsOf(svc)) {
      const id = { namespace: svc.namespace, serviceAccount: p.spec.serviceAccountName ?? 'default' };
      seen.set(identityKey(id), id);
    }
    return [...seen.values()];
  }
  podOfProxy(uuid: string): Pod | undefined {
    return this.spec.pods.find((p) => p.metadata.labels?.[LABEL_PROXY_UUID] === uuid);
  }
  servicesOfPod(pod: Pod): readonly MeshService[] {
    return this.services().filter((s) => this.podsOf(s).includes(pod));
  }
  outboundServices(source: Identity): readonly MeshService[] {
    this.outboundCalls++;
    if (this.permissive) return this.services();
    const keys = this.spec.outbound[identityKey(source)] ?? [];
    return keys.map((k) => this.byKey.get(k)).filter((s): s is MeshService => s !== undefined);
  }
  split(apexKey: string): readonly SplitBackend[] | undefined {
    const backends = this.spec.splits[apexKey];
    if (!backends) return undefined;
    const out: SplitBackend[] = [];
    for (const b of backends) {
      const service = this.byKey.get(`${apexKey.split('/')[0]}/${b.service}`);
      if (service) out.push({ service, weight: b.weight });
    }
    return out;
  }
  inboundRules(serviceKey: string, port: number): readonly InboundRule[] {
    if (this.permissive) return [PERMISSIVE_RULE];
    return this.spec.inbound[`${serviceKey}|${port}`] ?? [];
  }
}

function service(
  namespace: string,
  name: string,
  clusterIP: string | undefined,
  selector: Record<string, string>,
  ports: MeshServicePort[],
): MeshService {
  const s: MeshService = {
    namespace,
    name,
    key: `${namespace}/${name}`,
    fqdn: `${name}.${namespace}.svc.cluster.local`,
    ports,
    selector,
  };
  if (clusterIP) s.clusterIP = clusterIP;
  return s;
}

function pod(namespace: string, name: string, sa: string, ip: string, labels: Record<string, string>): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels: { ...labels, [LABEL_PROXY_UUID]: uuidFor(name) } },
    spec: { serviceAccountName: sa },
    status: { phase: 'Running', podIP: ip },
  };
}

/** A stable fake proxy UUID per pod name. */
function uuidFor(name: string): string {
  let h = 0;
  for (const c of name) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  return `${h.toString(16).padStart(8, '0')}-0000-4000-8000-000000000000`;
}

export const ID = {
  bookbuyer: { namespace: 'bookbuyer', serviceAccount: 'bookbuyer' },
  bookthief: { namespace: 'bookthief', serviceAccount: 'bookthief' },
  bookstoreV1: { namespace: 'bookstore', serviceAccount: 'bookstore-v1' },
  bookstoreV2: { namespace: 'bookstore', serviceAccount: 'bookstore-v2' },
  bookwarehouse: { namespace: 'bookwarehouse', serviceAccount: 'bookwarehouse' },
  mysql: { namespace: 'bookwarehouse', serviceAccount: 'mysql' },
} as const satisfies Record<string, Identity>;

export const MATCH_BOOKS_BOUGHT: HTTPMatch = {
  name: 'books-bought',
  pathRegex: '/books-bought',
  methods: ['GET'],
  headers: { 'user-agent': '.*-http-client/*.*', 'client-app': 'bookbuyer' },
};
export const MATCH_BUY_A_BOOK: HTTPMatch = {
  name: 'buy-a-book',
  pathRegex: '.*a-book.*new',
  methods: ['GET', 'POST'],
};
export const MATCH_EVERYTHING: HTTPMatch = { name: 'everything', pathRegex: '.*', methods: ['*'] };

/** The bookstore demo; `permissive` flips to permissive traffic policy. */
export function bookstoreMesh(opts: { permissive?: boolean } = {}): FakeMesh {
  const http14001: MeshServicePort = { name: 'http', port: 14001, targetPort: 14001, protocol: 'http' };
  const bookstoreRule: InboundRule = {
    sources: [ID.bookbuyer],
    http: [MATCH_BOOKS_BOUGHT, MATCH_BUY_A_BOOK],
    origin: 'TrafficTarget bookstore/bookstore',
  };
  const warehouseRule: InboundRule = {
    sources: [ID.bookstoreV1, ID.bookstoreV2],
    http: [MATCH_EVERYTHING],
    origin: 'TrafficTarget bookwarehouse/bookwarehouse',
  };
  const warehouseTcpRule: InboundRule = {
    ...warehouseRule,
    http: 'all',
    origin: 'TrafficTarget bookwarehouse/db',
  };
  return new FakeMesh({
    permissive: opts.permissive ?? false,
    trustDomain: 'cluster.local',
    services: [
      service('bookstore', 'bookstore', '10.96.0.10', { app: 'bookstore' }, [http14001]),
      service('bookstore', 'bookstore-v1', '10.96.0.11', { app: 'bookstore', version: 'v1' }, [http14001]),
      service('bookstore', 'bookstore-v2', '10.96.0.12', { app: 'bookstore', version: 'v2' }, [http14001]),
      service('bookwarehouse', 'bookwarehouse', '10.96.0.20', { app: 'bookwarehouse' }, [
        { name: 'grpc-api', port: 14001, targetPort: 14001, protocol: 'grpc' },
        { name: 'tcp-db', port: 3306, targetPort: 13306, protocol: 'tcp' },
      ]),
      service('bookwarehouse', 'mysql', undefined, { app: 'mysql' }, [
        { name: 'tcp-mysql', port: 3306, targetPort: 3306, protocol: 'tcp' },
      ]),
    ],
    pods: [
      pod('bookbuyer', 'bookbuyer-1', 'bookbuyer', '10.244.0.10', { app: 'bookbuyer' }),
      pod('bookthief', 'bookthief-1', 'bookthief', '10.244.0.20', { app: 'bookthief' }),
      pod('bookstore', 'bookstore-v1-1', 'bookstore-v1', '10.244.1.10', { app: 'bookstore', version: 'v1' }),
      pod('bookstore', 'bookstore-v1-2', 'bookstore-v1', '10.244.1.11', { app: 'bookstore', version: 'v1' }),
      pod('bookstore', 'bookstore-v2-1', 'bookstore-v2', '10.244.1.20', { app: 'bookstore', version: 'v2' }),
      pod('bookwarehouse', 'bookwarehouse-1', 'bookwarehouse', '10.244.2.10', { app: 'bookwarehouse' }),
      pod('bookwarehouse', 'mysql-1', 'mysql', '10.244.2.20', { app: 'mysql' }),
    ],
    outbound: {
      'bookbuyer/bookbuyer': ['bookstore/bookstore', 'bookstore/bookstore-v1'],
      'bookstore/bookstore-v1': ['bookwarehouse/bookwarehouse'],
      'bookstore/bookstore-v2': ['bookwarehouse/bookwarehouse'],
      'bookwarehouse/bookwarehouse': ['bookwarehouse/mysql'],
    },
    inbound: {
      'bookstore/bookstore|14001': [bookstoreRule],
      'bookstore/bookstore-v1|14001': [bookstoreRule],
      'bookstore/bookstore-v2|14001': [bookstoreRule],
      'bookwarehouse/bookwarehouse|14001': [warehouseRule],
      'bookwarehouse/bookwarehouse|3306': [warehouseTcpRule],
      'bookwarehouse/mysql|3306': [
        { sources: [ID.bookwarehouse], http: 'all', origin: 'TrafficTarget bookwarehouse/mysql' },
      ],
    },
    splits: {
      'bookstore/bookstore': [
        { service: 'bookstore-v1', weight: 75 },
        { service: 'bookstore-v2', weight: 25 },
      ],
    },
  });
}

/** The sidecar ProxyContext of a pod in the fake mesh. */
export function sidecarProxy(mesh: FakeMesh, podName: string): ProxyContext {
  const p = mesh.spec.pods.find((x) => x.metadata.name === podName);
  if (!p) throw new Error(`no pod ${podName}`);
  const uuid = p.metadata.labels?.[LABEL_PROXY_UUID] ?? '';
  const base = {
    uuid,
    kind: 'sidecar' as const,
    serviceAccount: p.spec.serviceAccountName ?? 'default',
    namespace: p.metadata.namespace ?? 'default',
    trustDomain: mesh.trustDomain,
  };
  const services = mesh.servicesOfPod(p);
  const ctx: ProxyContext = {
    identity: { ...base, cn: proxyCommonName(base) },
    pod: p,
    services,
    groupKey: `sidecar|${identityKey(base)}|${services.map((s) => s.key).join(',')}`,
  };
  if (p.status?.podIP) ctx.podIP = p.status.podIP;
  return ctx;
}

export const FAKE_TRUST_BUNDLE = '-----BEGIN CERTIFICATE-----\nfake-root\n-----END CERTIFICATE-----\n';

/** A SecretSource that has issued certificates for the given identity keys only. */
export function fakeSecrets(issued: readonly string[] | 'all'): SecretSource {
  return {
    trustBundlePem: FAKE_TRUST_BUNDLE,
    serviceCertificate(key: string): IssuedCertificate | undefined {
      if (issued !== 'all' && !issued.includes(key)) return undefined;
      const [ns, sa] = key.split('/');
      return {
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
    },
  };
}
