// UpstreamTrafficSetting `loadBalancer.hashOn` (catalog/hash.ts) as the callers'
// RouteAction `hash_policy`: Envoy computes the request's hash on the route and
// the destination cluster's RING_HASH or MAGLEV balancer picks the endpoint
// from it (RouteAction.hash_policy, route_components.proto; other balancers
// ignore it). Without a hash policy both pick at random.
import type { HashKey } from '../../catalog/hash.js';
import type { UpstreamSetting } from '../../catalog/upstream.js';
import type { RouteAction, RouteAction_HashPolicy } from '../api/envoy.js';
import { durationMs } from './upstream.js';

function hashPolicy(k: HashKey): RouteAction_HashPolicy {
  const p: RouteAction_HashPolicy =
    'header' in k
      ? { header: { header_name: k.header } }
      : 'cookie' in k
        ? {
            cookie: {
              name: k.cookie,
              // With a ttl Envoy sets the cookie on a request that has none ("0": a session cookie).
              ...(k.ttlMs === undefined ? {} : { ttl: durationMs(k.ttlMs) }),
              ...(k.path === undefined ? {} : { path: k.path }),
            },
          }
        : { connection_properties: { source_ip: true } };
  if (k.terminal) p.terminal = true;
  return p;
}

/** The action hashing on the destination's `hashOn` keys (sidecars and the ingress gateway). */
export function withHashPolicy(action: RouteAction, setting: UpstreamSetting | undefined): RouteAction {
  const keys = setting?.loadBalancer?.hashOn;
  if (keys && keys.length > 0) action.hash_policy = keys.map(hashPolicy);
  return action;
}

/**
 * The proxyless form: grpc-js-xds 1.14 (resolver-xds.js) hashes on `header`
 * policies only (and filter_state io.grpc.channel_id), skips `-bin` headers
 * (route-action.js), and hashes only for its RING_HASH balancer, which skein
 * sends for RingHash alone (Maglev stays round robin there).
 */
export function withProxylessHashPolicy(
  action: RouteAction,
  setting: UpstreamSetting | undefined,
): RouteAction {
  if (setting?.loadBalancer?.policy !== 'RingHash') return action;
  const keys = (setting.loadBalancer.hashOn ?? []).filter((k) => 'header' in k && !k.header.endsWith('-bin'));
  if (keys.length > 0) action.hash_policy = keys.map(hashPolicy);
  return action;
}
