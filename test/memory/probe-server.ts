// The server side of the connection probes (tls-connection.ts, envoy-front.ts), forked as
// `probe-server.js <transport> <bytes>`: it holds every connection (or stream) it accepts,
// replies 20,000 bytes once one has sent `bytes`, and on each message from its parent runs
// a full GC and reports its RSS, its CPU time (all threads) and what it holds. `h2c` is
// plaintext HTTP/2, the controller behind a front proxy that terminated TLS.
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import tls from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import {
  type Pems,
  PROBE_PATH,
  REPLY_BYTES,
  SERVER_TRANSPORTS,
  type ServerTransport,
} from './probe-client.js';

const raw = (b: Buffer) => b;

/** Server side: counts what each connection sent, replies once it has `bytes`, reports RSS on request. */
function serve(transport: ServerTransport, bytes: number, pems: Pems): void {
  const held: object[] = [];
  const reply = Buffer.alloc(REPLY_BYTES, 1);
  const opts = { key: pems.serverKey, cert: pems.serverCert, ca: pems.ca, requestCert: true };
  const onData = (w: { write(b: Buffer): unknown; on(e: 'data', f: (d: Buffer) => void): unknown }) => {
    let got = 0;
    w.on('data', (d: Buffer) => {
      const before = got;
      got += d.length;
      if (before < bytes && got >= bytes) w.write(reply);
    });
  };
  const hold = (socket: net.Socket) => {
    held.push(socket);
    onData(socket);
  };
  if (transport === 'grpc') {
    serveGrpc(bytes, pems, held, reply);
    return;
  }
  const onStream = (stream: http2.ServerHttp2Stream) => {
    held.push(stream);
    // A client that closes its stream resets it (through Envoy as well): not the probe's failure.
    stream.on('error', () => {});
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
    onData(stream);
  };
  const server =
    transport === 'tcp'
      ? net.createServer(hold)
      : transport === 'tls'
        ? tls.createServer(opts, hold)
        : transport === 'h2c'
          ? http2.createServer().on('stream', onStream)
          : http2.createSecureServer(opts).on('stream', onStream);
  server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as AddressInfo).port }));
  answerReports(held);
}

/** A grpc-js server with the probe's method: the first message's peer certificate read, as skein's ADS server does. */
function serveGrpc(bytes: number, pems: Pems, held: object[], reply: Buffer): void {
  const server = new grpc.Server();
  const method = {
    path: PROBE_PATH,
    requestStream: true,
    responseStream: true,
    requestSerialize: raw,
    requestDeserialize: raw,
    responseSerialize: raw,
    responseDeserialize: raw,
  };
  server.addService(
    { Stream: method },
    {
      Stream: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
        held.push(call);
        if (call.getAuthContext().sslPeerCertificate === undefined) call.destroy();
        let got = 0;
        call.on('data', (d: Buffer) => {
          const before = got;
          got += d.length;
          if (before < bytes && got >= bytes) call.write(reply);
        });
      },
    },
  );
  const creds = grpc.ServerCredentials.createSsl(
    Buffer.from(pems.ca),
    [{ cert_chain: Buffer.from(pems.serverCert), private_key: Buffer.from(pems.serverKey) }],
    true,
  );
  server.bindAsync('127.0.0.1:0', creds, (err, port) => {
    if (err) throw err;
    process.send?.({ port });
  });
  answerReports(held);
}

/** On each message from the parent: a full GC, then RSS, CPU time and the connections held. */
function answerReports(held: object[]): void {
  process.on('message', () => {
    (globalThis as { gc?: () => void }).gc?.();
    setTimeout(() => {
      const cpu = process.cpuUsage();
      process.send?.({
        rss: process.memoryUsage().rss,
        cpuUs: cpu.user + cpu.system,
        connections: held.length,
      });
    }, 500);
  });
}

const [transport, bytes] = process.argv.slice(-2);
serve(
  SERVER_TRANSPORTS.find((x) => x === transport) ?? 'tls',
  Number(bytes),
  JSON.parse(process.env['PROBE_PEMS'] ?? '{}'),
);
