// The generators a proxyless gRPC workload (`identity.kind === 'grpc'`) is
// served by, keyed by type URL. No SDS: certificates come from the
// workload's own file_watcher provider (gRFC A29), not from the control plane.
import { proxylessClusterGenerator } from '../cds/proxyless.js';
import { edsGenerator } from '../eds/eds.js';
import { proxylessListenerGenerator } from '../lds/proxyless.js';
import { proxylessRouteGenerator } from '../rds/proxyless.js';
import type { ResourceGenerator, TypeUrl } from '../types.js';

export const PROXYLESS_GENERATORS: ReadonlyMap<TypeUrl, ResourceGenerator> = new Map(
  [proxylessClusterGenerator, edsGenerator, proxylessListenerGenerator, proxylessRouteGenerator].map((g) => [
    g.typeUrl,
    g,
  ]),
);
