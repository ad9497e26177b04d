import { PROXYLESS_CERT_PROVIDER } from '../envoy/names.js';

export interface ProxylessBootstrapOptions {
  /** `host:port` of the controller's ADS port reachable by the workload. */
  serverUri: string;
  /** The proxy CN: `<uuid>.grpc.<sa>.<ns>.<trust-domain>`. */
  nodeId: string;
  /** Files kept current by the controller (WorkloadCertWriter); gRFC A29 file_watcher. */
  certFiles?: { certFile: string; keyFile: string; caFile: string };
  refreshInterval?: string;
}

/** JSON bootstrap for a grpc-js-xds workload (GRPC_XDS_BOOTSTRAP), as @grpc/grpc-js-xds 1.14 reads it (gRFC A27 bootstrap format). */
export interface ProxylessBootstrap {
  xds_servers: { server_uri: string; channel_creds: { type: string }[]; server_features: string[] }[];
  node: { id: string; cluster: string; locality: Record<string, never> };
  server_listener_resource_name_template: string;
  certificate_providers?: Record<
    string,
    {
      plugin_name: 'file_watcher';
      config: {
        certificate_file: string;
        private_key_file: string;
        ca_certificate_file: string;
        refresh_interval: string;
      };
    }
  >;
}

export function proxylessBootstrap(o: ProxylessBootstrapOptions): ProxylessBootstrap {
  const b: ProxylessBootstrap = {
    // Proxyless clients only speak insecure or google_default to the control
    // plane (its channel_creds support only `insecure` and `google_default`), hence the explicit plaintext ADS port.
    xds_servers: [
      { server_uri: o.serverUri, channel_creds: [{ type: 'insecure' }], server_features: ['xds_v3'] },
    ],
    // node.locality is required by grpc-js-xds even when empty.
    node: { id: o.nodeId, cluster: 'skein', locality: {} },
    server_listener_resource_name_template: 'grpc/server?xds.resource.listening_address=%s',
  };
  if (o.certFiles) {
    b.certificate_providers = {
      [PROXYLESS_CERT_PROVIDER]: {
        plugin_name: 'file_watcher',
        config: {
          certificate_file: o.certFiles.certFile,
          private_key_file: o.certFiles.keyFile,
          ca_certificate_file: o.certFiles.caFile,
          // A string, not a number: grpc-js-xds parses it as a protobuf Duration.
          refresh_interval: o.refreshInterval ?? '10s',
        },
      },
    };
  }
  return b;
}
