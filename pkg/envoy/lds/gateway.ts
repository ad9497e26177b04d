// LDS for skein's ingress gateway: a plaintext listener on 8080 and, when an
// Ingress of class skein has TLS, a TLS listener on 8443 with one filter
// chain per Secret chosen by SNI (tls_inspector). Both are edge listeners:
// the client's address is the connection's (use_remote_address), never a
// forwarded header the client wrote.
import { gatewayPlan } from '../../catalog/view.js';
import { PORT_GATEWAY_HTTP, PORT_GATEWAY_HTTPS } from '../../mesh/constants.js';
import type { Listener, Listener$Filter } from '../api/envoy.js';
import { accessLogSetting, withAccessLogs } from '../common/access-log.js';
import { servableTls } from '../common/gateway.js';
import { localReplyBody } from '../common/local-reply.js';
import { IdentityMemo } from '../common/memo.js';
import { tracingServiceName, tracingSetting, withTracing } from '../common/tracing.js';
import { AnyType, adsConfigSource, ExtName, socketAddress, typed } from '../common/xds.js';
import { GATEWAY_HTTP, GATEWAY_HTTPS, ingressTlsSecretName } from '../names.js';
import { type Resource, type ResourceGenerator, TypeUrl } from '../types.js';

const NOT_ROUTED_REPLY = localReplyBody(
  404,
  'skein ingress gateway: no Ingress of class skein routes %REQ(:authority)%%REQ(:path)%\n',
);

function httpConnectionManager(name: string): Listener$Filter {
  return {
    name: ExtName.HttpConnectionManager,
    typed_config: typed(AnyType.HttpConnectionManager, {
      stat_prefix: name,
      rds: { route_config_name: name, config_source: adsConfigSource() },
      http_filters: [{ name: ExtName.Router, typed_config: typed(AnyType.Router) }],
      // At the edge: the peer address is the client's; X-Forwarded-For is appended, not trusted.
      use_remote_address: { value: true },
      // Paths are matched as Envoy normalises them (RFC 3986 dot segments, duplicate slashes),
      // so `/books/../admin` cannot slip past a Prefix rule.
      normalize_path: { value: true },
      merge_slashes: true,
      // Ingress hosts never carry a port; clients may send one (`Host: shop.example.com:8080`).
      strip_any_host_port: true,
      local_reply_config: NOT_ROUTED_REPLY,
    }),
  };
}

function httpListener(): Listener {
  return {
    name: GATEWAY_HTTP,
    address: socketAddress('0.0.0.0', PORT_GATEWAY_HTTP),
    filter_chains: [{ name: GATEWAY_HTTP, filters: [httpConnectionManager(GATEWAY_HTTP)] }],
  };
}

function httpsListener(tls: readonly { secret: string; hosts: readonly string[] }[]): Listener {
  return {
    name: GATEWAY_HTTPS,
    address: socketAddress('0.0.0.0', PORT_GATEWAY_HTTPS),
    // SNI picks the chain; a hello naming no served host finds none and is closed.
    listener_filters: [{ name: ExtName.TlsInspector, typed_config: typed(AnyType.TlsInspector) }],
    filter_chains: tls.map((t) => ({
      name: `${GATEWAY_HTTPS}:${t.secret}`,
      filter_chain_match: { server_names: [...t.hosts] },
      transport_socket: {
        name: ExtName.Tls,
        typed_config: typed(AnyType.DownstreamTlsContext, {
          common_tls_context: {
            tls_certificate_sds_secret_configs: [
              { name: ingressTlsSecretName(t.secret), sds_config: adsConfigSource() },
            ],
            alpn_protocols: ['h2', 'http/1.1'],
          },
        }),
      },
      filters: [httpConnectionManager(GATEWAY_HTTPS)],
    })),
  };
}

let plaintext: Listener | undefined;
// Keyed on the plan (the same object while unchanged) and the servable Secrets.
const tlsListeners = new IdentityMemo<Listener>();

/** Always the full set: LDS is state-of-the-world (xDS rule 7). */
export const gatewayLdsGenerator: ResourceGenerator = {
  typeUrl: TypeUrl.Listener,
  generate(proxy, ctx): Resource[] {
    if (proxy.identity.kind !== 'gateway') return [];
    plaintext ??= httpListener();
    // MeshConfig observability.accessLog (common/access-log.ts).
    const logs = accessLogSetting(ctx.mesh);
    // MeshConfig observability.tracing (common/tracing.ts).
    const tracing = tracingSetting(ctx.mesh);
    const service = tracingServiceName(proxy.identity);
    const finish = (l: Listener) => withTracing(withAccessLogs(l, logs), tracing, service);
    const out: Resource[] = [{ name: GATEWAY_HTTP, typeUrl: TypeUrl.Listener, message: finish(plaintext) }];
    const plan = gatewayPlan(ctx.mesh);
    const tls = servableTls(plan, ctx.secrets);
    if (tls.length > 0) {
      const key = tls.map((t) => t.secret).join(',');
      const message = tlsListeners.get([plan], key, () => httpsListener(tls));
      out.push({ name: GATEWAY_HTTPS, typeUrl: TypeUrl.Listener, message: finish(message) });
    }
    return out;
  },
};
