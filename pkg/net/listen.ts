import type { Server } from 'node:net';

/**
 * Starts `server` listening on host:port and resolves with the bound port
 * (port 0 = an ephemeral one, which is what tests and the CLI ask for). A bind
 * failure (EADDRINUSE, EACCES) rejects instead of surfacing as an unhandled
 * 'error' event; the listener is removed once bound so a later error goes to
 * whoever owns the server. `backlog` (pending connections; Node's default
 * is 511, the kernel caps it at net.core.somaxconn) matters where thousands
 * of clients connect at once.
 */
export async function listenTcp(
  server: Server,
  port: number,
  host: string,
  backlog?: number,
): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host, ...(backlog !== undefined ? { backlog } : {}) }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('server is not on a TCP port');
  return address.port;
}
