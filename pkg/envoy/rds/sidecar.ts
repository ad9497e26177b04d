// RDS for Envoy sidecars: `rds-outbound.<port>.<svc>` routes what the
// service's outbound chain matched (its clusterIP and port) to its upstream,
// `rds-outbound.<port>` picks among the port's services by Host header for
// headless ones; `rds-inbound.<targetPort>[.<svc>]` forwards to the local app,
// carries the SMI policy for the RBAC filter in front of it (rbac/rbac.ts: on
// the route config, so a change reaches open connections) and the service's
// local rate-limit buckets (common/ratelimit.ts); `rds-ingress.<targetPort>.<protocol>`
// does the same for an ingress chain with the IngressBackends' policy, and
// `rds-inbound-plaintext.<targetPort>` for permissive mode's plaintext chain (ingress.ts).

import type { LocalRateLimits } from '../../catalog/ratelimit.js';
import type { RetryRule } from '../../catalog/retry.js';
import type { InboundRule, MeshService, MeshView, ProxyContext } from '../../catalog/types.js';
import type { UpstreamSetting } from '../../catalog/upstream.js';
import { type RetryTable, retryTableOf, upstreamSettings } from '../../catalog/view.js';
import type { Route, RouteAction, RouteConfiguration, VirtualHost } from '../api/envoy.js';
import { withHashPolicy } from '../common/hash.js';
import {
  type InboundPort,
  inboundPorts,
  inboundRouteConfigOf,
  inboundRulesOf,
  isHttpLike,
  localAppRoute,
  permissivePlaintextPorts,
} from '../common/inbound.js';
import { ingressInputs } from '../common/ingress.js';
import { IdentityMemo, NONE } from '../common/memo.js';
import {
  byName,
  hasClusterIP,
  type OutboundPlan,
  type OutboundPort,
  proxyOutboundPlan,
} from '../common/outbound.js';
import { limitedVirtualHost } from '../common/ratelimit.js';
import { routeRetryPolicy } from '../common/retry.js';
import { durationMs } from '../common/upstream.js';
import { egressRouteConfig, egressRouteConfigName } from '../egress/egress.js';
import { type EgressPlan, egressPlan, NO_EGRESS } from '../egress/plan.js';
import {
  inboundPlaintextRouteConfigName,
  ingressRouteConfigName,
  outboundRouteConfigName,
  outboundServiceRouteConfigName,
} from '../names.js';
import { inboundRbacPerRoute } from '../rbac/rbac.js';
import { type Resource, type ResourceGenerator, TypeUrl } from '../types.js';
import { ingressRouteConfig, plaintextRouteConfig } from './ingress.js';

/**
 * Host names the app may use for a service, each also with `:<port>`. The
 * bare service name resolves (via the DNS search path) only inside its own
 * namespace, and virtual host domains must be unique within a route config,
 * so it is listed only for services in the proxy's namespace.
 */
export function serviceDomains(svc: MeshService, port: number, proxyNamespace: string): string[] {
  const hosts = [`${svc.name}.${svc.namespace}`, `${svc.name}.${svc.namespace}.svc`, svc.fqdn];
  if (svc.namespace === proxyNamespace) hosts.unshift(svc.name);
  const domains: string[] = [];
  for (const h of hosts) domains.push(h, `${h}:${port}`);
  const ip = svc.clusterIP;
  if (ip && ip !== 'None') {
    // An IPv6 literal appears in the Host header in brackets (RFC 3986).
    const host = ip.includes(':') ? `[${ip}]` : ip;
    domains.push(host, `${host}:${port}`);
  }
  return domains;
}

export function routeAction(
  p: { targets: OutboundPort['targets'] } | { cluster: string },
  grpc: boolean,
): RouteAction {
  const action: RouteAction = {};
  if ('cluster' in p) action.cluster = p.cluster;
  else {
    const [only] = p.targets;
    if (p.targets.length === 1 && only && only.weight === undefined) action.cluster = only.cluster;
    // Every cluster carries its weight: a weighted cluster without one counts
    // as 0 for grpc-js (grpc-js-xds 1.14 reads a missing weight as 0); zero weights never get here.
    else
      action.weighted_clusters = {
        clusters: p.targets.map((t) => ({ name: t.cluster, weight: { value: t.weight ?? 0 } })),
      };
  }
  // gRPC streams outlive Envoy's 15 s default route timeout: 0 disables it.
  if (grpc) action.timeout = { seconds: 0 };
  return action;
}

function catchAllRoute(action: RouteAction): Route {
  return { match: { prefix: '/' }, route: action };
}

/** The action with the destination's UpstreamTrafficSetting requestTimeout (0 = none), if it sets one. */
export function withRequestTimeout(action: RouteAction, setting: UpstreamSetting | undefined): RouteAction {
  // Envoy answers 504 (response flag UT) when the whole request outlives route.timeout.
  if (setting?.requestTimeoutMs !== undefined) action.timeout = durationMs(setting.requestTimeoutMs);
  return action;
}

/** The virtual host of one outbound service port: its upstream (or split backends), setting and Retry. */
function outboundVirtualHost(
  p: OutboundPort,
  domains: string[],
  retry: RetryRule | undefined,
  setting: UpstreamSetting | undefined,
): VirtualHost {
  // A split apex's host is the apex's: its setting (not the backends') times and hashes the request.
  const action = withHashPolicy(
    withRequestTimeout(routeAction(p, p.port.protocol === 'grpc'), setting),
    setting,
  );
  // A Retry names the service the app calls (a split apex included).
  if (retry) action.retry_policy = routeRetryPolicy(retry);
  return { name: p.service.key, domains, routes: [catchAllRoute(action)] };
}

function outboundRouteConfig(
  name: string,
  ports: readonly OutboundPort[],
  proxyNamespace: string,
  retries: RetryTable,
  settings: ReadonlyMap<string, UpstreamSetting>,
): RouteConfiguration {
  return {
    name,
    virtual_hosts: ports.map((p) =>
      outboundVirtualHost(
        p,
        serviceDomains(p.service, p.port.port, proxyNamespace),
        retries.get(p.service.key),
        settings.get(p.service.key),
      ),
    ),
  };
}

/**
 * One service port's own route config. Its chain already matched the
 * service's clusterIP and port, so every Host goes to it (`*`): the name the
 * app used for the address does not matter, as without a mesh. Nothing in it
 * depends on the caller but its Retry, so callers share it.
 */
function outboundServiceRouteConfig(
  name: string,
  p: OutboundPort,
  retry: RetryRule | undefined,
  setting: UpstreamSetting | undefined,
): RouteConfiguration {
  return { name, virtual_hosts: [outboundVirtualHost(p, ['*'], retry, setting)] };
}

/** What an outbound route action is built from besides the service: its targets and weights. */
function targetsKey(p: OutboundPort): string {
  return p.targets.map((t) => `${t.cluster}=${t.weight ?? ''}`).join(',');
}

/**
 * Every service port on this target port is served by the same app on
 * 127.0.0.1:<targetPort>, so one catch-all route to the first one's local
 * cluster serves them all. The route config is the filter chain's own (one per
 * service when services share the target port), so its virtual host carries
 * that service's RBAC policy: the inbound rules of every service port behind it.
 */
function inboundRouteConfig(
  name: string,
  port: InboundPort,
  limits: LocalRateLimits | undefined,
  rules: readonly InboundRule[],
  trustDomain: string,
): RouteConfiguration {
  const prefix = `inbound_${port.service.key}_${port.port.targetPort}`;
  const vhost = limitedVirtualHost(
    `inbound|${port.port.targetPort}`,
    prefix,
    () => localAppRoute(port),
    limits,
  );
  vhost.typed_per_filter_config = {
    ...vhost.typed_per_filter_config,
    ...inboundRbacPerRoute(rules, trustDomain),
  };
  return { name, virtual_hosts: [vhost] };
}

// Route configs memoised on what they are built from (the same objects while
// unchanged, MeshView contract): the headless ports' outbound ones on the plan
// plus the proxy's namespace (bare service names), a service's own on the
// service, port, Retry, setting and targets (shared by every caller), inbound
// ones on the service served, its inbound rules and its rate limits.
const outboundConfigs = new IdentityMemo<RouteConfiguration>();
const outboundServiceConfigs = new IdentityMemo<RouteConfiguration>();
const inboundConfigs = new IdentityMemo<RouteConfiguration>();
const egressConfigs = new IdentityMemo<RouteConfiguration>();
const ingressConfigs = new IdentityMemo<RouteConfiguration>();
const plaintextConfigs = new IdentityMemo<RouteConfiguration>();

/** Route config name → builder, without building anything yet. */
function routeConfigBuilders(
  mesh: MeshView,
  proxy: ProxyContext,
  plan: OutboundPlan,
  egress: EgressPlan,
  retries: RetryTable,
  settings: ReadonlyMap<string, UpstreamSetting>,
): Map<string, () => RouteConfiguration> {
  const builders = new Map<string, () => RouteConfiguration>();
  const outboundByPort = new Map<number, OutboundPort[]>();
  const headlessPorts = new Set<number>();
  for (const p of plan.ports) {
    if (!isHttpLike(p.port)) continue;
    const list = outboundByPort.get(p.port.port);
    if (list) list.push(p);
    else outboundByPort.set(p.port.port, [p]);
    if (!hasClusterIP(p.service)) {
      headlessPorts.add(p.port.port);
      continue;
    }
    const name = outboundServiceRouteConfigName(p.port.port, p.service);
    const retry = retries.get(p.service.key);
    const setting = settings.get(p.service.key);
    builders.set(name, () =>
      outboundServiceConfigs.get(
        [p.service, p.port, retry ?? NONE, setting ?? NONE],
        `${name}|${targetsKey(p)}`,
        () => outboundServiceRouteConfig(name, p, retry, setting),
      ),
    );
  }
  // A port with headless services keeps the Host-routed config of all its
  // services for their port-only chain (lds/sidecar.ts), as before.
  for (const [port, ports] of outboundByPort) {
    if (!headlessPorts.has(port)) continue;
    const name = outboundRouteConfigName(port);
    const ns = proxy.identity.namespace;
    builders.set(name, () =>
      // The retry table and the settings map are the same objects while unchanged.
      outboundConfigs.get([plan, retries, settings], `${name}|${ns}`, () =>
        outboundRouteConfig(name, ports, ns, retries, settings),
      ),
    );
  }
  const ports = inboundPorts(proxy);
  for (const p of ports) {
    if (!isHttpLike(p.port)) continue;
    const name = inboundRouteConfigOf(p);
    // The service's own UpstreamTrafficSetting: its rate limits (the same object while unchanged).
    const limits = settings.get(p.service.key)?.rateLimit;
    // The inbound rules of each service port behind it (the same objects while unchanged).
    const rules = p.servicePorts.map((port) => mesh.inboundRules(p.service.key, port));
    // p.port is one of p.service's ports; the name carries its target port (and service when shared).
    const key = `${name}|${p.port.port}|${mesh.trustDomain}`;
    builders.set(name, () =>
      inboundConfigs.get([p.service, limits ?? NONE, ...rules], key, () =>
        inboundRouteConfig(name, p, limits, inboundRulesOf(mesh, p), mesh.trustDomain),
      ),
    );
  }
  // Permissive mode's plaintext chains (lds/ingress.ts): the app and the service's limits.
  if (mesh.permissive)
    for (const p of permissivePlaintextPorts(ports)) {
      if (!isHttpLike(p.port)) continue;
      const name = inboundPlaintextRouteConfigName(p.port.targetPort);
      const limits = settings.get(p.service.key)?.rateLimit;
      builders.set(name, () =>
        plaintextConfigs.get([p.service, limits ?? NONE], `${name}|${p.port.port}`, () =>
          plaintextRouteConfig(name, p, limits),
        ),
      );
    }
  // Ingress chains' route configs: on the IngressBackend answer (the same object
  // while unchanged), the service and its rate limits.
  for (const input of ingressInputs(mesh, ports)) {
    const { port: p, ingress } = input;
    const name = ingressRouteConfigName(p.port.targetPort, ingress.protocol);
    const limits = settings.get(p.service.key)?.rateLimit;
    builders.set(name, () =>
      ingressConfigs.get([ingress, p.service, limits ?? NONE], `${name}|${p.port.port}`, () =>
        ingressRouteConfig(name, input, limits),
      ),
    );
  }
  // Egress HTTP ports (SMI mode): keyed on the interned plan, shared by every
  // identity with the same Egress rules.
  egress.http.forEach((p, i) => {
    const name = egressRouteConfigName(p.port);
    builders.set(name, () => egressConfigs.get([egress], `${i}`, () => egressRouteConfig(p)));
  });
  return builders;
}

/** Builds the requested route configs (all of them when `requested` is undefined). */
export const sidecarRdsGenerator: ResourceGenerator = {
  typeUrl: TypeUrl.RouteConfiguration,
  generate(proxy, ctx, requested): Resource[] {
    if (proxy.identity.kind !== 'sidecar') return [];
    const passthrough = ctx.mesh.permissive || proxy.outsideMesh === true;
    const egress = passthrough ? NO_EGRESS : egressPlan(ctx.mesh, proxy.identity);
    const builders = routeConfigBuilders(
      ctx.mesh,
      proxy,
      proxyOutboundPlan(ctx.mesh, proxy),
      egress.passthrough ? NO_EGRESS : egress,
      retryTableOf(ctx.mesh, proxy.identity),
      upstreamSettings(ctx.mesh),
    );
    const out: Resource[] = [];
    for (const [name, build] of builders) {
      if (requested && !requested.has(name)) continue;
      out.push({ name, typeUrl: TypeUrl.RouteConfiguration, message: build() });
    }
    return byName(out);
  },
};
