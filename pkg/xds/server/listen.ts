import net from 'node:net';
import type * as grpc from '@grpc/grpc-js';
import { listenTcp } from '../../net/listen.js';

/** Pending-connection backlog of the ADS ports (the kernel caps it at net.core.somaxconn). */
export const ADS_LISTEN_BACKLOG = 4096;

/**
 * Serves `server` on host:port from a listening socket of our own, for the sake
 * of its backlog: grpc-js listens with Node's default of 511 pending
 * connections, and when thousands of proxies reconnect at once (a controller
 * restart) the kernel drops the connections beyond it (ListenOverflows); each
 * of those proxies then waits out TCP's SYN retransmission (1 s, 3 s, 7 s, ...)
 * while the controller sits idle. Resolves with the listening socket and its
 * bound port (port 0 picks a free one). `onConnection` sees each accepted
 * socket before TLS starts on it (see ConnectionTable).
 */
export async function listenWithBacklog(
  server: grpc.Server,
  host: string,
  port: number,
  credentials: grpc.ServerCredentials,
  backlog = ADS_LISTEN_BACKLOG,
  onConnection?: (socket: net.Socket) => void,
): Promise<{ tcp: net.Server; port: number }> {
  const injector = server.createConnectionInjector(credentials);
  const tcp = net.createServer((socket) => {
    onConnection?.(socket);
    injector.injectConnection(socket);
  });
  return { tcp, port: await listenTcp(tcp, port, host, backlog) };
}
