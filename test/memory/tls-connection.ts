#!/usr/bin/env node
// What one connection costs a Node server, without skein: a bare node:net, node:tls,
// node:http2 or grpc-js server (all but the first with mTLS; probe-server.ts, forked)
// holds N connections, each of which sent B bytes (one message, as Envoy's first
// DiscoveryRequest carries its Node), got 20,000 back and sent a 300-byte ACK; the server's
// RSS after a full GC, less its RSS before, and the server's CPU time (all its threads) over
// the same span, each divided by N. The floor under skein's per-proxy memory and CPU
// (docs/performance.md, "The stack's floor per connection, in memory and CPU").
import { parseArgs } from 'node:util';
import { measureDirect, probePems, TRANSPORTS } from './probe-client.js';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      connections: { type: 'string', default: '1000' },
      bytes: { type: 'string', default: '2000,61000' },
    },
    allowPositionals: true,
  });
  const pems = await probePems();
  const connections = Number(values.connections);
  const rows: string[][] = [];
  for (const bytes of values.bytes.split(',').map(Number)) {
    const row = [String(bytes)];
    for (const t of TRANSPORTS) {
      const m = await measureDirect(t, bytes, connections, pems);
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
