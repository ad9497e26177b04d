// skein's ingress gateway: the hosts, paths and TLS of the Ingresses of class
// `skein` (networking.k8s.io/v1), compiled into what the gateway's Envoy
// serves. The gateway calls backends as a mesh identity over mTLS, so these
// Ingresses are not IngressBackend input (ingress.ts): SMI TrafficTargets
// govern the gateway like any other caller.
import { ANNOTATION_INGRESS_CLASS, INGRESS_CLASS } from '../mesh/constants.js';
import type { Ingress, IngressBackendRef } from '../model/objects.js';
import { type IngressRoute, ingressPath } from './ingress.js';
import { compareStrings } from './pods.js';
import type { ProblemList } from './problems.js';
import type { MeshService, MeshServicePort } from './types.js';

/** Served by skein's gateway: `spec.ingressClassName`, else the legacy annotation (Kubernetes Ingress docs). */
export function isGatewayIngress(ing: Ingress): boolean {
  const cls = ing.spec.ingressClassName ?? ing.metadata.annotations?.[ANNOTATION_INGRESS_CLASS];
  return cls === INGRESS_CLASS;
}

/** One path of one host, routed to a service port. */
export interface GatewayRoute {
  /** undefined = every path (`/` Prefix, or a defaultBackend). */
  path?: NonNullable<IngressRoute['path']>;
  service: MeshService;
  port: MeshServicePort;
  /** `Ingress <ns>/<name>` */
  origin: string;
}

/** A virtual host of the gateway. */
export interface GatewayHost {
  /** Lower-case exact host, `*.example.com` (exactly one DNS label), or `*` (any host). */
  host: string;
  /** Most specific first (what Envoy's first-match order needs, below). */
  routes: readonly GatewayRoute[];
  /** `<ns>/<secret>` of the kubernetes.io/tls Secret presented for this host, if any. */
  tlsSecret?: string;
}

export interface GatewayPlan {
  /** Sorted by host, `*` last. */
  hosts: readonly GatewayHost[];
  /** TLS Secrets `<ns>/<name>` and the hosts (SNI) each serves, sorted. */
  tls: readonly { secret: string; hosts: readonly string[] }[];
  /** `Ingress <ns>/<name>` of class skein, sorted. */
  ingresses: readonly string[];
}

export interface GatewayInputs {
  ingresses: readonly Ingress[];
  service(key: string): MeshService | undefined;
}

/**
 * Kubernetes Ingress precedence (the Ingress API's "multiple matches"):
 * the longest path wins, Exact over Prefix at the same length; a route for
 * every path comes last.
 */
function moreSpecificFirst(a: GatewayRoute, b: GatewayRoute): number {
  if (!a.path || !b.path) return (a.path ? 0 : 1) - (b.path ? 0 : 1);
  if (a.path.value.length !== b.path.value.length) return b.path.value.length - a.path.value.length;
  if (a.path.type !== b.path.type) return a.path.type === 'Exact' ? -1 : 1;
  return compareStrings(a.path.value, b.path.value);
}

function routeKey(path: GatewayRoute['path']): string {
  return path ? `${path.type} ${path.value}` : 'all';
}

function servicePort(svc: MeshService, ref: IngressBackendRef['service']): MeshServicePort | undefined {
  const port = ref?.port;
  if (port?.number !== undefined) return svc.ports.find((p) => p.port === port.number);
  if (port?.name !== undefined) return svc.ports.find((p) => p.name === port.name);
  return svc.ports.length === 1 ? svc.ports[0] : undefined;
}

const HOST = /^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * The gateway's routes from every Ingress of class skein in the mesh. On a
 * conflict (the same host and path in two Ingresses, or two TLS Secrets for
 * one host) the first Ingress by namespace/name wins and the other is
 * reported, never silently dropped.
 */
export function compileGateway(inputs: GatewayInputs, problems: ProblemList): GatewayPlan {
  const hosts = new Map<string, { routes: Map<string, GatewayRoute>; tlsSecret?: string }>();
  const tlsHosts = new Map<string, Set<string>>();
  const ingresses: string[] = [];
  const sorted = inputs.ingresses
    .filter(isGatewayIngress)
    .sort((a, b) =>
      compareStrings(
        `${a.metadata.namespace}/${a.metadata.name}`,
        `${b.metadata.namespace}/${b.metadata.name}`,
      ),
    );
  for (const ing of sorted) {
    const ns = ing.metadata.namespace ?? '';
    const name = ing.metadata.name;
    const origin = `Ingress ${ns}/${name}`;
    ingresses.push(origin);
    const report = (reason: string) => problems.add({ kind: 'Ingress', namespace: ns, name, reason });
    const hostOf = (raw: string | undefined): string | undefined => {
      if (raw === undefined || raw === '') return '*';
      const h = raw.toLowerCase();
      if (HOST.test(h)) return h;
      report(`host ${JSON.stringify(raw)} is not a DNS name or *.<domain>; its rule is ignored`);
      return undefined;
    };
    const add = (host: string, path: GatewayRoute['path'], ref: IngressBackendRef) => {
      const svcName = ref.service?.name;
      if (svcName === undefined) {
        report('a resource backend is not a Service: skein cannot route to it; ignored');
        return;
      }
      const svc = inputs.service(`${ns}/${svcName}`);
      if (!svc) {
        report(
          `backend Service ${ns}/${svcName} is not in the mesh (or does not exist); its path is ignored`,
        );
        return;
      }
      const port = servicePort(svc, ref.service);
      if (!port) {
        report(`backend ${svcName}: the Service has no such port; its path is ignored`);
        return;
      }
      let entry = hosts.get(host);
      if (!entry) {
        entry = { routes: new Map() };
        hosts.set(host, entry);
      }
      const key = routeKey(path);
      const existing = entry.routes.get(key);
      if (existing) {
        if (existing.origin !== origin || existing.service !== svc || existing.port !== port)
          report(
            `host ${host} path ${key} is already routed by ${existing.origin} to ${existing.service.key}:${existing.port.port}; this one is ignored`,
          );
        return;
      }
      const route: GatewayRoute = { service: svc, port, origin };
      if (path) route.path = path;
      entry.routes.set(key, route);
    };
    const ruleHosts = new Set<string>();
    for (const rule of ing.spec.rules ?? []) {
      const host = hostOf(rule.host);
      if (host === undefined) continue;
      ruleHosts.add(host);
      for (const p of rule.http?.paths ?? []) add(host, ingressPath(p.pathType, p.path), p.backend);
    }
    // The Ingress API: the default backend takes requests no rule matches.
    if (ing.spec.defaultBackend) add('*', undefined, ing.spec.defaultBackend);
    for (const t of ing.spec.tls ?? []) {
      if (!t.secretName) {
        report('a tls entry without secretName: nothing to present; ignored');
        continue;
      }
      const secret = `${ns}/${t.secretName}`;
      // No hosts: the hosts of the Ingress's own rules.
      const names = t.hosts?.length ? t.hosts.map(hostOf) : [...ruleHosts];
      for (const h of names) {
        if (h === undefined) continue;
        if (h === '*') {
          report(`tls secret ${t.secretName}: a host is needed to choose a certificate by SNI; ignored`);
          continue;
        }
        let entry = hosts.get(h);
        if (!entry) {
          entry = { routes: new Map() };
          hosts.set(h, entry);
        }
        if (entry.tlsSecret !== undefined && entry.tlsSecret !== secret) {
          report(
            `host ${h} already presents Secret ${entry.tlsSecret}; tls secret ${t.secretName} is ignored for it`,
          );
          continue;
        }
        entry.tlsSecret = secret;
        const set = tlsHosts.get(secret) ?? new Set<string>();
        set.add(h);
        tlsHosts.set(secret, set);
      }
    }
  }
  const out: GatewayHost[] = [];
  for (const [host, e] of hosts) {
    const h: GatewayHost = { host, routes: [...e.routes.values()].sort(moreSpecificFirst) };
    if (e.tlsSecret !== undefined) h.tlsSecret = e.tlsSecret;
    out.push(h);
  }
  out.sort((a, b) => (a.host === '*' ? 1 : b.host === '*' ? -1 : compareStrings(a.host, b.host)));
  const tls = [...tlsHosts]
    .map(([secret, hs]) => ({ secret, hosts: [...hs].sort(compareStrings) }))
    .sort((a, b) => compareStrings(a.secret, b.secret));
  return { hosts: out, tls, ingresses };
}
