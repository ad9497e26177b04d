#!/usr/bin/env node
// What one connection costs a Node server, without skein: a bare node:net, node:tls,
// node:http2 or grpc-js server (all but the first with mTLS; this file, forked with
// --server) holds N connections, each of which sent B bytes (one message, as Envoy's first
// DiscoveryRequest carries its Node), got 20,000 back and sent a 300-byte ACK; the server's RSS after a full GC,
// less its RSS before, and the server's CPU time (all its threads) over the same span, each
// divided by N. The floor under skein's per-proxy memory and CPU (docs/performance.md,
// "The stack's floor per connection, in memory and CPU").
import { fork } from 'node:child_process';
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import tls from 'node:tls';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as grpc from '@grpc/grpc-js';
import { BuiltinCA } from '../../pkg/certificate/builtin.js';

const REPLY_BYTES = 20_000;
/** An ADS ACK: a DiscoveryRequest with version, nonce and type URL, no Node. */
const ACK_BYTES = 300;
const BATCH = 50;

interface Pems {
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
}

type Transport = 'tcp' | 'tls' | 'h2' | 'grpc';
const TRANSPORTS: readonly Transport[] = ['tcp', 'tls', 'h2', 'grpc'];

/** The probe's one gRPC method: bidi streaming of raw bytes, as ADS is of DiscoveryRequests. */
const PROBE_PATH = '/probe.Probe/Stream';
const raw = (b: Buffer) => b;

/** A gRPC message on the wire: uncompressed flag, 4-byte big-endian length, payload. */
function grpcFrame(payload: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(payload.length, 1);
  return Buffer.concat([head, payload]);
}

/** Server side: counts what each connection sent, replies once it has `bytes`, reports RSS on request. */
function serve(transport: Transport, bytes: number, pems: Pems): void {
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
  const server =
    transport === 'tcp'
      ? net.createServer(hold)
      : transport === 'tls'
        ? tls.createServer(opts, hold)
        : http2.createSecureServer(opts).on('stream', (stream) => {
            held.push(stream);
            stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
            onData(stream);
          });
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

/**
 * Client side: one connection (and for h2 and gRPC one stream) that sends `bytes`, waits for
 * the reply and then sends an ACK-sized message, as a proxy ACKs what it received (the ACK
 * is the last request a stream reads, so it is what a server's read path keeps last).
 */
function connect(
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

async function measure(transport: Transport, bytes: number, connections: number, pems: Pems) {
  const server = fork(fileURLToPath(import.meta.url), ['--server', transport, String(bytes)], {
    execArgv: ['--expose-gc'],
    env: { ...process.env, TLS_CONNECTION_PEMS: JSON.stringify(pems) },
  });
  const next = <T>() => new Promise<T>((resolve) => server.once('message', (m) => resolve(m as T)));
  const ask = () => {
    const answer = next<{ rss: number; cpuUs: number; connections: number }>();
    server.send('report');
    return answer;
  };
  const { port } = await next<{ port: number }>();
  const before = await ask();
  const keep: object[] = [];
  for (let i = 0; i < connections; i += BATCH)
    await Promise.all(
      Array.from({ length: Math.min(BATCH, connections - i) }, () =>
        connect(transport, port, bytes, pems, keep),
      ),
    );
  await new Promise((r) => setTimeout(r, 1000));
  const after = await ask();
  server.kill();
  for (const k of keep) (k as { destroy?: () => void; close?: () => void }).destroy?.();
  if (after.connections !== connections)
    throw new Error(`server holds ${after.connections} of ${connections}`);
  return {
    kb: (after.rss - before.rss) / connections / 1024,
    cpuMs: (after.cpuUs - before.cpuUs) / connections / 1000,
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      server: { type: 'boolean' },
      connections: { type: 'string', default: '1000' },
      bytes: { type: 'string', default: '2000,61000' },
    },
    allowPositionals: true,
  });
  if (values.server) {
    const [transport, bytes] = process.argv.slice(-2);
    const t: Transport = TRANSPORTS.find((x) => x === transport) ?? 'tls';
    serve(t, Number(bytes), JSON.parse(process.env['TLS_CONNECTION_PEMS'] ?? '{}'));
    return;
  }
  const ca = await BuiltinCA.create({ commonName: 'tls-connection probe' });
  const day = 24 * 60 * 60 * 1000;
  const server = await ca.issue({
    commonName: 'server',
    ipSans: ['127.0.0.1'],
    usage: 'server',
    validityMs: day,
  });
  const client = await ca.issue({ commonName: 'client', usage: 'client', validityMs: day });
  const pems: Pems = {
    ca: ca.rootCertPem,
    serverCert: server.certPem,
    serverKey: server.keyPem,
    clientCert: client.certPem,
    clientKey: client.keyPem,
  };
  const connections = Number(values.connections);
  const rows: string[][] = [];
  for (const bytes of values.bytes.split(',').map(Number)) {
    const row = [String(bytes)];
    for (const t of TRANSPORTS) {
      const m = await measure(t, bytes, connections, pems);
      row.push(m.kb.toFixed(1), m.cpuMs.toFixed(2));
    }
    rows.push(row);
  }
  console.log(
    `server per connection, ${connections} connections: RSS after a full GC (KB) / CPU of the handshake, the message and the reply (ms); tls, http2 and grpc-js with mTLS`,
  );
  console.log(
    'bytes received'.padEnd(16),
    ...TRANSPORTS.map((t) => `${t} KB`.padStart(9) + `${t} ms`.padStart(9)),
  );
  for (const [bytes, ...cells] of rows)
    console.log((bytes ?? '').padEnd(16), ...cells.map((c) => c.padStart(9)));
}

await main();
