// Where the agent serves plaintext ADS: only places no other pod can reach.

/** A Unix socket path, or a loopback host and port. */
export type ListenAddress = { unix: string } | { host: string; port: number };

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

/**
 * Parses `unix:<path>` or `<loopback-host>:<port>`. Any other host is refused:
 * plaintext ADS trusts nothing but the socket's reach, so it must stay inside
 * the pod (its loopback, or a socket file in a volume only the pod mounts).
 */
export function parseListenAddress(value: string): ListenAddress {
  if (value.startsWith('unix:')) {
    // unix:/abs/path and unix:///abs/path (gRPC's naming) both name /abs/path.
    const path = value.slice('unix:'.length).replace(/^\/\/(?=\/)/, '');
    if (!path.startsWith('/'))
      throw new Error(`--listen ${JSON.stringify(value)}: the socket path must be absolute`);
    return { unix: path };
  }
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(value);
  const host = m?.[1] ?? m?.[2];
  const port = Number(m?.[3]);
  if (host === undefined || !Number.isInteger(port) || port > 65535)
    throw new Error(`--listen ${JSON.stringify(value)}: expected unix:<path> or <loopback-host>:<port>`);
  if (!LOOPBACK.has(host))
    throw new Error(
      `--listen ${JSON.stringify(value)}: ${host} is not a loopback address; plaintext ADS must stay inside the pod`,
    );
  return { host, port };
}

/** The address in gRPC's form, for a server bind or a client target. */
export function grpcAddress(a: ListenAddress): string {
  if ('unix' in a) return `unix:${a.unix}`;
  return a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`;
}
