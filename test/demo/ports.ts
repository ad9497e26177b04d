import { createServer } from 'node:net';

/** Resolves with the listen error code (EADDRINUSE, EADDRNOTAVAIL, ...) or undefined if the bind worked. */
function tryListen(port: number, host?: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    s.listen({ port, ...(host !== undefined ? { host } : {}), exclusive: true }, () =>
      s.close(() => resolve(undefined)),
    );
  });
}

/**
 * Why `ip:port` cannot be served, or undefined if it can. grpc-js-xds servers
 * bind their port on every interface, so the port must be free on the
 * wildcard address too, not only on `ip`.
 */
export async function portProblem(ip: string, port: number): Promise<string | undefined> {
  const specific = await tryListen(port, ip);
  if (specific) return specific;
  return tryListen(port);
}
