#!/usr/bin/env node
// What one idle connection costs a Node server, without skein: a bare node:net, node:tls
// or node:http2 server (the last two with mTLS; this file, forked with --server) holds N
// connections, each of which sent B bytes (one message, as Envoy's first DiscoveryRequest
// carries its Node) and got 20,000 back; the server's RSS after a full GC, less its RSS
// before, divided by N. The floor under skein's per-proxy memory (docs/performance.md,
// "Memory per connected proxy").
import { fork } from 'node:child_process';
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import tls from 'node:tls';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { BuiltinCA } from '../../pkg/certificate/builtin.js';

const REPLY_BYTES = 20_000;
const BATCH = 50;

interface Pems {
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
}

type Transport = 'tcp' | 'tls' | 'h2';

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
  process.on('message', () => {
    (globalThis as { gc?: () => void }).gc?.();
    setTimeout(() => process.send?.({ rss: process.memoryUsage().rss, connections: held.length }), 500);
  });
}

/** Client side: one connection (and for h2 one stream) that sends `bytes` and waits for the reply. */
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
    const onData = (d: Buffer) => {
      got += d.length;
      if (got >= REPLY_BYTES) resolve();
    };
    if (transport === 'tcp') {
      const socket = net.connect({ host: '127.0.0.1', port }, () => socket.write(message));
      socket.on('data', onData).on('error', reject);
      keep.push(socket);
    } else if (transport === 'tls') {
      const socket = tls.connect({ ...opts, host: '127.0.0.1', port }, () => socket.write(message));
      socket.on('data', onData).on('error', reject);
      keep.push(socket);
    } else {
      const session = http2.connect(`https://127.0.0.1:${port}`, opts).on('error', reject);
      const stream = session.request({
        ':method': 'POST',
        ':path': '/m',
        'content-type': 'application/grpc',
      });
      stream.on('data', onData).on('error', reject);
      stream.write(message);
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
    const answer = next<{ rss: number; connections: number }>();
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
  return (after.rss - before.rss) / connections / 1024;
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
    const t: Transport = transport === 'h2' || transport === 'tcp' ? transport : 'tls';
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
  console.log(`server RSS per idle connection, ${connections} connections (KB; tls and http2 with mTLS)`);
  console.log(
    'bytes received'.padEnd(16),
    'node:net'.padStart(10),
    'node:tls'.padStart(10),
    'node:http2'.padStart(12),
  );
  for (const bytes of values.bytes.split(',').map(Number)) {
    const [c, t, h] = [
      await measure('tcp', bytes, connections, pems),
      await measure('tls', bytes, connections, pems),
      await measure('h2', bytes, connections, pems),
    ];
    console.log(
      String(bytes).padEnd(16),
      c.toFixed(1).padStart(10),
      t.toFixed(1).padStart(10),
      h.toFixed(1).padStart(12),
    );
  }
}

await main();
