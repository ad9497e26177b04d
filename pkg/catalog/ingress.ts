// Ingress into the mesh: what a backend's sidecar admits from outside the
// mesh. Two inputs, each narrowing the other:
// - IngressBackend (policy.skein.dev/v1alpha1, OSM v1.2's fields): who may
//   connect to a backend port (source IPs, client-certificate principals) and
//   how (plaintext http, or https with the backend's certificate); its
//   spec.matches (HTTPRouteGroups) restrict the requests.
// - Kubernetes Ingress (networking.k8s.io/v1): the hosts and paths routed to
//   a backend port; when any Ingress names that port, only those are admitted.
// An Ingress alone opens nothing: the controller cannot tell an ingress
// controller's traffic from anyone else's without an IngressBackend naming
// its source (SMI mode stays deny-by-default).
import type {
  HTTPMatch,
  HTTPRouteGroup,
  Ingress,
  IngressBackend,
  IngressBackendRef,
} from '../model/objects.js';
import { isGatewayIngress } from './gateway.js';
import { compareStrings } from './pods.js';
import type { PolicyProblem, ProblemList } from './problems.js';
import type { MeshService, MeshServicePort } from './types.js';

/** One host/path an Ingress routes to a backend port. */
export interface IngressRoute {
  /** Exact host, or `*.example.com` (one DNS label, Kubernetes Ingress rules); undefined = any host. */
  host?: string;
  /**
   * Exact: the path itself. Prefix: element-wise on `/` (`/foo` matches
   * `/foo`, `/foo/`, `/foo/bar`, never `/foobar`), with a trailing slash
   * ignored. undefined = any path (`/` Prefix, or a defaultBackend).
   */
  path?: { type: 'Exact' | 'Prefix'; value: string };
}

/**
 * Whether a request's host (the Host header without its port; undefined when
 * unknown) and path satisfy a route, by the semantics above — the same ones
 * rbac/ingress.ts writes as Envoy RBAC. A route naming a host admits no
 * request of unknown host.
 */
export function routeAdmits(route: IngressRoute, host: string | undefined, path: string): boolean {
  if (route.host !== undefined) {
    if (host === undefined) return false;
    const h = host.toLowerCase();
    if (route.host.startsWith('*.')) {
      // One DNS label in front of the suffix.
      const suffix = route.host.slice(1);
      if (!h.endsWith(suffix) || /[.:]/.test(h.slice(0, -suffix.length)) || h.length === suffix.length)
        return false;
    } else if (h !== route.host) return false;
  }
  const p = route.path;
  if (p?.type === 'Exact') return path === p.value;
  if (p?.type === 'Prefix') return path === p.value || path.startsWith(`${p.value}/`);
  return true;
}

/** What one IngressBackend admits on one backend port. */
export interface IngressPolicy {
  /** `IngressBackend <ns>/<name>` */
  origin: string;
  /**
   * Where the connections come from, as the IngressBackend names them (its
   * Service and IPRange sources; namespace defaulted), each with the prefixes
   * it resolved to: for the web view and CLI, which show sources by name.
   */
  from: readonly IngressFrom[];
  /** Allowed source prefixes (Service endpoint IPs as host routes, IPRanges as given). */
  cidrs: readonly string[];
  /** SANs of client certificates allowed (https with validation only); empty = any the CA issued. */
  principals: readonly string[];
  /** TLS SNI values allowed (https), empty = any. */
  sniHosts: readonly string[];
  /** The HTTPRouteGroup matches admitted, or 'all' (no spec.matches). */
  matches: readonly HTTPMatch[] | 'all';
}

/** One address source of an IngressBackend and the prefixes it resolved to (none: unresolved, reported). */
export interface IngressFrom {
  kind: 'Service' | 'IPRange';
  /** `<ns>/<name>` for a Service, the CIDR for an IPRange. */
  name: string;
  cidrs: readonly string[];
}

/** Everything the backend's sidecar needs for one (service, targetPort). */
export interface IngressPort {
  protocol: 'http' | 'https';
  skipClientCertValidation: boolean;
  /** The union of the policies' cidrs, sorted (the filter chain's source_prefix_ranges). */
  cidrs: readonly string[];
  policies: readonly IngressPolicy[];
  /** Routes of the Ingresses naming this port, or 'all' when none does. */
  routes: readonly IngressRoute[] | 'all';
  /** `Ingress <ns>/<name>` objects behind `routes`, sorted. */
  ingresses: readonly string[];
}

/** A view's ingress answers by `<ns>/<svc>|<targetPort>`, and the problems compiling them found. */
export interface IngressTable {
  readonly ports: ReadonlyMap<string, IngressPort>;
  readonly problems: readonly PolicyProblem[];
}

/**
 * A compiled table with everything it was compiled from, so a later view
 * whose inputs are the same objects takes the table as it is (catalog/view.ts).
 */
export interface IngressCompilation {
  readonly ingresses: readonly Ingress[];
  readonly backends: readonly IngressBackend[];
  readonly permissive: boolean;
  /** Each lookup made while compiling, by a one-letter kind and its key, with its answer. */
  readonly reads: ReadonlyMap<string, unknown>;
  readonly table: IngressTable;
}

export interface IngressInputs {
  /** Ingresses and IngressBackends of monitored namespaces. */
  ingresses: readonly Ingress[];
  backends: readonly IngressBackend[];
  service(key: string): MeshService | undefined;
  httpRouteGroup(namespace: string, name: string): HTTPRouteGroup | undefined;
  /** Every endpoint address of a Service the mesh sees, or undefined when it sees no such Service. */
  sourceAddresses(namespace: string, name: string): readonly string[] | undefined;
  /** Permissive mode: every source gets in anyway, so an Ingress without IngressBackend is no problem. */
  permissive: boolean;
}

/** `<ns>/<svc>|<targetPort>` */
export function ingressPortKey(serviceKey: string, targetPort: number): string {
  return `${serviceKey}|${targetPort}`;
}

function hostRoute(address: string): string {
  return address.includes(':') ? `${address}/128` : `${address}/32`;
}

/** Kubernetes path semantics as IngressRoute paths; ImplementationSpecific is read as Prefix (documented). */
export function ingressPath(pathType: string, path: string | undefined): IngressRoute['path'] {
  const value = path === undefined || path === '' ? '/' : path;
  if (pathType === 'Exact') return { type: 'Exact', value };
  // Prefix: a trailing slash is ignored ("/foo/" matches "/foo"), and "/" is every path.
  const trimmed = value.replace(/\/+$/, '');
  return trimmed === '' ? undefined : { type: 'Prefix', value: trimmed };
}

function servicePortOf(svc: MeshService, ref: IngressBackendRef['service']): MeshServicePort | undefined {
  const port = ref?.port;
  if (port?.number !== undefined) return svc.ports.find((p) => p.port === port.number);
  if (port?.name !== undefined) return svc.ports.find((p) => p.name === port.name);
  // Without a port, a single-port Service is unambiguous.
  return svc.ports.length === 1 ? svc.ports[0] : undefined;
}

/** Compiles both kinds into per-port answers; every piece skipped is reported. */
export function compileIngress(inputs: IngressInputs, problems: ProblemList): Map<string, IngressPort> {
  const routes = new Map<string, { routes: IngressRoute[]; all: boolean; origins: Set<string> }>();
  const ingressRefs = new Map<string, { ns: string; name: string; backend: string }[]>();
  const sorted = <T extends { metadata: { namespace?: string; name: string } }>(xs: readonly T[]) =>
    [...xs].sort((a, b) =>
      compareStrings(
        `${a.metadata.namespace}/${a.metadata.name}`,
        `${b.metadata.namespace}/${b.metadata.name}`,
      ),
    );

  // skein's own gateway is a mesh caller (gateway.ts): its Ingresses open nothing here.
  for (const ing of sorted(inputs.ingresses.filter((i) => !isGatewayIngress(i)))) {
    const ns = ing.metadata.namespace ?? '';
    const name = ing.metadata.name;
    const origin = `Ingress ${ns}/${name}`;
    const add = (ref: IngressBackendRef, route: IngressRoute, all: boolean) => {
      const svcName = ref.service?.name;
      if (svcName === undefined) return; // a resource backend: not a Service, nothing to admit
      const svc = inputs.service(`${ns}/${svcName}`);
      if (!svc) return; // not a meshed Service: none of the mesh's business
      const sp = servicePortOf(svc, ref.service);
      if (!sp) {
        problems.add({
          kind: 'Ingress',
          namespace: ns,
          name,
          reason: `backend ${svcName}: the Service has no such port; ignored`,
        });
        return;
      }
      const key = ingressPortKey(svc.key, sp.targetPort);
      let entry = routes.get(key);
      if (!entry) {
        entry = { routes: [], all: false, origins: new Set() };
        routes.set(key, entry);
      }
      entry.origins.add(origin);
      if (all) entry.all = true;
      else if (!entry.routes.some((r) => JSON.stringify(r) === JSON.stringify(route)))
        entry.routes.push(route);
      const refs = ingressRefs.get(key) ?? [];
      if (!refs.some((r) => r.ns === ns && r.name === name)) refs.push({ ns, name, backend: svcName });
      ingressRefs.set(key, refs);
    };
    if (ing.spec.defaultBackend) add(ing.spec.defaultBackend, {}, true);
    for (const rule of ing.spec.rules ?? []) {
      for (const p of rule.http?.paths ?? []) {
        const path = ingressPath(p.pathType, p.path);
        const route: IngressRoute = {};
        if (rule.host) route.host = rule.host.toLowerCase();
        if (path) route.path = path;
        add(p.backend, route, route.host === undefined && route.path === undefined);
      }
    }
  }

  const ports = new Map<
    string,
    { protocol: 'http' | 'https'; skip: boolean; owner: string; policies: IngressPolicy[] }
  >();
  for (const ib of sorted(inputs.backends)) {
    const ns = ib.metadata.namespace ?? '';
    const name = ib.metadata.name;
    const origin = `IngressBackend ${ns}/${name}`;
    const report = (reason: string) => problems.add({ kind: 'IngressBackend', namespace: ns, name, reason });

    const cidrs = new Set<string>();
    const principals: string[] = [];
    const from: IngressFrom[] = [];
    for (const s of ib.spec.sources) {
      if (s.kind === 'IPRange') {
        const cidr = s.name.includes('/') ? s.name : hostRoute(s.name);
        cidrs.add(cidr);
        from.push({ kind: 'IPRange', name: cidr, cidrs: [cidr] });
      } else if (s.kind === 'AuthenticatedPrincipal') principals.push(s.name);
      else {
        const sns = s.namespace ?? ns;
        const addresses = inputs.sourceAddresses(sns, s.name);
        if (addresses === undefined)
          report(
            `source Service ${sns}/${s.name} is not in a monitored namespace (or does not exist): add its namespace to the mesh with injection disabled, or use an IPRange`,
          );
        else if (addresses.length === 0) report(`source Service ${sns}/${s.name} has no endpoints yet`);
        const resolved = (addresses ?? []).map(hostRoute);
        for (const c of resolved) cidrs.add(c);
        from.push({ kind: 'Service', name: `${sns}/${s.name}`, cidrs: resolved });
      }
    }
    let matches: HTTPMatch[] | 'all' = 'all';
    if (ib.spec.matches !== undefined) {
      matches = [];
      for (const ref of ib.spec.matches) {
        const group = inputs.httpRouteGroup(ns, ref.name);
        if (!group) {
          report(`HTTPRouteGroup ${ns}/${ref.name} does not exist; it admits nothing`);
          continue;
        }
        for (const m of group.spec.matches ?? []) {
          if (ref.matches === undefined || ref.matches.includes(m.name)) matches.push(m);
        }
        // A name the group lacks admits nothing (never more than asked): say so.
        for (const name of ref.matches ?? [])
          if (!(group.spec.matches ?? []).some((m) => m.name === name))
            report(
              `HTTPRouteGroup ${ns}/${ref.name} has no match named ${JSON.stringify(name)}; it admits nothing`,
            );
      }
    }
    if (cidrs.size === 0) report('no source address resolved yet; it admits nobody');

    for (const b of ib.spec.backends) {
      const svc = inputs.service(`${ns}/${b.name}`);
      if (!svc) {
        report(`backend Service ${ns}/${b.name} does not exist; backend ignored`);
        continue;
      }
      const sp = svc.ports.find((p) => p.targetPort === b.port.number);
      if (!sp) {
        report(`backend ${b.name}: no port of the Service targets port ${b.port.number}; backend ignored`);
        continue;
      }
      const key = ingressPortKey(svc.key, b.port.number);
      const skip = b.tls?.skipClientCertValidation === true;
      const policy: IngressPolicy = {
        origin,
        from,
        cidrs: [...cidrs].sort(compareStrings),
        principals: [...principals].sort(compareStrings),
        sniHosts: [...(b.tls?.sniHosts ?? [])].sort(compareStrings),
        matches,
      };
      const known = ports.get(key);
      if (!known) ports.set(key, { protocol: b.port.protocol, skip, owner: origin, policies: [policy] });
      else if (known.protocol !== b.port.protocol || known.skip !== skip)
        // One filter chain per port and transport: its TLS settings cannot differ per source.
        report(
          `backend ${b.name} port ${b.port.number}: conflicts with ${known.owner} (${known.protocol}${known.skip ? ', skipClientCertValidation' : ''}); backend ignored`,
        );
      else known.policies.push(policy);
    }
  }

  const out = new Map<string, IngressPort>();
  for (const [key, p] of ports) {
    const r = routes.get(key);
    const all = new Set<string>();
    for (const pol of p.policies) for (const c of pol.cidrs) all.add(c);
    out.set(key, {
      protocol: p.protocol,
      skipClientCertValidation: p.skip,
      cidrs: [...all].sort(compareStrings),
      policies: p.policies,
      routes: !r || r.all ? 'all' : r.routes,
      ingresses: r ? [...r.origins].sort(compareStrings) : [],
    });
  }
  if (!inputs.permissive) {
    for (const [key, refs] of ingressRefs) {
      if (out.has(key)) continue;
      for (const ref of refs)
        problems.add({
          kind: 'Ingress',
          namespace: ref.ns,
          name: ref.name,
          reason: `backend ${ref.backend} port ${key.slice(key.lastIndexOf('|') + 1)}: no IngressBackend admits a source, so its sidecar refuses ingress traffic (SMI mode)`,
        });
    }
  }
  return out;
}
