// The mTLS port's TCP connections, so the server can end one whose client
// certificate has stopped being valid. TLS checks a certificate only at the
// handshake (RFC 8446 §4.4.2.4): an HTTP/2 connection outlives the certificate
// it was opened with, and ending the gRPC stream does not help, because Envoy
// opens its next stream on the same connection. Closing the connection makes
// the proxy handshake again with what its files hold now.
import { X509Certificate } from 'node:crypto';
import type net from 'node:net';

/** Node's setTimeout fires at once beyond this (2^31 − 1 ms, ~24.8 days); longer waits re-arm. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export type CloseReason = 'certificate-expired' | 'issuer-untrusted';

interface Connection {
  readonly socket: net.Socket;
  /** The client certificate the connection's handshake verified, once a stream has shown it. */
  cert?: { der: Uint8Array; notAfter: number };
  timer?: NodeJS.Timeout;
}

/** `host:port` as grpc-js's call.getPeer() prints a TCP peer. */
export function peerKey(address: string | undefined, port: number | undefined): string | undefined {
  if (address === undefined || port === undefined) return undefined;
  return `${address}:${port}`;
}

/**
 * Open connections by peer address. The contract: `add` every accepted socket
 * before TLS starts on it; `certify` with the verified client certificate of
 * each stream authenticated on it (the first call arms the expiry; a later one
 * is a no-op, since one TLS session has one peer certificate); the socket is
 * forgotten when it closes.
 */
export class ConnectionTable {
  private readonly byPeer = new Map<string, Connection>();

  constructor(private readonly onClose: (peer: string, reason: CloseReason) => void = () => {}) {}

  get size(): number {
    return this.byPeer.size;
  }

  add(socket: net.Socket): void {
    const key = peerKey(socket.remoteAddress, socket.remotePort);
    if (key === undefined) return;
    const conn: Connection = { socket };
    this.byPeer.set(key, conn);
    socket.once('close', () => {
      if (conn.timer !== undefined) clearTimeout(conn.timer);
      if (this.byPeer.get(key) === conn) this.byPeer.delete(key);
    });
  }

  /** Records the client certificate a connection was opened with and ends the connection when it expires. */
  certify(peer: string, der: Buffer | undefined, notAfter: number, now = Date.now()): void {
    const conn = this.byPeer.get(peer);
    if (conn === undefined || conn.cert !== undefined || der === undefined) return;
    // A copy of exactly its size: Node hands `raw` out as a slice of an 8 KB pool slab, which
    // keeping the slice would keep whole, per connection.
    conn.cert = { der: new Uint8Array(der), notAfter };
    this.arm(peer, conn, now);
  }

  /**
   * Ends every connection whose client certificate no root of `bundlePem`
   * issued: after a root is retired (docs/certificates.md, stage 3) a proxy must
   * not keep a session that only the retired root vouches for. Returns how many.
   */
  closeUntrusted(bundlePem: string): number {
    const roots = splitPem(bundlePem).map((p) => new X509Certificate(p));
    let closed = 0;
    for (const [peer, conn] of this.byPeer) {
      if (conn.cert === undefined) continue;
      const leaf = new X509Certificate(conn.cert.der);
      if (roots.some((root) => leaf.checkIssued(root) && leaf.verify(root.publicKey))) continue;
      this.end(peer, conn, 'issuer-untrusted');
      closed++;
    }
    return closed;
  }

  private arm(peer: string, conn: Connection, now: number): void {
    const wait = conn.cert === undefined ? 0 : conn.cert.notAfter - now;
    if (wait <= 0) {
      this.end(peer, conn, 'certificate-expired');
      return;
    }
    conn.timer = setTimeout(() => this.arm(peer, conn, Date.now()), Math.min(wait, MAX_TIMER_MS));
    // A pending expiry must not keep a stopping controller alive.
    conn.timer.unref();
  }

  private end(peer: string, conn: Connection, reason: CloseReason): void {
    if (conn.timer !== undefined) clearTimeout(conn.timer);
    this.byPeer.delete(peer);
    this.onClose(peer, reason);
    conn.socket.destroy();
  }
}

function splitPem(bundle: string): string[] {
  return bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}
