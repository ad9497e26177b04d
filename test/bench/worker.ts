// A proxy-fleet worker process: issues its proxies' certificates from the
// controller's CA, runs one ADS client per proxy, and reports every ACK to the
// parent in batches (so its own CPU stays small next to the controller's).
import { BuiltinCA } from '../../pkg/certificate/builtin.js';
import { FleetClient } from './ads-client.js';
import { DeltaFleetClient } from './delta-client.js';
import { readNodeFixture, sharedNodeBytes } from './envoy-node.js';
import type { FleetClientOptions } from './fleet-client.js';
import { type FleetTls, grpcJsConnections } from './fleet-transport.js';
import { h2Connections } from './h2-transport.js';
import {
  type AckEvent,
  isParentMessage,
  type ParentMessage,
  replicaOf,
  type StreamEndEvent,
  type WorkerMessage,
} from './protocol.js';
import { abbreviatePeerCertificates } from './tls-peer-chain.js';
import { addressMarker, FactsCache } from './xds-decode.js';

const CERT_VALIDITY_MS = 24 * 60 * 60 * 1000;

// While the controller is down every reconnect attempt fails with an Error
// grpc-js builds, stack trace included (5% of a worker's CPU in a reconnect
// storm); nobody reads those traces here.
Error.stackTraceLimit = 0;
abbreviatePeerCertificates();

const clients: (FleetClient | DeltaFleetClient)[] = [];
const facts = new FactsCache();
let acks: AckEvent[] = [];
let ends: StreamEndEvent[] = [];
let marker: Buffer | undefined;
let flushTimer: NodeJS.Timeout | undefined;

function post(msg: WorkerMessage): void {
  process.send?.(msg);
}

function flush(): void {
  if (acks.length === 0 && ends.length === 0) return;
  post({ type: 'events', acks, ends });
  acks = [];
  ends = [];
}

/**
 * Proxy i connects to replica replicaOf(i, n) and, once that one is lost, to the
 * others in a random order of its own, so a dead replica's proxies spread
 * over the survivors as a Service's connections would.
 */
function replicaOrder(
  index: number,
  single: string,
  replicas?: string[],
): { address: string; fallbacks?: string[] } {
  if (replicas === undefined || replicas.length < 2) return { address: single };
  const own = replicaOf(index, replicas.length);
  const others = replicas.filter((_, i) => i !== own);
  for (let i = others.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [others[i], others[j]] = [others[j] as string, others[i] as string];
  }
  return { address: replicas[own] as string, fallbacks: others };
}

async function init(msg: Extract<ParentMessage, { type: 'init' }>): Promise<void> {
  const started = performance.now();
  const ca = await BuiltinCA.loadOrCreate(msg.caDir);
  const rootPem = Buffer.from(ca.trustBundlePem);
  // Encoded once per worker; every proxy prefixes its own id and cluster.
  const sharedNode = msg.minimalNode ? new Uint8Array() : sharedNodeBytes(readNodeFixture());
  for (const spec of msg.proxies) {
    const cert = await ca.issue({
      commonName: spec.cn,
      uriSans: [spec.spiffe],
      validityMs: CERT_VALIDITY_MS,
      usage: 'client',
    });
    const tls: FleetTls = {
      caPem: rootPem,
      certPem: Buffer.from(cert.certPem),
      keyPem: Buffer.from(cert.keyPem),
      // skein's certificate names localhost too; an IP as TLS server name is deprecated (RFC 6066).
      serverName: msg.serverName ?? 'localhost',
    };
    const options: FleetClientOptions = {
      spec,
      ...replicaOrder(spec.index, msg.address, msg.replicas),
      connect: msg.transport === 'grpc-js' ? grpcJsConnections(tls) : h2Connections(tls),
      facts,
      onAck: (ev) => acks.push(ev),
      onStreamEnd: (ev) => ends.push(ev),
      marker: () => marker,
      sharedNode,
    };
    clients.push(msg.delta ? new DeltaFleetClient(options) : new FleetClient(options));
  }
  flushTimer = setInterval(flush, msg.flushMs);
  post({ type: 'ready', certMs: performance.now() - started });
}

function handle(msg: ParentMessage): void {
  switch (msg.type) {
    case 'init':
      init(msg).catch((err: unknown) => {
        post({ type: 'error', message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
      });
      return;
    case 'connect':
      for (const c of clients) c.start();
      return;
    case 'marker':
      marker = addressMarker(msg.ip);
      return;
    case 'diagnose': {
      const proxies = clients
        .map((c) => ({ p: c.index, missing: c.missing() }))
        .filter((x) => x.missing.length > 0);
      post({ type: 'missing', proxies });
      return;
    }
    case 'stop': {
      flush();
      clearInterval(flushTimer);
      const responses = clients.reduce((n, c) => n + c.responses, 0);
      for (const c of clients) c.stop();
      post({ type: 'stats', decoded: facts.decoded, responses });
      process.disconnect?.();
      return;
    }
  }
}

process.on('message', (msg: unknown) => {
  if (isParentMessage(msg)) handle(msg);
});
// The parent going away ends the worker too.
process.on('disconnect', () => {
  for (const c of clients) c.stop();
  clearInterval(flushTimer);
});
