import type { Identity } from '../mesh/identity.js';
import type { HTTPMatch, HTTPRouteGroup, TCPRoute, TrafficTarget } from '../model/objects.js';
import { compareStrings } from './pods.js';
import type { ProblemList } from './problems.js';
import type { InboundRule, MeshServicePort } from './types.js';

/** One TrafficTarget reduced to what the policy engine needs. */
export interface CompiledTarget {
  /** `TrafficTarget <ns>/<name>` */
  origin: string;
  namespace: string;
  /** Destination service account (in `namespace`). */
  destination: string;
  sources: readonly Identity[];
  /** Matches allowed by HTTPRouteGroup rules, on http/grpc ports. */
  http: readonly HTTPMatch[];
  /** Target ports opened by TCPRoute rules: 'all', a set, or undefined (no TCPRoute rule). */
  tcpPorts: 'all' | ReadonlySet<number> | undefined;
}

export interface RouteLookup {
  httpRouteGroup(namespace: string, name: string): HTTPRouteGroup | undefined;
  tcpRoute(namespace: string, name: string): TCPRoute | undefined;
}

/**
 * Compiles TrafficTargets (SMI access v1alpha3, smi-spec `traffic-access-control.md`). A target must live in its
 * destination's namespace (OSM validated this; otherwise a namespace owner
 * could grant access to another namespace's workloads) — others are ignored.
 * Route objects are looked up in the target's namespace; a missing one makes
 * its rule contribute nothing. Every skipped piece is reported.
 */
export function compileTrafficTargets(
  targets: readonly TrafficTarget[],
  routes: RouteLookup,
  problems: ProblemList,
): CompiledTarget[] {
  const out: CompiledTarget[] = [];
  for (const tt of targets) {
    const ns = tt.metadata.namespace ?? '';
    const name = tt.metadata.name;
    const report = (reason: string) => problems.add({ kind: 'TrafficTarget', namespace: ns, name, reason });
    const dest = tt.spec?.destination;
    if (dest?.kind !== 'ServiceAccount') {
      report('destination must be a ServiceAccount; target ignored');
      continue;
    }
    const destNs = dest.namespace ?? ns;
    if (destNs !== ns) {
      report(
        `destination namespace ${destNs} differs from the TrafficTarget namespace ${ns}; target ignored`,
      );
      continue;
    }

    const sources = new Map<string, Identity>();
    for (const s of tt.spec.sources ?? []) {
      if (s.kind !== 'ServiceAccount') {
        report(`source kind ${s.kind} is not supported; source ignored`);
        continue;
      }
      const id = { namespace: s.namespace ?? ns, serviceAccount: s.name };
      sources.set(`${id.namespace}/${id.serviceAccount}`, id);
    }
    if (sources.size === 0) report('no ServiceAccount sources; target allows nobody');

    const http: HTTPMatch[] = [];
    let tcpPorts: 'all' | Set<number> | undefined;
    const rules = tt.spec.rules ?? [];
    if (rules.length === 0) report('no rules; target allows nothing');
    for (const rule of rules) {
      if (rule.kind === 'HTTPRouteGroup') {
        const group = routes.httpRouteGroup(ns, rule.name);
        if (!group) {
          report(`HTTPRouteGroup ${ns}/${rule.name} does not exist; rule ignored`);
          continue;
        }
        const all = group.spec?.matches ?? [];
        if (rule.matches === undefined) {
          // SMI: omitted matches = every match of the group.
          for (const m of all) if (!http.includes(m)) http.push(m);
          continue;
        }
        for (const wanted of rule.matches) {
          const m = all.find((x) => x.name === wanted);
          if (!m) report(`HTTPRouteGroup ${ns}/${rule.name} has no match named ${JSON.stringify(wanted)}`);
          else if (!http.includes(m)) http.push(m);
        }
      } else if (rule.kind === 'TCPRoute') {
        const route = routes.tcpRoute(ns, rule.name);
        if (!route) {
          report(`TCPRoute ${ns}/${rule.name} does not exist; rule ignored`);
          continue;
        }
        const ports = route.spec?.matches?.ports ?? [];
        if (ports.length === 0) tcpPorts = 'all';
        else if (tcpPorts !== 'all') {
          tcpPorts ??= new Set();
          for (const p of ports) tcpPorts.add(p);
        }
      } else {
        report('a rule of unsupported kind was ignored (HTTPRouteGroup and TCPRoute only)');
      }
    }

    out.push({
      origin: `TrafficTarget ${ns}/${name}`,
      namespace: ns,
      destination: dest.name,
      sources: Object.freeze(
        [...sources.entries()].sort(([a], [b]) => compareStrings(a, b)).map(([, id]) => id),
      ),
      http: Object.freeze(http),
      tcpPorts,
    });
  }
  return out.sort((a, b) => compareStrings(a.origin, b.origin));
}

/**
 * The rule one compiled target contributes to one destination port, if any.
 * A TCPRoute opens its ports (matched against the pod's target port, which is
 * where the destination proxy enforces) to any protocol — on an http/grpc port
 * that means every request. HTTPRouteGroup matches apply only to http/grpc
 * ports: a raw TCP port cannot be filtered by path or header.
 */
export function ruleForPort(t: CompiledTarget, port: MeshServicePort): InboundRule | undefined {
  if (t.sources.length === 0) return undefined;
  const tcp = t.tcpPorts === 'all' || t.tcpPorts?.has(port.targetPort) === true;
  if (tcp) return { sources: [...t.sources], http: 'all', origin: t.origin };
  if (port.protocol !== 'tcp' && t.http.length > 0) {
    return { sources: [...t.sources], http: [...t.http], origin: t.origin };
  }
  return undefined;
}
