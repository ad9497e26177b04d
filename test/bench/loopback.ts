// The physical bound beside the bench's figures: how fast this machine moves
// bytes over loopback TLS, so a convergence time can be read as a multiple of
// the time its bytes alone would take.
//
// One TLS 1.3 connection on 127.0.0.1: the server (this thread) writes `bytes`
// in 64 KB chunks, a client in a worker thread (its own core, as the fleet
// workers are other processes) reads them. Timed from the first write to the
// client's last byte; the handshake is not in it. The best of `rounds` is the
// bound: anything slower is the machine being busy, not loopback.
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { createServer, type TLSSocket } from 'node:tls';
import { Worker } from 'node:worker_threads';
import { BuiltinCA } from '../../pkg/certificate/builtin.js';

export interface LoopbackThroughput {
  /** Bytes moved per round. */
  bytes: number;
  /** Fastest round, MB/s (MB = 2^20 bytes). */
  mbPerS: number;
  /** Every round's MB/s, in order. */
  roundsMbPerS: number[];
  /** The negotiated protocol, as the server's socket reports it. */
  protocol: string;
}

const CHUNK = 64 * 1024;

// The client: connects, counts bytes until `total`, reports the time of the last one.
const CLIENT = `
const { parentPort, workerData } = require('node:worker_threads');
const tls = require('node:tls');
const s = tls.connect({ host: '127.0.0.1', port: workerData.port, ca: workerData.ca, servername: 'loopback', minVersion: 'TLSv1.3' });
let n = 0;
s.on('secureConnect', () => parentPort.postMessage({ connected: true }));
s.on('data', (d) => {
  n += d.length;
  if (n >= workerData.total) { parentPort.postMessage({ doneAt: performance.timeOrigin + performance.now() }); s.destroy(); }
});
s.on('error', (e) => parentPort.postMessage({ error: String(e) }));
`;

function nowMs(): number {
  return performance.timeOrigin + performance.now();
}

async function oneRound(
  key: string,
  cert: string,
  ca: string,
  total: number,
): Promise<{ mbPerS: number; protocol: string }> {
  const server = createServer({ key, cert, minVersion: 'TLSv1.3' });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  const worker = new Worker(CLIENT, { eval: true, workerData: { port, ca, total } });
  try {
    const [socket] = (await once(server, 'secureConnection')) as [TLSSocket];
    const protocol = socket.getProtocol() ?? 'unknown';
    const chunk = Buffer.alloc(CHUNK, 0x5a);
    const done = new Promise<number>((resolve, reject) => {
      worker.on('message', (m: { doneAt?: number; error?: string }) => {
        if (m.doneAt !== undefined) resolve(m.doneAt);
        if (m.error !== undefined) reject(new Error(`loopback client: ${m.error}`));
      });
      worker.on('error', reject);
    });
    const t0 = nowMs();
    for (let sent = 0; sent < total; sent += CHUNK) {
      if (!socket.write(chunk)) await once(socket, 'drain');
    }
    const t1 = await done;
    socket.destroy();
    return {
      mbPerS: total / (1024 * 1024) / ((t1 - t0) / 1000),
      protocol,
    };
  } finally {
    await worker.terminate();
    server.close();
  }
}

/** Measures loopback TLS 1.3 throughput: `rounds` transfers of `bytes`, best taken. */
export async function measureLoopbackTls(bytes = 32 * 1024 * 1024, rounds = 3): Promise<LoopbackThroughput> {
  const ca = await BuiltinCA.create({ commonName: 'bench loopback' });
  const leaf = await ca.issue({
    commonName: 'loopback',
    dnsSans: ['loopback'],
    validityMs: 3_600_000,
    usage: 'server',
  });
  const roundsMbPerS: number[] = [];
  let protocol = 'unknown';
  for (let i = 0; i < rounds; i++) {
    const r = await oneRound(leaf.keyPem, leaf.certPem, ca.trustBundlePem, bytes);
    roundsMbPerS.push(r.mbPerS);
    protocol = r.protocol;
  }
  return { bytes, mbPerS: Math.max(...roundsMbPerS), roundsMbPerS, protocol };
}

/** Milliseconds `bytes` take at `t`'s throughput. */
export function boundMs(bytes: number, t: LoopbackThroughput): number {
  return (bytes / (1024 * 1024) / t.mbPerS) * 1000;
}
