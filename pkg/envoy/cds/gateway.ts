// CDS for skein's ingress gateway: the mesh clusters its routes point at
// (rds/gateway.ts), with the same mTLS as a sidecar's upstream clusters: the
// gateway presents its own identity's certificate and pins the backend's,
// and a Retry naming the gateway as its source puts its budget here too.
import { gatewayPlan, retryTableOf } from '../../catalog/view.js';
import { byName, proxyOutboundPlan } from '../common/outbound.js';
import { tracingClusterOf, tracingSetting } from '../common/tracing.js';
import { TRACING_CLUSTER } from '../names.js';
import { gatewayTarget } from '../rds/gateway.js';
import { type Resource, type ResourceGenerator, TypeUrl } from '../types.js';
import { upstreamClusterOf } from './sidecar.js';

/** Always the full set: CDS is state-of-the-world (xDS rule 7). */
export const gatewayCdsGenerator: ResourceGenerator = {
  typeUrl: TypeUrl.Cluster,
  generate(proxy, ctx): Resource[] {
    if (proxy.identity.kind !== 'gateway') return [];
    const plan = proxyOutboundPlan(ctx.mesh, proxy);
    const retries = retryTableOf(ctx.mesh, proxy.identity);
    const names = new Set<string>();
    for (const h of gatewayPlan(ctx.mesh).hosts)
      for (const r of h.routes) for (const t of gatewayTarget(plan, r)?.targets ?? []) names.add(t.cluster);
    const out: Resource[] = [];
    for (const name of names) {
      const up = plan.clusters.get(name);
      if (!up) continue;
      const message = upstreamClusterOf(ctx.mesh, up, retries.get(up.service.key));
      out.push({ name, typeUrl: TypeUrl.Cluster, message });
    }
    // The collector the HCMs' tracer reports to (common/tracing.ts).
    const tracing = tracingSetting(ctx.mesh);
    if (tracing)
      out.push({ name: TRACING_CLUSTER, typeUrl: TypeUrl.Cluster, message: tracingClusterOf(tracing) });
    return byName(out);
  },
};
