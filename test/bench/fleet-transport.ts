// How a benchmark proxy reaches the controller: one connection per proxy, as
// with real sidecars, carrying one ADS stream at a time. Two implementations:
// grpc-js's client (grpcJsConnection, below) and a bare HTTP/2 client
// (h2-transport.ts), closer to what an Envoy spends per connection.
import * as grpc from '@grpc/grpc-js';
import { ADS_RETRY_BACKOFF } from '../../pkg/injector/bootstrap.js';

export type FleetTransportKind = 'h2' | 'grpc-js';

/** One open bidi stream of raw (already encoded) messages. */
export interface FleetStream {
  write(bytes: Buffer): void;
  cancel(): void;
}

export interface StreamHandlers {
  onMessage(bytes: Buffer): void;
  /** Once per stream, with its gRPC status code (14, UNAVAILABLE, when the connection was lost). */
  onEnd(code: number): void;
}

/**
 * A proxy's connection to one controller address. `stream` opens a bidi call
 * on it, connecting first if need be; `close` ends the connection and every
 * stream on it (each then reports its end).
 */
export interface FleetConnection {
  stream(path: string, handlers: StreamHandlers): FleetStream;
  close(): void;
}

/** What a proxy needs to connect: its client certificate, the CA, the name to check. */
export interface FleetTls {
  caPem: Buffer;
  certPem: Buffer;
  keyPem: Buffer;
  /** A name the ADS serving certificate carries (skein's names localhost; OSM's only ads.<trust-domain>). */
  serverName: string;
}

export type ConnectionFactory = (address: string) => FleetConnection;

/**
 * grpc-js: one channel per proxy (a local subchannel pool keeps grpc-js from
 * sharing a TCP connection between channels), streams opened with
 * waitForReady, so a stream waits for the channel's own reconnects.
 */
export function grpcJsConnections(tls: FleetTls): ConnectionFactory {
  const credentials = grpc.credentials.createSsl(tls.caPem, tls.keyPem, tls.certPem);
  return (address) => {
    const client = new grpc.Client(address, credentials, {
      'grpc.use_local_subchannel_pool': 1,
      // The sidecar bootstrap's ADS retry bounds (grpc-js jitters each step by ±20 % and grows it
      // 1.6× where Envoy draws uniformly below a doubling interval; both are capped at maxMs).
      'grpc.initial_reconnect_backoff_ms': ADS_RETRY_BACKOFF.baseMs,
      'grpc.max_reconnect_backoff_ms': ADS_RETRY_BACKOFF.maxMs,
      'grpc.max_receive_message_length': 64 * 1024 * 1024,
      // An IP as TLS server name is deprecated (RFC 6066).
      'grpc.ssl_target_name_override': tls.serverName,
      // Neither is Envoy behaviour, and both cost the shared cores per call and connection:
      // channelz bookkeeping, and buffering every request for a gRPC-level retry (an xDS client
      // recovers by opening a new stream, as this one does).
      'grpc.enable_channelz': 0,
      'grpc.enable_retries': 0,
    });
    return {
      stream(path, handlers) {
        const call = client.makeBidiStreamRequest(
          path,
          (bytes: Buffer) => bytes,
          (bytes: Buffer) => bytes,
          new grpc.Metadata({ waitForReady: true }),
        );
        call.on('data', (bytes: Buffer) => handlers.onMessage(bytes));
        call.on('error', () => {
          // Reported through 'status'.
        });
        call.on('status', (s: grpc.StatusObject) => handlers.onEnd(s.code));
        return { write: (bytes) => void call.write(bytes), cancel: () => call.cancel() };
      },
      close: () => client.close(),
    };
  };
}
