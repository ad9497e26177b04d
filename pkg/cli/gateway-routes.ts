// `skein ingress routes` as a pure function of a MeshView: what skein's
// ingress gateway serves (catalog/gateway.ts), and per route whether the
// gateway's identity may call the backend (the same outbound plan its RDS
// uses: a route it may not call answers 403).

import type { MeshView } from '../catalog/types.js';
import { gatewayPlan, policyProblems } from '../catalog/view.js';
import { outboundPlan } from '../envoy/common/outbound.js';
import { gatewayTarget } from '../envoy/rds/gateway.js';
import type { Identity } from '../mesh/identity.js';
import { formatTable } from './table.js';

/** The chart's gateway ServiceAccount (charts/skein/templates/ingress-gateway.yaml). */
export const GATEWAY_SERVICE_ACCOUNT = 'skein-ingress-gateway';

export interface GatewayRouteRow {
  host: string;
  /** `Exact /x`, `Prefix /x` or `*` (every path). */
  path: string;
  /** `<ns>/<svc>:<port>` */
  backend: string;
  /** Where traffic goes: the backend's cluster(s) with weights, or why it is refused. */
  target: string;
  tls: string;
  ingress: string;
}

export interface GatewayRoutes {
  gateway: string;
  permissive: boolean;
  routes: GatewayRouteRow[];
  problems: string[];
}

export function gatewayRoutes(view: MeshView, gateway: Identity): GatewayRoutes {
  const plan = gatewayPlan(view);
  const outbound = outboundPlan(view, gateway);
  const routes: GatewayRouteRow[] = [];
  for (const h of plan.hosts)
    for (const r of h.routes) {
      const t = gatewayTarget(outbound, r);
      routes.push({
        host: h.host,
        path: r.path ? `${r.path.type} ${r.path.value}` : '*',
        backend: `${r.service.key}:${r.port.port}`,
        target: t
          ? t.targets
              .map((x) => (x.weight === undefined ? x.cluster : `${x.cluster} (${x.weight})`))
              .join(', ')
          : 'refused (403): no TrafficTarget allows the gateway',
        tls: h.tlsSecret ?? '-',
        ingress: r.origin.replace(/^Ingress /, ''),
      });
    }
  const origins = new Set(plan.ingresses.map((o) => o.replace(/^Ingress /, '')));
  const problems = policyProblems(view)
    .filter((p) => p.kind === 'Ingress' && origins.has(`${p.namespace}/${p.name}`))
    .map((p) => `Ingress ${p.namespace}/${p.name}: ${p.reason}`);
  return {
    gateway: `${gateway.namespace}/${gateway.serviceAccount}`,
    permissive: view.permissive,
    routes,
    problems,
  };
}

export function gatewayRoutesText(r: GatewayRoutes): string {
  if (r.routes.length === 0 && r.problems.length === 0)
    return 'No Ingress of class skein in the mesh (spec.ingressClassName: skein).\n';
  const lines = [
    `Ingress gateway ${r.gateway} (${r.permissive ? 'permissive mode' : 'SMI mode: TrafficTargets decide'})`,
    '',
    formatTable(
      ['HOST', 'PATH', 'BACKEND', 'TARGET', 'TLS SECRET', 'INGRESS'],
      r.routes.map((x) => [x.host, x.path, x.backend, x.target, x.tls, x.ingress]),
    ).trimEnd(),
  ];
  if (r.problems.length > 0) lines.push('', 'Problems:', ...r.problems.map((p) => `  ${p}`));
  return `${lines.join('\n')}\n`;
}
