// A self-signed RSA-2048 root written by @peculiar/x509, as a user might bring their own CA:
// the certificate tests' case for a root skein does not write itself (leaf-der.ts writes P-256).
import { createPrivateKey, webcrypto } from 'node:crypto';
import '../../pkg/certificate/reflect-shim.js';
import * as x509 from '@peculiar/x509';

const RSA = {
  name: 'RSASSA-PKCS1-v1_5',
  hash: 'SHA-256',
  publicExponent: new Uint8Array([1, 0, 1]),
  modulusLength: 2048,
};

export interface RsaRootOptions {
  name: string;
  serialNumber: string;
  notBefore: Date;
  notAfter: Date;
  extensions?: x509.Extension[];
}

/** The root's certificate (CA, keyCertSign, its key id, then `extensions`) and its key as PKCS#8 PEM. */
export async function rsaRoot(o: RsaRootOptions): Promise<{ cert: x509.X509Certificate; keyPem: string }> {
  const keys = await webcrypto.subtle.generateKey(RSA, true, ['sign', 'verify']);
  const cert = await x509.X509CertificateGenerator.createSelfSigned(
    {
      ...o,
      keys,
      signingAlgorithm: RSA,
      extensions: [
        new x509.BasicConstraintsExtension(true, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false, webcrypto),
        ...(o.extensions ?? []),
      ],
    },
    webcrypto,
  );
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  const keyPem = createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' }).export({
    type: 'pkcs8',
    format: 'pem',
  });
  return { cert, keyPem: String(keyPem) };
}
