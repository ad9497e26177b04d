// An Envoy terminating the proxies' mTLS connections in front of a Node h2c server
// (probe-server.ts), measured per connection: see envoy-front.ts.
import { cpuSeconds, rssBytes } from '../bench/proc.js';
import { ENVOY_NEWEST, EnvoyProcess } from '../support/envoy-bin.js';
import { freePorts } from '../support/processes.js';
import { closeAll, connectAll, forkServer, type Pems, perConnection } from './probe-client.js';

/** A TLS listener (client certificate required, ALPN h2) routing every stream to the h2c server. */
function frontConfig(listenPort: number, backendPort: number, pems: Pems): object {
  const tls = {
    name: 'envoy.transport_sockets.tls',
    typed_config: {
      '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext',
      require_client_certificate: true,
      common_tls_context: {
        alpn_protocols: ['h2'],
        tls_certificates: [
          {
            certificate_chain: { inline_string: pems.serverCert },
            private_key: { inline_string: pems.serverKey },
          },
        ],
        validation_context: { trusted_ca: { inline_string: pems.ca } },
      },
    },
  };
  const hcm = {
    name: 'envoy.filters.network.http_connection_manager',
    typed_config: {
      '@type':
        'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
      stat_prefix: 'ads',
      codec_type: 'HTTP2',
      // The controller learns the proxy's identity from the verified certificate, as a header.
      forward_client_cert_details: 'SANITIZE_SET',
      set_current_client_cert_details: { subject: true, uri: true },
      stream_idle_timeout: '0s',
      route_config: {
        virtual_hosts: [
          {
            name: 'all',
            domains: ['*'],
            routes: [{ match: { prefix: '/' }, route: { cluster: 'controller', timeout: '0s' } }],
          },
        ],
      },
      http_filters: [
        {
          name: 'envoy.filters.http.router',
          typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' },
        },
      ],
    },
  };
  const many = 1_000_000;
  return {
    admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
    static_resources: {
      listeners: [
        {
          name: 'ads',
          address: { socket_address: { address: '127.0.0.1', port_value: listenPort } },
          filter_chains: [{ transport_socket: tls, filters: [hcm] }],
        },
      ],
      clusters: [
        {
          name: 'controller',
          type: 'STATIC',
          connect_timeout: '1s',
          typed_extension_protocol_options: {
            'envoy.extensions.upstreams.http.v3.HttpProtocolOptions': {
              '@type': 'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
              explicit_http_config: { http2_protocol_options: {} },
            },
          },
          // Every proxy's stream goes to the one controller: no circuit breaking in between.
          circuit_breakers: {
            thresholds: [{ max_connections: many, max_pending_requests: many, max_requests: many }],
          },
          load_assignment: {
            cluster_name: 'controller',
            endpoints: [
              {
                lb_endpoints: [
                  {
                    endpoint: {
                      address: { socket_address: { address: '127.0.0.1', port_value: backendPort } },
                    },
                  },
                ],
              },
            ],
          },
        },
      ],
    },
  };
}

function envoyFigures(pid: number): { rss: number; cpuUs: number } {
  const rss = rssBytes(pid);
  const cpu = cpuSeconds(pid);
  if (rss === undefined || cpu === undefined) throw new Error(`cannot read /proc/${pid}`);
  return { rss, cpuUs: cpu * 1e6 };
}

export interface EnvoyFrontFigures {
  envoy: { kb: number; cpuMs: number };
  behind: { kb: number; cpuMs: number };
}

/** `connections` mTLS clients through one Envoy (`concurrency` workers) to a forked h2c server. */
export async function measureEnvoyFront(
  connections: number,
  bytes: number,
  concurrency: number,
  pems: Pems,
): Promise<EnvoyFrontFigures> {
  const backend = await forkServer('h2c', bytes, pems);
  const [listenPort] = await freePorts(1);
  if (listenPort === undefined) throw new Error('no free port');
  const envoy = await EnvoyProcess.start(
    ENVOY_NEWEST,
    JSON.stringify(frontConfig(listenPort, backend.port, pems)),
    {
      concurrency,
      logLevel: 'warning',
    },
  );
  try {
    await envoy.live();
    const pid = envoy.pid;
    if (pid === undefined) throw new Error('no envoy pid');
    // One warm-up stream opens the upstream connection, which then carries every other stream.
    closeAll(await connectAll('h2', listenPort, bytes, 1, pems));
    await new Promise((r) => setTimeout(r, 500));
    const envoyBefore = envoyFigures(pid);
    const backendBefore = await backend.report();
    const keep = await connectAll('h2', listenPort, bytes, connections, pems);
    await new Promise((r) => setTimeout(r, 1000));
    const envoyAfter = envoyFigures(pid);
    const backendAfter = await backend.report();
    if (backendAfter.connections - backendBefore.connections !== connections)
      throw new Error(
        `the server holds ${backendAfter.connections - backendBefore.connections} new streams of ${connections}`,
      );
    const e = perConnection(envoyBefore, envoyAfter, connections);
    const b = perConnection(backendBefore, backendAfter, connections);
    closeAll(keep);
    return { envoy: e, behind: b };
  } finally {
    await envoy.stop();
    backend.kill();
  }
}
