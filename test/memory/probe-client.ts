// The client side of the connection probes (tls-connection.ts, envoy-front.ts): a CA and
// certificates for both ends, N connections that each send B bytes (one message, as Envoy's
// first DiscoveryRequest carries its Node), read the 20,000-byte reply and send a 300-byte
// ACK, and the forked server (probe-server.ts) whose RSS and CPU are read before and after.
import { fork } from 'node:child_process';
import http2 from 'node:http2';
import net from 'node:net';
import tls from 'node:tls';
import { fileURLToPath } from 'node:url';
import { BuiltinCA } from '../../pkg/certificate/builtin.js';

export const REPLY_BYTES = 20_000;
/** An ADS ACK: a DiscoveryRequest with version, nonce and type URL, no Node. */
const ACK_BYTES = 300;
const BATCH = 50;

export interface Pems {
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
}

/** What a client speaks; `h2` and `grpc` with mTLS, `tls` too. */
export type Transport = 'tcp' | 'tls' | 'h2' | 'grpc';
export const TRANSPORTS: readonly Transport[] = ['tcp', 'tls', 'h2', 'grpc'];
/** What a forked server serves: the client's transports, and plaintext HTTP/2 behind a front proxy. */
export type ServerTransport = Transport | 'h2c';
export const SERVER_TRANSPORTS: readonly ServerTransport[] = [...TRANSPORTS, 'h2c'];

/** The probe's one gRPC method: bidi streaming of raw bytes, as ADS is of DiscoveryRequests. */
export const PROBE_PATH = '/probe.Probe/Stream';

/** A CA, a server certificate for 127.0.0.1 and a client certificate. */
export async function probePems(): Promise<Pems> {
  const ca = await BuiltinCA.create({ commonName: 'connection probe' });
  const day = 24 * 60 * 60 * 1000;
  const server = await ca.issue({
    commonName: 'server',
    ipSans: ['127.0.0.1'],
    usage: 'server',
    validityMs: day,
  });
  const client = await ca.issue({ commonName: 'client', usage: 'client', validityMs: day });
  return {
    ca: ca.rootCertPem,
    serverCert: server.certPem,
    serverKey: server.keyPem,
    clientCert: client.certPem,
    clientKey: client.keyPem,
  };
}

/** A gRPC message on the wire: uncompressed flag, 4-byte big-endian length, payload. */
function grpcFrame(payload: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(payload.length, 1);
  return Buffer.concat([head, payload]);
}

/**
 * Client side: one connection (and for h2 and gRPC one stream) that sends `bytes`, waits for
 * the reply and then sends an ACK-sized message, as a proxy ACKs what it received (the ACK
 * is the last request a stream reads, so it is what a server's read path keeps last).
 */
export function connect(
  transport: Transport,
  port: number,
  bytes: number,
  pems: Pems,
  keep: object[],
): Promise<void> {
  const opts = { key: pems.clientKey, cert: pems.clientCert, ca: pems.ca };
  const message = Buffer.alloc(bytes, 2);
  return new Promise((resolve, reject) => {
    let got = 0;
    let send = (_: Buffer): void => {};
    const onData = (d: Buffer) => {
      const before = got;
      got += d.length;
      if (before < REPLY_BYTES && got >= REPLY_BYTES) {
        send(Buffer.alloc(ACK_BYTES, 3));
        resolve();
      }
    };
    if (transport === 'tcp') {
      const socket = net.connect({ host: '127.0.0.1', port }, () => socket.write(message));
      socket.on('data', onData).on('error', reject);
      send = (b) => socket.write(b);
      keep.push(socket);
    } else if (transport === 'tls') {
      const socket = tls.connect({ ...opts, host: '127.0.0.1', port }, () => socket.write(message));
      socket.on('data', onData).on('error', reject);
      send = (b) => socket.write(b);
      keep.push(socket);
    } else {
      const session = http2.connect(`https://127.0.0.1:${port}`, opts).on('error', reject);
      const stream = session.request({
        ':method': 'POST',
        ':path': transport === 'grpc' ? PROBE_PATH : '/m',
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      stream.on('data', onData).on('error', reject);
      send = (b) => stream.write(transport === 'grpc' ? grpcFrame(b) : b);
      send(message);
      keep.push(session, stream);
    }
  });
}

/** `connections` clients against `port`, in batches; what they hold, for the caller to close. */
export async function connectAll(
  transport: Transport,
  port: number,
  bytes: number,
  connections: number,
  pems: Pems,
): Promise<object[]> {
  const keep: object[] = [];
  for (let i = 0; i < connections; i += BATCH)
    await Promise.all(
      Array.from({ length: Math.min(BATCH, connections - i) }, () =>
        connect(transport, port, bytes, pems, keep),
      ),
    );
  return keep;
}

export function closeAll(keep: readonly object[]): void {
  for (const k of keep) (k as { destroy?: () => void }).destroy?.();
}

export interface ServerReport {
  rss: number;
  cpuUs: number;
  connections: number;
}

/** A forked probe server: its port, and a report (after a full GC) on request. */
export async function forkServer(
  transport: ServerTransport,
  bytes: number,
  pems: Pems,
): Promise<{ port: number; report: () => Promise<ServerReport>; kill: () => void }> {
  const server = fork(
    fileURLToPath(new URL('./probe-server.js', import.meta.url)),
    [transport, String(bytes)],
    {
      execArgv: ['--expose-gc'],
      env: { ...process.env, PROBE_PEMS: JSON.stringify(pems) },
    },
  );
  const next = <T>() => new Promise<T>((resolve) => server.once('message', (m) => resolve(m as T)));
  const { port } = await next<{ port: number }>();
  return {
    port,
    report: () => {
      const answer = next<ServerReport>();
      server.send('report');
      return answer;
    },
    kill: () => server.kill(),
  };
}

/** Per connection: RSS growth (KB) and CPU (ms) between two reports. */
export function perConnection(
  before: { rss: number; cpuUs: number },
  after: { rss: number; cpuUs: number },
  n: number,
) {
  return { kb: (after.rss - before.rss) / n / 1024, cpuMs: (after.cpuUs - before.cpuUs) / n / 1000 };
}

/** A forked server of `transport` and `connections` clients of it: the server's RSS and CPU per connection. */
export async function measureDirect(transport: Transport, bytes: number, connections: number, pems: Pems) {
  const server = await forkServer(transport, bytes, pems);
  const before = await server.report();
  const keep = await connectAll(transport, server.port, bytes, connections, pems);
  await new Promise((r) => setTimeout(r, 1000));
  const after = await server.report();
  server.kill();
  closeAll(keep);
  if (after.connections !== connections)
    throw new Error(`server holds ${after.connections} of ${connections}`);
  return perConnection(before, after, connections);
}
