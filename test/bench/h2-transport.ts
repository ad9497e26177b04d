// A bare gRPC-over-HTTP/2 client for the benchmark fleet: node:http2 on a TLS
// socket, the 5-byte gRPC message framing, and the status from the trailers.
// grpc-js's client builds a resolver, a load balancer, a subchannel and a
// retrying call per proxy; an Envoy's ADS client is one HTTP/2 connection and
// one stream. With thousands of proxies sharing the controller's two cores,
// that difference was most of the fleet's CPU in a failover (docs/performance.md).
// Framing: gRPC over HTTP/2 (grpc/grpc PROTOCOL-HTTP2.md): each message is a
// compressed flag byte, a 4-byte big-endian length, then the message.
import http2 from 'node:http2';
import tls from 'node:tls';
import type {
  ConnectionFactory,
  FleetConnection,
  FleetStream,
  FleetTls,
  StreamHandlers,
} from './fleet-transport.js';

const UNAVAILABLE = 14;
const INTERNAL = 13;
/**
 * Large receive windows, as an Envoy's are (Http2ProtocolOptions initial_stream_window_size and
 * initial_connection_window_size default to 256 MiB, envoy/config/core/v3/protocol.proto): a
 * response is not held back for WINDOW_UPDATEs, where HTTP/2's default 64 KiB would stall it.
 */
const WINDOW = 16 * 1024 * 1024;

/** Splits a gRPC byte stream into messages across DATA frames of any size. */
export class GrpcFrameReader {
  private chunks: Buffer[] = [];
  private buffered = 0;

  constructor(private readonly onMessage: (bytes: Buffer) => void) {}

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    while (this.buffered >= 5) {
      const head = this.peek(5);
      if (head[0] !== 0) throw new Error('compressed gRPC message: no encoding was negotiated');
      const length = head.readUInt32BE(1);
      if (this.buffered < 5 + length) return;
      this.take(5);
      this.onMessage(this.take(length));
    }
  }

  /** Bytes left of an unfinished message. */
  get pending(): number {
    return this.buffered;
  }

  private peek(n: number): Buffer {
    const first = this.chunks[0] as Buffer;
    if (first.length >= n) return first.subarray(0, n);
    // n ≤ 5: the first n chunks hold at least n bytes.
    return Buffer.concat(this.chunks.slice(0, n)).subarray(0, n);
  }

  private take(n: number): Buffer {
    if (n === 0) return Buffer.alloc(0);
    this.buffered -= n;
    const first = this.chunks[0] as Buffer;
    if (first.length > n) {
      this.chunks[0] = first.subarray(n);
      return first.subarray(0, n);
    }
    if (first.length === n) {
      this.chunks.shift();
      return first;
    }
    const out = Buffer.allocUnsafe(n);
    let at = 0;
    while (at < n) {
      const c = this.chunks[0] as Buffer;
      const k = Math.min(c.length, n - at);
      c.copy(out, at, 0, k);
      at += k;
      if (k === c.length) this.chunks.shift();
      else this.chunks[0] = c.subarray(k);
    }
    return out;
  }
}

/** The gRPC message frame of `bytes`. */
export function grpcFrame(bytes: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(5 + bytes.length);
  out[0] = 0;
  out.writeUInt32BE(bytes.length, 1);
  out.set(bytes, 5);
  return out;
}

function statusOf(headers: http2.IncomingHttpHeaders): number | undefined {
  const s = headers['grpc-status'];
  return typeof s === 'string' ? Number(s) : undefined;
}

/**
 * Connections over node:http2. A stream opened while no session is up
 * connects first; a failed connection ends the stream with UNAVAILABLE, and
 * the caller's backoff decides when to try again (as Envoy's ADS retry does).
 */
export function h2Connections(opts: FleetTls): ConnectionFactory {
  // One context per proxy, reused by every reconnect: building it parses the key and CA.
  const secureContext = tls.createSecureContext({ ca: opts.caPem, cert: opts.certPem, key: opts.keyPem });
  return (address) => new H2Connection(address, secureContext, opts.serverName);
}

class H2Connection implements FleetConnection {
  private session: http2.ClientHttp2Session | undefined;
  private readonly host: string;
  private readonly port: number;

  constructor(
    address: string,
    private readonly secureContext: tls.SecureContext,
    private readonly serverName: string,
  ) {
    const colon = address.lastIndexOf(':');
    this.host = address.slice(0, colon);
    this.port = Number(address.slice(colon + 1));
  }

  private connect(): http2.ClientHttp2Session {
    if (this.session && !this.session.closed && !this.session.destroyed) return this.session;
    const session = http2.connect(`https://${this.host}:${this.port}`, {
      settings: { initialWindowSize: WINDOW },
      createConnection: () =>
        tls.connect({
          host: this.host,
          port: this.port,
          servername: this.serverName,
          secureContext: this.secureContext,
          ALPNProtocols: ['h2'],
        }),
    });
    session.on('error', () => {
      // Each stream on it reports its own end.
    });
    session.on('connect', () => session.setLocalWindowSize(WINDOW));
    this.session = session;
    return session;
  }

  stream(path: string, handlers: StreamHandlers): FleetStream {
    let ended = false;
    const end = (code: number) => {
      if (ended) return;
      ended = true;
      handlers.onEnd(code);
    };
    const session = this.connect();
    const req = session.request(
      { ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers' },
      { endStream: false },
    );
    const reader = new GrpcFrameReader((bytes) => {
      if (!ended) handlers.onMessage(bytes);
    });
    req.on('response', (headers) => {
      // Trailers-only: the call ended before any message.
      const code = statusOf(headers);
      if (code !== undefined) end(code);
    });
    req.on('data', (chunk: Buffer) => {
      try {
        reader.push(chunk);
      } catch {
        req.close(http2.constants.NGHTTP2_CANCEL);
        end(INTERNAL);
      }
    });
    req.on('trailers', (trailers) => end(statusOf(trailers) ?? INTERNAL));
    req.on('error', () => end(UNAVAILABLE));
    req.on('close', () => end(UNAVAILABLE));
    return {
      write: (bytes) => {
        if (!req.closed && !req.destroyed) req.write(grpcFrame(bytes));
      },
      cancel: () => {
        end(1); // CANCELLED, as grpc-js reports a cancelled call
        if (!req.closed) req.close(http2.constants.NGHTTP2_CANCEL);
      },
    };
  }

  close(): void {
    this.session?.destroy();
    this.session = undefined;
  }
}
