import { request } from 'node:https';

/** A client certificate and key, PEM (what BuiltinCA.issue returns). */
export interface ClientCert {
  certPem: string;
  keyPem: string;
}

export interface HttpsReply {
  status: number;
  body: string;
}

export interface HttpsPost {
  port: number;
  path: string;
  /** The PEM bundle the server certificate must chain to. */
  ca: string;
  body: string;
  /** Present to authenticate with mTLS; absent to call without a client certificate. */
  client?: ClientCert | undefined;
}

/**
 * POSTs to 127.0.0.1 over TLS as a mesh client would: the server name is
 * `localhost` (the controller's serving certificate SAN), and no agent, so no
 * pooled connection keeps a test's event loop alive or reuses another
 * client's TLS session.
 */
export function postHttps(o: HttpsPost): Promise<HttpsReply> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: o.port,
        path: o.path,
        method: 'POST',
        servername: 'localhost',
        ca: o.ca,
        ...(o.client ? { cert: o.client.certPem, key: o.client.keyPem } : {}),
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      },
    );
    req.on('error', reject);
    req.end(o.body);
  });
}
