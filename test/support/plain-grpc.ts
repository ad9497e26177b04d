// A plain gRPC client (no xDS, one unary call per connection) that dials from
// a chosen local address: what an ingress controller outside the mesh does.
// grpc-js cannot bind a local address, so this speaks the gRPC wire protocol
// over node:http2 itself (PROTOCOL-HTTP2.md: POST, application/grpc, a
// 5-byte length prefix, grpc-status in trailers or a trailers-only reply).
import http2 from 'node:http2';
import net from 'node:net';
import tls from 'node:tls';

export interface PlainCall {
  /** Source address to bind, e.g. `127.0.0.50` (any 127.0.0.0/8 address is local). */
  from: string;
  host: string;
  port: number;
  path: string;
  /** `:authority`; `host:port` when absent. */
  authority?: string;
  /** TLS to the server: its CA, and a client key pair for mTLS. */
  tls?: { ca: string; cert?: string; key?: string };
  timeoutMs?: number;
}

export interface PlainResult {
  /** grpc-status name (`OK`, `PERMISSION_DENIED`), or `UNAVAILABLE` when no HTTP/2 session came up. */
  code: string;
  /** The reply message (OK only), as text. */
  body?: string;
  detail?: string;
}

const CODES = [
  'OK',
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
  'UNAUTHENTICATED',
];

/** One unary call with an empty message on a fresh connection. Never throws. */
export function plainGrpcCall(c: PlainCall): Promise<PlainResult> {
  return new Promise((resolve) => {
    let done = false;
    let session: http2.ClientHttp2Session | undefined;
    const finish = (r: PlainResult) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      session?.destroy();
      resolve(r);
    };
    const timer = setTimeout(
      () => finish({ code: 'DEADLINE_EXCEEDED', detail: 'no answer' }),
      c.timeoutMs ?? 5000,
    );
    const authority = c.authority ?? `${c.host}:${c.port}`;
    const connect = () => {
      const base = { host: c.host, port: c.port, localAddress: c.from };
      if (!c.tls) return net.connect(base);
      const opts: tls.ConnectionOptions = { ...base, ca: c.tls.ca, ALPNProtocols: ['h2'] };
      if (c.tls.cert !== undefined) opts.cert = c.tls.cert;
      if (c.tls.key !== undefined) opts.key = c.tls.key;
      // The server presents a SPIFFE-only certificate: trust the CA, skip the host name.
      opts.checkServerIdentity = () => undefined;
      return tls.connect(opts);
    };
    session = http2.connect(`${c.tls ? 'https' : 'http'}://${authority}`, { createConnection: connect });
    session.on('error', (e) => finish({ code: 'UNAVAILABLE', detail: e.message }));
    session.on('close', () => finish({ code: 'UNAVAILABLE', detail: 'connection closed' }));
    const req = session.request({
      ':method': 'POST',
      ':path': c.path,
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    const chunks: Buffer[] = [];
    let headers: http2.IncomingHttpHeaders | undefined;
    req.on('response', (h) => {
      headers = h;
    });
    req.on('data', (d: Buffer) => chunks.push(d));
    const status = (h: http2.IncomingHttpHeaders): PlainResult | undefined => {
      const s = h['grpc-status'];
      if (s === undefined) return undefined;
      const code = CODES[Number(s)] ?? String(s);
      const msg = h['grpc-message'];
      const r: PlainResult = { code };
      if (typeof msg === 'string' && code !== 'OK') r.detail = decodeURIComponent(msg);
      if (code === 'OK') r.body = Buffer.concat(chunks).subarray(5).toString();
      return r;
    };
    req.on('trailers', (t) => {
      const r = status(t);
      if (r) finish(r);
    });
    req.on('end', () =>
      finish(
        headers === undefined
          ? { code: 'UNAVAILABLE', detail: 'no response: the connection failed' }
          : (status(headers) ?? { code: 'UNKNOWN', detail: `no grpc-status: ${JSON.stringify(headers)}` }),
      ),
    );
    req.on('error', (e) => finish({ code: 'UNAVAILABLE', detail: e.message }));
    // An empty message: flag 0, length 0.
    req.end(Buffer.alloc(5));
  });
}
