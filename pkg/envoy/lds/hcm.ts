// The HTTP connection manager of a listener's filter chain, shared by the
// sidecar's chains (sidecar.ts) and the ingress chains (ingress.ts).
import type { HttpConnectionManager, HttpFilter, Listener$Filter, LocalReplyConfig } from '../api/envoy.js';
import { AnyType, adsConfigSource, ExtName, typed } from '../common/xds.js';

/** How an HCM gets its routes: over RDS, or inline. */
export type HcmRoutes = Pick<HttpConnectionManager, 'rds' | 'route_config'>;

/** Routes from the route config `routeConfig`, over ADS. */
export function rds(routeConfig: string): HcmRoutes {
  return { rds: { route_config_name: routeConfig, config_source: adsConfigSource() } };
}

export function httpConnectionManager(
  statPrefix: string,
  routes: HcmRoutes,
  httpFilters: HttpFilter[],
  extra: { local_reply_config?: LocalReplyConfig } = {},
): Listener$Filter {
  return {
    name: ExtName.HttpConnectionManager,
    typed_config: typed(AnyType.HttpConnectionManager, {
      stat_prefix: statPrefix,
      ...routes,
      // The router must be the last HTTP filter.
      http_filters: [...httpFilters, { name: ExtName.Router, typed_config: typed(AnyType.Router) }],
      ...extra,
    }),
  };
}
