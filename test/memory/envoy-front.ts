#!/usr/bin/env node
// The alternative to Node's TLS for the proxies' ADS connections, measured: an Envoy in
// front of the controller terminates each proxy's mTLS connection and carries its stream,
// over one plaintext HTTP/2 connection per Envoy worker, to a Node HTTP/2 server (h2c,
// probe-server.ts) standing in for the controller. The same clients as tls-connection.ts
// (each sends B bytes, reads 20,000, sends a 300-byte ACK); per connection: Envoy's RSS and
// CPU time (from /proc), the Node server's RSS after a full GC and its CPU time, and the sum.
// For docs/performance.md ("The stack's floor per connection, in memory and CPU"): what a
// second process terminating ADS would cost in place of node:tls + node:http2 + grpc-js.
//
//   node dist/test/memory/envoy-front.js [--connections 1000] [--bytes 61000] [--concurrency 1]
import { parseArgs } from 'node:util';
import { ENVOY_NEWEST } from '../support/envoy-bin.js';
import { measureEnvoyFront } from './envoy-front-probe.js';
import { probePems } from './probe-client.js';

const { values } = parseArgs({
  options: {
    connections: { type: 'string', default: '1000' },
    bytes: { type: 'string', default: '61000' },
    concurrency: { type: 'string', default: '1' },
  },
});
const connections = Number(values.connections);
const bytes = Number(values.bytes);
const { envoy: e, behind: b } = await measureEnvoyFront(
  connections,
  bytes,
  Number(values.concurrency),
  await probePems(),
);
console.log(
  `per connection, ${connections} mTLS connections that each sent ${bytes} bytes, through Envoy ${ENVOY_NEWEST} (--concurrency ${values.concurrency}) to a Node h2c server`,
);
console.log(['', 'RSS KB', 'CPU ms'].map((c, i) => (i ? c.padStart(9) : c.padEnd(22))).join(''));
for (const [name, f] of [
  ['envoy', e],
  ['node h2c behind it', b],
  ['both', { kb: e.kb + b.kb, cpuMs: e.cpuMs + b.cpuMs }],
] as const)
  console.log(name.padEnd(22) + f.kb.toFixed(1).padStart(9) + f.cpuMs.toFixed(2).padStart(9));
