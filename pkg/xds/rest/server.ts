import { createServer, type Server } from 'node:https';
import { listenTcp } from '../../net/listen.js';
import type { RestXds } from './handler.js';

export interface RestXdsTlsOptions {
  /** CA bundle client certificates must chain to (the mesh CA). */
  caPem: string;
  certPem: string;
  keyPem: string;
}

/**
 * REST xDS over HTTPS with client-certificate authentication. The TLS layer
 * asks for a certificate but lets the request through without one, so the
 * handler can refuse with a status and a message a person can act on
 * (a failed handshake tells curl users nothing).
 */
export class RestXdsServer {
  private readonly server: Server;
  private caPem: string;

  constructor(rest: RestXds, tls: RestXdsTlsOptions) {
    this.caPem = tls.caPem;
    this.server = createServer(
      {
        ca: tls.caPem,
        cert: tls.certPem,
        key: tls.keyPem,
        requestCert: true,
        // Checked per request (socket.authorized) in RestXds.handleMtls.
        rejectUnauthorized: false,
      },
      rest.handleMtls,
    );
  }

  /** Renews the serving certificate; new handshakes present it. */
  setServingCertificate(cert: { certPem: string; keyPem: string; caPem?: string }): void {
    // A root rotation moves the bundle client certificates are checked against.
    if (cert.caPem !== undefined) this.caPem = cert.caPem;
    this.server.setSecureContext({ ca: this.caPem, cert: cert.certPem, key: cert.keyPem });
  }

  /** Listens; returns the bound port (0 = ephemeral). */
  async listen(port: number, host: string): Promise<number> {
    return listenTcp(this.server, port, host);
  }

  async close(): Promise<void> {
    if (!this.server.listening) return;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
