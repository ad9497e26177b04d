import {
  PORT_INBOUND_LISTENER,
  PORT_OUTBOUND_LISTENER,
  PORT_PROMETHEUS_LISTENER,
} from '../mesh/constants.js';
import { PORT_ENVOY_READINESS, PROXY_UID } from './constants.js';
import type { Exclusions } from './exclusions.js';

export const CHAIN_INBOUND = 'SKEIN_PROXY_INBOUND';
export const CHAIN_IN_REDIRECT = 'SKEIN_PROXY_IN_REDIRECT';
export const CHAIN_OUTBOUND = 'SKEIN_PROXY_OUTBOUND';
export const CHAIN_REDIRECT = 'SKEIN_PROXY_REDIRECT';

export interface IptablesOptions {
  exclusions: Exclusions;
  /**
   * Inbound ports the proxy itself serves to callers outside the mesh
   * (Prometheus, kubelet's rewritten probes); never redirected.
   */
  proxyServedPorts: readonly number[];
}

/**
 * The `iptables-restore` input (nat table) the init container applies in the
 * pod's network namespace. It replaces the whole nat table (no --noflush), so
 * re-running it is idempotent. Only TCP is intercepted; UDP (DNS) passes.
 */
export function renderIptablesRules(o: IptablesOptions): string {
  const inboundReturns = [...new Set([...o.proxyServedPorts, ...o.exclusions.inboundPorts])];
  const inclusions = o.exclusions.outboundIpRangeInclusions ?? [];
  const lines = [
    '*nat',
    ':PREROUTING ACCEPT [0:0]',
    ':INPUT ACCEPT [0:0]',
    ':OUTPUT ACCEPT [0:0]',
    ':POSTROUTING ACCEPT [0:0]',
    `:${CHAIN_INBOUND} - [0:0]`,
    `:${CHAIN_IN_REDIRECT} - [0:0]`,
    `:${CHAIN_OUTBOUND} - [0:0]`,
    `:${CHAIN_REDIRECT} - [0:0]`,
    '# Inbound: TCP arriving at the pod goes to the inbound listener, except the ports the proxy serves itself.',
    // 15001 and 15003 are deliberately not excluded: a direct connection to the
    // outbound listener from outside would make it an open relay, so it too lands
    // on the inbound listener (mTLS, policy). Admin 15000 binds 127.0.0.1 only.
    `-A PREROUTING -p tcp -j ${CHAIN_INBOUND}`,
    ...inboundReturns.map((p) => `-A ${CHAIN_INBOUND} -p tcp --dport ${p} -j RETURN`),
    `-A ${CHAIN_INBOUND} -p tcp -j ${CHAIN_IN_REDIRECT}`,
    `-A ${CHAIN_IN_REDIRECT} -p tcp -j REDIRECT --to-ports ${PORT_INBOUND_LISTENER}`,
    inclusions.length > 0
      ? `# Outbound: TCP the app opens to ${inclusions.join(', ')} goes to the outbound listener, the rest leaves as is.`
      : '# Outbound: TCP the app opens goes to the outbound listener.',
    `-A OUTPUT -p tcp -j ${CHAIN_OUTBOUND}`,
    // The proxy calling a service backed by this very pod leaves over lo to the
    // pod IP: send it through the inbound listener so mTLS and policy still apply.
    // (The proxy reaches its local app on 127.0.0.1, which this does not match.)
    `-A ${CHAIN_OUTBOUND} -o lo ! -d 127.0.0.1/32 -m owner --uid-owner ${PROXY_UID} -j ${CHAIN_IN_REDIRECT}`,
    // Everything else the proxy sends (upstreams, ADS to the controller) leaves as is.
    `-A ${CHAIN_OUTBOUND} -m owner --uid-owner ${PROXY_UID} -j RETURN`,
    // The app talking to itself bypasses the proxy: 127.0.0.0/8 and its own pod IP
    // both route via lo, and so do the proxy's own ports (admin lives on 127.0.0.1).
    `-A ${CHAIN_OUTBOUND} -o lo -j RETURN`,
    // Exclusions RETURN before anything redirects, so they win over an inclusion list, the
    // order OSM v1.2 renders them in (openservicemesh/osm pkg/injector/iptables.go).
    ...o.exclusions.outboundPorts.map((p) => `-A ${CHAIN_OUTBOUND} -p tcp --dport ${p} -j RETURN`),
    ...o.exclusions.outboundIpRanges.map((r) => `-A ${CHAIN_OUTBOUND} -d ${r} -j RETURN`),
    // An inclusion list sends only its ranges to the proxy; the rest falls off the
    // chain (an implicit RETURN) and leaves unchanged. Without one, all of it goes.
    ...(inclusions.length > 0
      ? inclusions.map((r) => `-A ${CHAIN_OUTBOUND} -p tcp -d ${r} -j ${CHAIN_REDIRECT}`)
      : [`-A ${CHAIN_OUTBOUND} -p tcp -j ${CHAIN_REDIRECT}`]),
    `-A ${CHAIN_REDIRECT} -p tcp -j REDIRECT --to-ports ${PORT_OUTBOUND_LISTENER}`,
    'COMMIT',
    '',
  ];
  return lines.join('\n');
}

/**
 * Ports served by the proxy to non-mesh callers, excluded from inbound
 * redirection: Prometheus, the app probes' ports in use, and Envoy's own
 * readiness port when kubelet probes the Envoy container (native layout).
 */
export function defaultProxyServedPorts(probePorts: readonly number[], envoyReadiness = false): number[] {
  return [PORT_PROMETHEUS_LISTENER, ...(envoyReadiness ? [PORT_ENVOY_READINESS] : []), ...probePorts];
}
