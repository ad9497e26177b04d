import { randomUUID } from 'node:crypto';
import type net from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { TypeUrl } from '../../envoy/types.js';
import type { Logger } from '../../logger/logger.js';
import type { ProxyIdentity } from '../../mesh/identity.js';
import { type EncodedResource, ResourceInterner } from '../cache/encoded.js';
import { GenerationCache } from '../cache/generation.js';
import { AuthenticationError, identityFromNodeId, identityFromPeerCertificate } from './auth.js';
import type { ChunkedResponse } from './chunked-response.js';
import { type ClientCertificate, clientCertificateOf } from './client-cert.js';
import { ConnectionTable } from './connections.js';
import { DeltaAdsStream } from './delta-stream.js';
import {
  isRefused,
  type RefusedRequest,
  RequestBudget,
  type StreamLimits,
  streamLimits,
  YIELD_ABOVE_NAMES,
} from './limits.js';
import { ADS_LISTEN_BACKLOG, listenWithBacklog } from './listen.js';
import { adsServerDefinition } from './service.js';
import { ServingCredentials } from './serving-credentials.js';
import { AdsStream, type StreamTransport } from './stream.js';
import type { AdsServerOptions, DeltaDiscoveryRequest, DiscoveryRequest, StreamStatus } from './types.js';

type Mode = 'mtls' | 'insecure';

/** What both request kinds carry for authentication: the node of the first request. */
interface FirstRequest {
  node?: { id: string };
}

/** A SotW or Delta stream, as the server tracks it. */
interface TrackedStream {
  readonly id: string;
  status(): StreamStatus | undefined;
  sentResources(): Map<string, readonly EncodedResource[]>;
  close(): void;
}

interface ServedStream<Req> extends TrackedStream {
  handleRequest(req: Req): void;
  refuse(refusal: RefusedRequest['refused']): void;
}

/** The resource names a request carries, what the name rate limit charges. */
function namesIn(req: DiscoveryRequest | DeltaDiscoveryRequest): number {
  return 'resourceNames' in req
    ? req.resourceNames.length
    : req.resourceNamesSubscribe.length +
        req.resourceNamesUnsubscribe.length +
        req.initialResourceVersions.size;
}

/** What the server hands every stream it creates, whichever the protocol. */
interface StreamBase {
  id: string;
  remote: string;
  transport: StreamTransport;
  authenticate(first: FirstRequest): ProxyIdentity;
  onClose(stream: { id: string }): void;
}

const DEFAULT_MAX_BUFFERED_BYTES = 4 * 1024 * 1024;
const SHUTDOWN_GRACE_MS = 5_000;

// Detect dead proxies (half-open TCP) so their streams are cleaned up.
const SERVER_CHANNEL_OPTIONS: grpc.ServerOptions = {
  'grpc.keepalive_time_ms': 30_000,
  'grpc.keepalive_timeout_ms': 10_000,
  'grpc.keepalive_permit_without_calls': 1,
  'grpc.http2.min_ping_interval_without_data_ms': 10_000,
  // No channelz consumer in skein: its per-call and per-connection bookkeeping is pure cost when
  // thousands of proxies reconnect at once.
  'grpc.enable_channelz': 0,
};

/** The listening sockets of each server (see listenWithBacklog), closed by closeListeners. */
const listeners = new WeakMap<grpc.Server, net.Server[]>();

async function bind(
  server: grpc.Server,
  address: { host: string; port: number },
  creds: grpc.ServerCredentials,
  onConnection?: (socket: net.Socket) => void,
): Promise<number> {
  const { tcp, port } = await listenWithBacklog(
    server,
    address.host,
    address.port,
    creds,
    ADS_LISTEN_BACKLOG,
    onConnection,
  );
  listeners.set(server, [...(listeners.get(server) ?? []), tcp]);
  return port;
}

/** Stops accepting connections on a server's ports; its open connections are the server's to end. */
function closeListeners(server: grpc.Server): void {
  for (const tcp of listeners.get(server) ?? []) tcp.close();
  listeners.delete(server);
}

function hostPort(host: string, port: number): { host: string; port: number } {
  return { host, port };
}

/**
 * The Aggregated Discovery Service, SotW and Delta. The main port requires mTLS and
 * takes the proxy identity from the client certificate; an optional
 * plaintext port (off by default) takes it from node.id.
 */
export class AdsServer {
  private readonly servers: grpc.Server[] = [];
  private readonly active = new Map<string, TrackedStream>();
  /** mTLS streams: the client certificate each was opened with. */
  private readonly clientCerts = new Map<string, ClientCertificate>();
  private readonly log: Logger;
  readonly cache: GenerationCache;
  readonly interner = new ResourceInterner();
  private started = false;
  private readonly serving: ServingCredentials;
  /** The mTLS port's connections, ended when their client certificate expires or loses its root. */
  private readonly connections: ConnectionTable;
  /** The bundle client certificates are verified against now. */
  private trustedPem: string;
  readonly limits: StreamLimits;

  constructor(private readonly opts: AdsServerOptions) {
    this.log = opts.logger.child({ component: 'ads' });
    this.limits = streamLimits(opts.limits);
    this.serving = new ServingCredentials(opts.tls);
    this.trustedPem = opts.tls.caPem;
    this.connections = new ConnectionTable((peer, reason) =>
      this.log.info(
        { remote: peer, reason },
        reason === 'certificate-expired'
          ? 'closing ADS connection: its client certificate expired (the proxy reconnects with its renewed one)'
          : 'closing ADS connection: no trusted root issued its client certificate any more',
      ),
    );
    this.cache = new GenerationCache(
      this.interner,
      opts.secretDependentTypes ?? [TypeUrl.Secret],
      opts.dependencies,
    );
  }

  async start(): Promise<{ port: number; insecurePort?: number }> {
    if (this.started) throw new Error('AdsServer already started');
    this.started = true;
    const host = this.opts.host ?? '0.0.0.0';
    try {
      // mTLS: a client certificate from our CA is required.
      const port = await bind(
        this.createServer('mtls'),
        hostPort(host, this.opts.port),
        this.serving.credentials,
        (socket) => this.connections.add(socket),
      );
      const result: { port: number; insecurePort?: number } = { port };
      if (this.opts.insecurePort !== undefined) {
        result.insecurePort = await bind(
          this.createServer('insecure'),
          hostPort(host, this.opts.insecurePort),
          grpc.ServerCredentials.createInsecure(),
        );
        this.log.warn({ port: result.insecurePort }, 'plaintext ADS port enabled (identity from node.id)');
      }
      this.log.info({ port }, 'ADS server listening (mTLS)');
      return result;
    } catch (e) {
      for (const s of this.servers) {
        closeListeners(s);
        s.forceShutdown();
      }
      this.servers.length = 0;
      throw e;
    }
  }

  /** Renews the mTLS port's certificate (and the client CA bundle, when given): new handshakes use them, open streams carry on. */
  setServingCertificate(cert: { certPem: string; keyPem: string; caPem?: string }): void {
    this.serving.update(
      cert.caPem === undefined
        ? { certPem: cert.certPem, keyPem: cert.keyPem }
        : { ...cert, caPem: cert.caPem },
    );
    // A root left the bundle (rotation stage 3): sessions it alone vouched for end now.
    if (cert.caPem !== undefined && cert.caPem !== this.trustedPem) {
      this.trustedPem = cert.caPem;
      const closed = this.connections.closeUntrusted(cert.caPem);
      if (closed > 0)
        this.log.info({ closed }, 'ended ADS connections whose client certificate lost its root');
    }
  }

  /** Ends every stream (proxies reconnect elsewhere or later) and stops listening. */
  async stop(): Promise<void> {
    for (const server of this.servers) closeListeners(server);
    // Refuse new calls first (GOAWAY), then end the open streams so the drain can finish.
    const drained = Promise.all(
      this.servers.map(
        (server) =>
          new Promise<void>((resolve) => {
            const timer = setTimeout(() => {
              server.forceShutdown();
              resolve();
            }, SHUTDOWN_GRACE_MS);
            server.tryShutdown(() => {
              clearTimeout(timer);
              resolve();
            });
          }),
      ),
    );
    for (const s of [...this.active.values()]) s.close();
    await drained;
    this.servers.length = 0;
  }

  /** Open streams, authenticated or not (their first request may not have come yet). */
  get streamCount(): number {
    return this.active.size;
  }

  /** Connected streams, for the debug endpoint. */
  streams(): StreamStatus[] {
    const out: StreamStatus[] = [];
    for (const s of this.active.values()) {
      const st = s.status();
      if (st === undefined) continue;
      const cert = this.clientCerts.get(s.id);
      out.push(cert === undefined ? st : { ...st, clientCert: certStatus(cert) });
    }
    return out;
  }

  /** Authenticated mTLS streams with the validity of the certificate each was opened with. */
  *connectedCertificates(): Iterable<{ identity: ProxyIdentity; cert: ClientCertificate }> {
    for (const [id, cert] of this.clientCerts) {
      const identity = this.active.get(id)?.status()?.identity;
      if (identity !== undefined) yield { identity, cert };
    }
  }

  /** Debug view: per type, the encoded resources last sent on one stream; undefined for an unknown stream. */
  sentResources(streamId: string): ReadonlyMap<string, readonly EncodedResource[]> | undefined {
    return this.active.get(streamId)?.sentResources();
  }

  private createServer(mode: Mode): grpc.Server {
    const server = new grpc.Server({
      ...SERVER_CHANNEL_OPTIONS,
      // grpc-js refuses a larger message with RESOURCE_EXHAUSTED before reading it into a request.
      'grpc.max_receive_message_length': this.limits.maxMessageBytes,
    });
    const options = () => ({
      maxNamesPerType: this.limits.maxNamesPerType,
      source: this.opts.source,
      cache: this.cache,
      logger: this.log,
      controlPlaneId: this.opts.controlPlaneId ?? 'skein',
      maxBufferedBytes: this.opts.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES,
      ...(this.opts.observer !== undefined ? { observer: this.opts.observer } : {}),
    });
    server.addService(adsServerDefinition(this.limits), {
      StreamAggregatedResources: (
        call: grpc.ServerDuplexStream<DiscoveryRequest | RefusedRequest, ChunkedResponse>,
      ) => this.onCall(call, mode, (base) => new AdsStream({ ...options(), ...base })),
      DeltaAggregatedResources: (
        call: grpc.ServerDuplexStream<DeltaDiscoveryRequest | RefusedRequest, ChunkedResponse>,
      ) => this.onCall(call, mode, (base) => new DeltaAdsStream({ ...options(), ...base })),
    });
    if (mode === 'mtls')
      for (const extra of this.opts.services ?? [])
        server.addService(
          extra.definition,
          extra.implementation((call) =>
            identityFromPeerCertificate(call.getAuthContext().sslPeerCertificate, this.opts.trustDomain),
          ),
        );
    this.servers.push(server);
    return server;
  }

  private onCall<Req extends (DiscoveryRequest | DeltaDiscoveryRequest) & FirstRequest>(
    call: grpc.ServerDuplexStream<Req | RefusedRequest, ChunkedResponse>,
    mode: Mode,
    create: (base: StreamBase) => ServedStream<Req>,
  ): void {
    const id = randomUUID();
    const remote = call.getPeer();
    const failCall = (code: grpc.status, details: string): void => {
      call.emit('error', { code, details });
    };
    let authenticate: (first: FirstRequest) => ProxyIdentity;
    let cert: ClientCertificate | undefined;
    /** The verified client certificate's DER (mTLS only), for the connection table. */
    let certDer: Buffer | undefined;
    if (mode === 'mtls') {
      let identity: ProxyIdentity;
      try {
        // Identity = verified client certificate; node.id is not trusted here.
        const peer = call.getAuthContext().sslPeerCertificate;
        identity = identityFromPeerCertificate(peer, this.opts.trustDomain);
        cert = clientCertificateOf(peer);
        certDer = peer?.raw;
      } catch (e) {
        const message = e instanceof AuthenticationError ? e.message : String(e);
        this.log.warn({ remote }, `refused ADS stream: ${message}`);
        failCall(grpc.status.UNAUTHENTICATED, message);
        return;
      }
      authenticate = (first) => {
        const nodeId = first.node?.id;
        if (nodeId !== undefined && nodeId !== '' && nodeId !== identity.cn)
          this.log.warn(
            { remote, cn: identity.cn, nodeId },
            'node.id differs from the certificate CN; using the CN',
          );
        return identity;
      };
    } else {
      authenticate = (first) => identityFromNodeId(first.node?.id, this.opts.trustDomain);
    }

    let finished = false;
    const stream = create({
      id,
      remote,
      authenticate,
      transport: {
        write: (response, flushed) => (finished ? true : call.write(response, flushed)),
        fail: (code, message) => {
          if (finished) return;
          finished = true;
          failCall(code, message);
        },
      },
      onClose: (s) => {
        this.active.delete(s.id);
        this.clientCerts.delete(s.id);
        // Ending our side is what lets stop() and the client see the stream done.
        if (!finished) {
          finished = true;
          call.end();
        }
      },
    });
    this.active.set(id, stream);
    if (cert !== undefined) {
      this.clientCerts.set(id, cert);
      // TLS checks validity only at the handshake, so the connection is ended when the certificate
      // expires; the proxy then presents the renewed one (pkg/injector/bootstrap-rotation.ts).
      this.connections.certify(remote, certDer, cert.notAfter);
    }

    const budget = new RequestBudget(this.limits);
    call.on('data', (req: Req | RefusedRequest) => {
      if (isRefused(req)) return stream.refuse(req.refused);
      const names = namesIn(req);
      const over = budget.take(names);
      if (over !== undefined) return stream.refuse(over);
      if (names < YIELD_ABOVE_NAMES) return stream.handleRequest(req);
      // A large request waits for a later turn of the event loop, so the pushes
      // and requests of other streams due now go first; the stream reads
      // nothing more meanwhile (HTTP/2 flow control holds the sender back).
      call.pause();
      setImmediate(() => {
        stream.handleRequest(req);
        if (!finished) call.resume();
      });
    });
    const done = (): void => stream.close();
    call.on('end', done); // the proxy half-closed
    call.on('cancelled', done); // the proxy went away
    call.on('error', (err: unknown) => {
      if (!finished) this.log.debug({ err, stream: id }, 'ADS stream error');
      finished = true;
      done();
    });
    call.on('close', done);
  }
}

function certStatus(cert: ClientCertificate): NonNullable<StreamStatus['clientCert']> {
  return {
    notBefore: new Date(cert.notBefore).toISOString(),
    notAfter: new Date(cert.notAfter).toISOString(),
    serial: cert.serial,
  };
}
