// LDS for proxyless gRPC workloads (identity kind 'grpc'), as grpc-js-xds 1.14
// consumes it (@grpc/grpc-js-xds 1.14 and gRFCs A36, A29, A41):
// - client Listeners: one api_listener per `xds:///<host>:<port>` target,
//   routes by RDS;
// - server Listeners: one per port the pod serves, named by the bootstrap
//   template `grpc/server?xds.resource.listening_address=<ip>:<port>`, carrying
//   the SMI policy as an RBAC HTTP filter and mTLS (gRFC A29), plus a chain
//   for an IngressBackend's sources when one names the port
//   (proxyless-ingress.ts).
import type { IngressPort } from '../../catalog/ingress.js';
import { EVERY_SOURCE, type InboundRule, type MeshView, type ProxyContext } from '../../catalog/types.js';
import type { FilterChain, HttpFilter, Listener, TransportSocket, TypedAny } from '../api/envoy.js';
import { IdentityMemo, NONE } from '../common/memo.js';
import { byName } from '../common/outbound.js';
import { AnyType, adsConfigSource, ExtName, socketAddress, typed } from '../common/xds.js';
import {
  PROXYLESS_CERT_PROVIDER,
  proxylessClientListenerName,
  proxylessServerListenerName,
} from '../names.js';
import {
  type ClientTarget,
  isServerListenerName,
  parseServerListenerName,
  resolveClientTarget,
} from '../proxyless/targets.js';
import { httpRbacFilter } from '../rbac/rbac.js';
import type { GenerationContext, Resource, ResourceGenerator } from '../types.js';
import { TypeUrl } from '../types.js';
import { proxylessIngress, proxylessIngressChain } from './proxyless-ingress.js';

// grpc-js-xds requires the router filter last (gRFC A39).
const ROUTER_FILTER: HttpFilter = { name: ExtName.Router, typed_config: typed(AnyType.Router) };

/** A client Listener for one target, answered under the name the client asked for. */
export function proxylessClientListener(target: ClientTarget): Listener {
  return {
    name: target.name,
    api_listener: {
      api_listener: typed(AnyType.HttpConnectionManager, {
        stat_prefix: target.name,
        rds: {
          config_source: adsConfigSource(),
          // One route configuration per service port, shared by every alias.
          route_config_name: proxylessClientListenerName(target.service, target.port.port),
        },
        http_filters: [ROUTER_FILTER],
      }),
    },
  };
}

/**
 * The TLS server side of gRFC A29: certificates from the bootstrap's
 * certificate provider, client certificates required and validated against the
 * same provider's CA, so RBAC sees the caller's SPIFFE id.
 */
function downstreamTls(): TransportSocket {
  const provider = { instance_name: PROXYLESS_CERT_PROVIDER };
  return {
    // grpc-js-xds rejects any other transport socket name on a server Listener.
    name: ExtName.Tls,
    typed_config: typed(AnyType.DownstreamTlsContext, {
      require_client_certificate: { value: true },
      common_tls_context: {
        tls_certificate_provider_instance: provider,
        validation_context: { ca_certificate_provider_instance: provider },
      },
    }),
  };
}

/**
 * A server Listener for one listening address. The mesh chain is always mTLS,
 * for any source; an ingress chain (plaintext or TLS) for an IngressBackend's
 * sources only, whose HCM is named after its protocol, so the grpc-js bug on
 * toggling TLS with byte-identical HCM config (a grpc-js-xds 1.14 Listener
 * comparison bug) cannot arise.
 */
export function proxylessServerListener(
  name: string,
  ip: string,
  port: number,
  rules: readonly InboundRule[],
  trustDomain: string,
  ingress?: IngressPort,
): Listener {
  const hcm: TypedAny<typeof AnyType.HttpConnectionManager> = typed(AnyType.HttpConnectionManager, {
    stat_prefix: `inbound_${port}`,
    // Inline routes: the server only needs non_forwarding_action (grpc-js-xds
    // rejects calls on any other action).
    route_config: {
      name: `inbound_${port}`,
      virtual_hosts: [
        { name: 'inbound', domains: ['*'], routes: [{ match: { prefix: '/' }, non_forwarding_action: {} }] },
      ],
    },
    http_filters: [httpRbacFilter(rules, trustDomain), ROUTER_FILTER],
  });
  const chains: FilterChain[] = [
    {
      name: `inbound_${port}`,
      filters: [{ name: ExtName.HttpConnectionManager, typed_config: hcm }],
      transport_socket: downstreamTls(),
    },
  ];
  // After the mesh chain: grpc-js-xds compares chains by position, so the mesh
  // chain keeps its place when ingress comes and goes.
  const ingressChain = ingress && proxylessIngressChain(port, ingress);
  if (ingressChain) chains.push(ingressChain);
  return {
    name,
    // grpc-js-xds refuses to serve unless this equals the bound IP:port.
    address: socketAddress(ip, port),
    filter_chains: chains,
  };
}

/** Listening addresses an app may bind besides the pod IP. */
function isUnspecified(ip: string): boolean {
  return ip === '0.0.0.0' || ip === '::';
}

function clientListeners(
  proxy: ProxyContext,
  mesh: MeshView,
  requested: ReadonlySet<string> | undefined,
): Resource[] {
  const targets: ClientTarget[] = [];
  const unresolved: string[] = [];
  if (proxy.outsideMesh) {
    // No mesh destination for a workload outside the mesh (docs/design.md).
    for (const name of requested ?? []) if (!isServerListenerName(name)) unresolved.push(name);
  } else if (requested === undefined) {
    for (const service of mesh.services()) {
      for (const port of service.ports) {
        targets.push({ name: proxylessClientListenerName(service, port.port), service, port });
      }
    }
  } else {
    for (const name of requested) {
      const target = resolveClientTarget(mesh, name);
      if (target) targets.push(target);
      else if (!isServerListenerName(name)) unresolved.push(name);
    }
  }
  // In SMI mode too: the destination enforces policy, so a denied call fails
  // with PERMISSION_DENIED instead of UNAVAILABLE.
  const out: Resource[] = targets.map((t) => ({
    name: t.name,
    typeUrl: TypeUrl.Listener,
    message: clientListenerMemo.get([t.service, t.port], t.name, () => proxylessClientListener(t)),
  }));
  const why = proxy.outsideMesh
    ? `namespace ${proxy.identity.namespace} is not in the mesh`
    : 'it is not a service in the mesh';
  for (const name of unresolved)
    out.push({ name, typeUrl: TypeUrl.Listener, message: unresolvedClientListener(name, why) });
  return out;
}

/**
 * What a client target that names no mesh service gets (a typo, a service not
 * created yet, or one whose namespace left the mesh), and every target of a
 * client outside the mesh: a Listener whose only
 * virtual host has no route, so every call fails at once with UNAVAILABLE, and
 * the virtual host's name says why to whoever reads the client's config dump.
 * It is never a removal: grpc-js-xds 1.14 keeps a removed Listener's last
 * content and ignores it when it comes back byte-identical
 * (test/e2e/grpc-xds-readd.test.ts), so a caller of a service that left the
 * mesh and came back would fail until restarted. The real Listener replaces
 * this one, a change grpc-js applies, and the routes and clusters it names are
 * subscribed afresh (the placeholder named none).
 */
export function unresolvedClientListener(name: string, why: string): Listener {
  return {
    name,
    api_listener: {
      api_listener: typed(AnyType.HttpConnectionManager, {
        stat_prefix: name,
        route_config: {
          name: 'skein-unresolved',
          virtual_hosts: [{ name: `skein: no route to ${name}: ${why}`, domains: ['*'], routes: [] }],
        },
        http_filters: [ROUTER_FILTER],
      }),
    },
  };
}

// Listeners memoised on the view answers they are built from (the same
// objects while unchanged, MeshView contract): client listeners on their
// service, server listeners on the inbound rule lists they enforce.
const clientListenerMemo = new IdentityMemo<Listener>();
const serverListenerMemo = new IdentityMemo<Listener>();
const PERMISSIVE_RULES: readonly InboundRule[] = Object.freeze([
  { sources: EVERY_SOURCE, http: 'all', origin: 'permissive' },
]);
const NO_RULES: readonly InboundRule[] = Object.freeze([]);

function serverListeners(
  proxy: ProxyContext,
  mesh: MeshView,
  requested: ReadonlySet<string> | undefined,
): Resource[] {
  const podIP = proxy.podIP;
  if (podIP === undefined) return outsideMeshListeners(requested, mesh.trustDomain);
  // Services backing the same target port share one listener.
  const byTargetPort = new Map<number, (readonly InboundRule[])[]>();
  for (const service of proxy.services) {
    for (const port of service.ports) {
      const list = byTargetPort.get(port.targetPort) ?? [];
      list.push(mesh.inboundRules(service.key, port.port));
      byTargetPort.set(port.targetPort, list);
    }
  }
  const containerPorts = new Set<number>();
  for (const c of proxy.pod?.spec.containers ?? [])
    for (const p of c.ports ?? []) containerPorts.add(p.containerPort);

  const wanted = new Map<string, { ip: string; port: number }>();
  for (const port of byTargetPort.keys())
    wanted.set(proxylessServerListenerName(podIP, port), { ip: podIP, port });
  for (const name of requested ?? []) {
    const addr = parseServerListenerName(name);
    if (!addr || (addr.ip !== podIP && !isUnspecified(addr.ip))) continue;
    if (!byTargetPort.has(addr.port) && !containerPorts.has(addr.port)) continue;
    wanted.set(name, addr);
  }

  const out: Resource[] = [];
  for (const [name, addr] of wanted) {
    // A container port no service exposes: nothing in SMI allows traffic to
    // it (deny all); permissive mode allows every meshed caller.
    const ruleLists = byTargetPort.get(addr.port) ?? [mesh.permissive ? PERMISSIVE_RULES : NO_RULES];
    const ingress = proxylessIngress(mesh, proxy.services, addr.port);
    const key = `${name}|${addr.ip}|${addr.port}|${mesh.trustDomain}`;
    const message = serverListenerMemo.get([...ruleLists, ingress ?? NONE], key, () =>
      proxylessServerListener(name, addr.ip, addr.port, ruleLists.flat(), mesh.trustDomain, ingress),
    );
    out.push({ name, typeUrl: TypeUrl.Listener, message });
  }
  return out;
}

/**
 * The server Listeners of a proxy whose pod is not in the mesh (its namespace
 * left it, or the registry has not seen the pod yet): every requested server
 * name gets a Listener that requires mTLS and allows no caller. It fails
 * closed, and it is never a removal: grpc-js-xds 1.14's XdsServer does not
 * serve again when a removed Listener comes back byte-identical
 * (test/e2e/grpc-xds-readd.test.ts), so a namespace that left and re-joined
 * would stay dark until its processes restarted. When the pod is back its real
 * Listener replaces this one, which grpc-js applies like any change.
 */
function outsideMeshListeners(requested: ReadonlySet<string> | undefined, trustDomain: string): Resource[] {
  const out: Resource[] = [];
  for (const name of requested ?? []) {
    const addr = parseServerListenerName(name);
    if (!addr) continue;
    const key = `${name}|${addr.ip}|${addr.port}|${trustDomain}|outside`;
    const message = serverListenerMemo.get([NO_RULES], key, () =>
      proxylessServerListener(name, addr.ip, addr.port, [], trustDomain),
    );
    out.push({ name, typeUrl: TypeUrl.Listener, message });
  }
  return out;
}

/** LDS for `identity.kind === 'grpc'` proxies. */
export const proxylessListenerGenerator: ResourceGenerator = {
  typeUrl: TypeUrl.Listener,
  generate(
    proxy: ProxyContext,
    ctx: GenerationContext,
    requested: ReadonlySet<string> | undefined,
  ): Resource[] {
    const unique = new Map<string, Resource>();
    for (const r of clientListeners(proxy, ctx.mesh, requested)) unique.set(r.name, r);
    for (const r of serverListeners(proxy, ctx.mesh, requested)) unique.set(r.name, r);
    return byName([...unique.values()]);
  },
};
