// The tcp_proxy network filter of a listener's filter chain, shared by the
// sidecar's chains (sidecar.ts) and the permissive plaintext chains (ingress.ts).
import type { Listener$Filter, TcpProxy } from '../api/envoy.js';
import { AnyType, ExtName, typed } from '../common/xds.js';

/** Where a tcp_proxy sends its connections: one cluster, or weighted clusters. */
export type TcpTarget = Pick<TcpProxy, 'cluster' | 'weighted_clusters'>;

export function tcpProxy(statPrefix: string, target: TcpTarget): Listener$Filter {
  return {
    name: ExtName.TcpProxy,
    typed_config: typed(AnyType.TcpProxy, { stat_prefix: statPrefix, ...target }),
  };
}
