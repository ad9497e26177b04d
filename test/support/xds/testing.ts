import * as grpc from '@grpc/grpc-js';
import { proxyContext } from '../../../pkg/catalog/proxies.js';
import type { MeshView, ProxyContext } from '../../../pkg/catalog/types.js';
import { BuiltinCA } from '../../../pkg/certificate/builtin.js';
import type { SecretSource } from '../../../pkg/certificate/types.js';
import { meshGenerators } from '../../../pkg/envoy/generators.js';
import {
  type GenerationContext,
  type ProtoObject,
  type Resource,
  type ResourceGenerator,
  TypeUrl,
} from '../../../pkg/envoy/types.js';
import { silentLogger } from '../../../pkg/logger/logger.js';
import { type ProxyIdentity, proxyCommonName } from '../../../pkg/mesh/identity.js';
import { AdsServer } from '../../../pkg/xds/server/server.js';
import type { AdsServerOptions, ProxyConfigSource } from '../../../pkg/xds/server/types.js';
import { generationContext } from '../envoy/mesh.js';
import { RawDeltaClient } from './delta-test-client.js';
import { RawAdsClient, type RawAdsClientOptions } from './test-client.js';

// Test fixtures for the ADS server: a fake ProxyConfigSource over mutable
// resource tables, certificates from the built-in CA, and client factories.

export const TRUST_DOMAIN = 'cluster.local';

export function cn(uuidTail: number, sa = 'bookbuyer', ns = 'bookbuyer', td = TRUST_DOMAIN): string {
  const uuid = `00000000-0000-4000-8000-${uuidTail.toString().padStart(12, '0')}`;
  return proxyCommonName({ uuid, kind: 'sidecar', serviceAccount: sa, namespace: ns, trustDomain: td });
}

export function cluster(name: string, connectTimeoutSeconds = 1): Resource {
  return {
    name,
    typeUrl: TypeUrl.Cluster,
    // 3 = EDS (the codec wants numeric enums).
    message: {
      name,
      type: 3,
      eds_cluster_config: { eds_config: { ads: {} } },
      connect_timeout: { seconds: connectTimeoutSeconds },
    },
  };
}

export function endpoints(clusterName: string, ip: string): Resource {
  return {
    name: clusterName,
    typeUrl: TypeUrl.ClusterLoadAssignment,
    message: {
      cluster_name: clusterName,
      endpoints: [
        { lb_endpoints: [{ endpoint: { address: { socket_address: { address: ip, port_value: 80 } } } }] },
      ],
    },
  };
}

export function listener(name: string, port: number): Resource {
  return {
    name,
    typeUrl: TypeUrl.Listener,
    message: { name, address: { socket_address: { address: '0.0.0.0', port_value: port } } },
  };
}

export function route(name: string, clusterName: string): Resource {
  const message: ProtoObject = {
    name,
    virtual_hosts: [
      { name: 'all', domains: ['*'], routes: [{ match: { prefix: '/' }, route: { cluster: clusterName } }] },
    ],
  };
  return { name, typeUrl: TypeUrl.RouteConfiguration, message };
}

function unusedMeshView(version: number): MeshView {
  const none = (): never => {
    throw new Error('not used by the fake source');
  };
  return {
    version,
    permissive: true,
    trustDomain: TRUST_DOMAIN,
    services: () => [],
    service: () => undefined,
    serviceByHost: () => undefined,
    endpoints: () => [],
    serviceIdentities: () => [],
    inMesh: () => true,
    podOfProxy: () => undefined,
    servicesOfPod: () => [],
    outboundServices: none,
    split: () => undefined,
    inboundRules: () => [],
  };
}

const secrets: SecretSource = { trustBundlePem: 'bundle', serviceCertificate: () => undefined };

/**
 * A ProxyConfigSource over mutable tables: `set` replaces a type's resources
 * and `push` notifies every stream, like the repeater would.
 */
export class FakeSource implements ProxyConfigSource {
  version = 1;
  readonly tables = new Map<string, Resource[]>();
  readonly connected = new Map<string, ProxyIdentity>();
  readonly disconnected: string[] = [];
  readonly generateCalls = new Map<string, number>();
  private readonly pushers = new Map<string, () => void>();
  /** When set, proxyConnected throws this message. */
  refuse: string | undefined;
  /** When set, generation throws for proxies whose CN is listed. */
  readonly failFor = new Set<string>();
  /** Group key per CN; default: the CN (no sharing). */
  readonly groups = new Map<string, string>();
  readonly generators: Map<string, ResourceGenerator>;

  constructor() {
    this.generators = new Map(
      [TypeUrl.Cluster, TypeUrl.ClusterLoadAssignment, TypeUrl.Listener, TypeUrl.RouteConfiguration].map(
        (typeUrl) => [typeUrl, this.generator(typeUrl)],
      ),
    );
  }

  private generator(typeUrl: TypeUrl): ResourceGenerator {
    return {
      typeUrl,
      generate: (
        proxy: ProxyContext,
        _ctx: GenerationContext,
        requested: ReadonlySet<string> | undefined,
      ) => {
        this.generateCalls.set(typeUrl, (this.generateCalls.get(typeUrl) ?? 0) + 1);
        if (this.failFor.has(proxy.identity.cn))
          throw new Error(`generator exploded for ${proxy.identity.cn}`);
        const all = this.tables.get(typeUrl) ?? [];
        // Return more than requested sometimes: the server must filter.
        return requested === undefined || requested.size > 3 ? all : all.filter((r) => requested.has(r.name));
      },
    };
  }

  set(typeUrl: TypeUrl, resources: Resource[]): void {
    this.tables.set(typeUrl, resources);
    this.version++;
  }

  push(): void {
    for (const p of [...this.pushers.values()]) p();
  }

  proxyConnected(identity: ProxyIdentity, streamId: string): void {
    if (this.refuse !== undefined) throw new Error(this.refuse);
    this.connected.set(streamId, identity);
  }

  proxyDisconnected(streamId: string): void {
    this.disconnected.push(streamId);
    this.connected.delete(streamId);
  }

  proxyContext(identity: ProxyIdentity): ProxyContext {
    return { identity, services: [], groupKey: this.groups.get(identity.cn) ?? identity.cn };
  }

  generationContext(): GenerationContext {
    return { mesh: unusedMeshView(this.version), secrets };
  }

  onPush(streamId: string, push: () => void): () => void {
    this.pushers.set(streamId, push);
    return () => this.pushers.delete(streamId);
  }
}

/**
 * A ProxyConfigSource over a fixed MeshView and the real generators, every
 * certificate issued: what a proxy of that mesh is served, without the
 * controller's push machinery.
 */
export class MeshSource implements ProxyConfigSource {
  readonly generators = meshGenerators();
  private readonly ctx: GenerationContext;
  constructor(private readonly mesh: MeshView) {
    this.ctx = generationContext(mesh);
  }
  proxyConnected(): void {}
  proxyDisconnected(): void {}
  proxyContext(identity: ProxyIdentity): ProxyContext {
    return proxyContext(identity, this.mesh);
  }
  generationContext(): GenerationContext {
    return this.ctx;
  }
  onPush(): () => void {
    return () => {};
  }
}

export interface Fixture<S extends ProxyConfigSource = FakeSource> {
  ca: BuiltinCA;
  otherCa: BuiltinCA;
  server: AdsServer;
  source: S;
  port: number;
  insecurePort?: number;
  /** An mTLS client whose certificate has this CN (from `ca` unless told; valid 1 h unless told). */
  client(commonName: string, issuer?: BuiltinCA, validityMs?: number): Promise<RawAdsClient>;
  insecureClient(): RawAdsClient;
  /** The same as `client`, on the Delta ADS method. */
  deltaClient(commonName: string, issuer?: BuiltinCA): Promise<RawDeltaClient>;
  insecureDeltaClient(): RawDeltaClient;
  close(): Promise<void>;
}

let cas: Promise<[BuiltinCA, BuiltinCA]> | undefined;

/**
 * A test fixture around an AdsServer over a FakeSource (unless `source` is
 * given — for instance a ProxyConfigSource over the real generators).
 */
export async function startFixture<S extends ProxyConfigSource>(
  opts: Partial<AdsServerOptions> & { source: S },
): Promise<Fixture<S>>;
export async function startFixture(opts?: Partial<AdsServerOptions>): Promise<Fixture>;
export async function startFixture(
  opts: Partial<AdsServerOptions> = {},
): Promise<Fixture<ProxyConfigSource>> {
  cas ??= Promise.all([BuiltinCA.create(), BuiltinCA.create({ commonName: 'other-ca' })]);
  const [ca, otherCa] = await cas;
  const serverCert = await ca.issueServerCert(['localhost', '127.0.0.1']);
  const source = opts.source ?? new FakeSource();
  const server = new AdsServer({
    source,
    tls: { caPem: ca.trustBundlePem, certPem: serverCert.certPem, keyPem: serverCert.keyPem },
    trustDomain: TRUST_DOMAIN,
    logger: silentLogger(),
    host: '127.0.0.1',
    port: 0,
    ...opts,
  });
  const { port, insecurePort } = await server.start();
  const clients: { close(): void }[] = [];
  const mtls = async (
    commonName: string,
    issuer: BuiltinCA,
    validityMs = 3_600_000,
  ): Promise<RawAdsClientOptions> => {
    const cert = await issuer.issue({ commonName, validityMs, usage: 'client' });
    return {
      address: `127.0.0.1:${port}`,
      credentials: grpc.credentials.createSsl(
        Buffer.from(ca.trustBundlePem),
        Buffer.from(cert.keyPem),
        Buffer.from(cert.certPem),
      ),
      // Verify the server as "localhost" (a DNS SAN): TLS SNI may not carry an IP address.
      channelOptions: { 'grpc.ssl_target_name_override': 'localhost' },
    };
  };
  const plaintext = (): RawAdsClientOptions => ({
    address: `127.0.0.1:${insecurePort}`,
    credentials: grpc.credentials.createInsecure(),
  });
  const track = <C extends { close(): void }>(c: C): C => {
    clients.push(c);
    return c;
  };
  const fixture: Fixture<ProxyConfigSource> = {
    ca,
    otherCa,
    server,
    source,
    port,
    client: async (commonName, issuer = ca, validityMs) =>
      track(new RawAdsClient(await mtls(commonName, issuer, validityMs))),
    insecureClient: () => track(new RawAdsClient(plaintext())),
    deltaClient: async (commonName, issuer = ca) => track(new RawDeltaClient(await mtls(commonName, issuer))),
    insecureDeltaClient: () => track(new RawDeltaClient(plaintext())),
    close: async () => {
      for (const c of clients) c.close();
      await server.stop();
    },
  };
  if (insecurePort !== undefined) fixture.insecurePort = insecurePort;
  return fixture;
}

/** Polls until `check` holds (for effects that cross the network). */
export async function eventually(check: () => boolean, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}
