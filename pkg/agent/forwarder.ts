// The agent's ADS forwarder. A proxyless gRPC workload (grpc-js-xds) can only
// speak plaintext or google_default to its control plane (its bootstrap
// accepts no other channel_creds), so it talks to this forwarder over a Unix
// socket or loopback inside its pod; every stream is relayed, byte for byte,
// to the controller over mTLS with the pod's own certificate. The controller
// takes the identity from that certificate; the forwarder refuses a stream
// whose node.id names any other identity, so a workload can only ever be the
// pod it runs in.
import { existsSync, rmSync } from 'node:fs';
import { chmod } from 'node:fs/promises';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../logger/logger.js';
import { ADS_DELTA_PATH, ADS_SOTW_PATH } from '../xds/server/service.js';
import { grpcAddress, type ListenAddress } from './listen-address.js';
import { NODE_FIELD, nodeIdOf } from './node-id.js';
import { type CredentialFiles, type PodCredentials, readPodCredentials } from './pod-credentials.js';

export interface ForwarderOptions {
  listen: ListenAddress;
  /** `host:port` of the controller's mTLS ADS port. */
  controller: string;
  /** The name the controller's serving certificate must carry (TLS SNI and verification). */
  serverName: string;
  credentials: CredentialFiles;
  logger: Logger;
}

export interface ForwarderCounts {
  /** Streams relayed to the controller. */
  forwarded: number;
  /** Streams refused here: node.id of another identity, unreadable credentials or request. */
  refused: number;
}

const passthrough = (b: Buffer): Buffer => b;

function method(path: string, name: string): grpc.MethodDefinition<Buffer, Buffer> {
  return {
    path,
    requestStream: true,
    responseStream: true,
    requestSerialize: passthrough,
    requestDeserialize: passthrough,
    responseSerialize: passthrough,
    responseDeserialize: passthrough,
    originalName: name,
  };
}

const SOTW = method(ADS_SOTW_PATH, 'streamAggregatedResources');
const DELTA = method(ADS_DELTA_PATH, 'deltaAggregatedResources');

type Call = grpc.ServerDuplexStream<Buffer, Buffer>;

function isStatus(e: unknown): e is grpc.StatusObject {
  return typeof e === 'object' && e !== null && 'code' in e && typeof e.code === 'number';
}

export class AdsForwarder {
  readonly #o: ForwarderOptions;
  readonly #log: Logger;
  #server: grpc.Server | undefined;
  readonly counts: ForwarderCounts = { forwarded: 0, refused: 0 };

  constructor(o: ForwarderOptions) {
    this.#o = o;
    this.#log = o.logger.child({ component: 'agent' });
  }

  /** Binds the plaintext side; resolves with the TCP port (0 for a Unix socket). */
  async start(): Promise<number> {
    // The credentials must be readable before anything is served: fail at start, not per stream.
    const creds = readPodCredentials(this.#o.credentials);
    const server = new grpc.Server();
    server.addService(
      { StreamAggregatedResources: SOTW, DeltaAggregatedResources: DELTA },
      {
        StreamAggregatedResources: (call: Call) => this.#relay(call, SOTW, NODE_FIELD.sotw),
        DeltaAggregatedResources: (call: Call) => this.#relay(call, DELTA, NODE_FIELD.delta),
      },
    );
    const listen = this.#o.listen;
    // A socket file left by a previous run of this container would make the bind fail.
    if ('unix' in listen && existsSync(listen.unix)) rmSync(listen.unix);
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync(grpcAddress(listen), grpc.ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
    // Connecting to a Unix socket needs write permission on it; the app container may run
    // as another UID. The socket lives in a volume only this pod mounts: the pod is the boundary.
    if ('unix' in listen) await chmod(listen.unix, 0o666);
    this.#server = server;
    this.#log.info(
      { listen: grpcAddress(listen), controller: this.#o.controller, identity: creds.commonName },
      'agent forwarding ADS',
    );
    return port;
  }

  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    if (server === undefined) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        server.forceShutdown();
        resolve();
      }, 2_000);
      server.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  #refuse(call: Call, code: grpc.status, details: string): void {
    this.counts.refused++;
    this.#log.warn({ code: grpc.status[code] }, `refused ADS stream: ${details}`);
    call.emit('error', { code, details });
  }

  /** Waits for the first request, checks its node.id, then pipes both ways. */
  #relay(call: Call, m: grpc.MethodDefinition<Buffer, Buffer>, nodeField: number): void {
    let upstream: grpc.ClientDuplexStream<Buffer, Buffer> | undefined;
    let client: grpc.Client | undefined;
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      upstream?.cancel();
      client?.close();
    };
    call.on('cancelled', finish);
    call.on('error', finish);
    call.on('end', () => upstream?.end()); // the workload half-closed: so do we
    call.on('data', (req: Buffer) => {
      if (done) return;
      if (upstream !== undefined) {
        if (!upstream.write(req)) {
          call.pause();
          upstream.once('drain', () => call.resume());
        }
        return;
      }
      let creds: PodCredentials;
      try {
        creds = readPodCredentials(this.#o.credentials);
      } catch (err) {
        done = true;
        return this.#refuse(call, grpc.status.UNAVAILABLE, err instanceof Error ? err.message : String(err));
      }
      let nodeId: string | undefined;
      try {
        nodeId = nodeIdOf(req, nodeField);
      } catch {
        done = true;
        return this.#refuse(call, grpc.status.INVALID_ARGUMENT, 'the first request does not decode');
      }
      // xDS requires node on a stream's first request; the pod's bootstrap sets it to the CN.
      if (nodeId !== creds.commonName) {
        done = true;
        return this.#refuse(
          call,
          grpc.status.PERMISSION_DENIED,
          `node.id ${JSON.stringify(nodeId ?? null)} is not this pod's identity ${JSON.stringify(creds.commonName)}`,
        );
      }
      client = new grpc.Client(this.#o.controller, creds.channel, {
        'grpc.ssl_target_name_override': this.#o.serverName,
        'grpc.default_authority': this.#o.serverName,
      });
      const up = client.makeBidiStreamRequest(m.path, passthrough, passthrough, call.metadata);
      upstream = up;
      this.counts.forwarded++;
      up.on('data', (res: Buffer) => {
        if (!call.write(res)) {
          up.pause();
          call.once('drain', () => up.resume());
        }
      });
      up.on('error', (err: unknown) => {
        if (done) return;
        done = true;
        client?.close();
        // The controller's status (UNAUTHENTICATED, PERMISSION_DENIED, UNAVAILABLE…) reaches the workload unchanged.
        const status = isStatus(err) ? err : { code: grpc.status.UNAVAILABLE, details: String(err) };
        call.emit('error', { code: status.code, details: status.details });
      });
      up.on('end', () => {
        if (done) return;
        done = true;
        client?.close();
        call.end();
      });
      up.write(req);
    });
  }
}
