// Test helper: a throwaway CA and one leaf per workload (URI SAN = its SPIFFE
// id), written as PEM files for grpc-js-xds's file_watcher certificate
// provider (gRFC A29). Tests only: keys are short-lived and never reused.
import '../../certificate/reflect-shim.js';
import { KeyObject, webcrypto } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as x509 from '@peculiar/x509';

const crypto = webcrypto;
const KEY_ALGORITHM: webcrypto.EcKeyGenParams = { name: 'ECDSA', namedCurve: 'P-256' };
const SIGNING: webcrypto.EcdsaParams = { name: 'ECDSA', hash: 'SHA-256' };
const HOUR = 60 * 60 * 1000;

export interface CertFiles {
  certFile: string;
  keyFile: string;
  caFile: string;
}

function keyPem(key: webcrypto.CryptoKey): string {
  return String(KeyObject.from(key).export({ type: 'pkcs8', format: 'pem' }));
}

/**
 * Writes `ca.crt` and `<name>.crt`/`<name>.key` into `dir` for every
 * name → SPIFFE id. The CN is the name itself, which never equals a SPIFFE id
 * (grpc-js RBAC falls back to the CN; reference.md section 4).
 */
export async function writeTestPki(
  dir: string,
  identities: Readonly<Record<string, string>>,
): Promise<Record<string, CertFiles>> {
  const now = Date.now();
  const caKeys = await crypto.subtle.generateKey(KEY_ALGORITHM, true, ['sign', 'verify']);
  const ca = await x509.X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: '01',
      name: 'CN=skein test CA',
      notBefore: new Date(now - HOUR),
      notAfter: new Date(now + HOUR),
      keys: caKeys,
      signingAlgorithm: SIGNING,
      extensions: [
        new x509.BasicConstraintsExtension(true, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
        await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey, false, crypto),
      ],
    },
    crypto,
  );
  const caFile = join(dir, 'ca.crt');
  await writeFile(caFile, ca.toString('pem'));
  const authorityKeyId = await x509.AuthorityKeyIdentifierExtension.create(ca, false, crypto);

  const out: Record<string, CertFiles> = {};
  let serial = 2;
  for (const [name, uri] of Object.entries(identities)) {
    const keys = await crypto.subtle.generateKey(KEY_ALGORITHM, true, ['sign', 'verify']);
    const leaf = await x509.X509CertificateGenerator.create(
      {
        serialNumber: (serial++).toString(16).padStart(2, '0'),
        subject: `CN=${name}`,
        issuer: ca.subject,
        notBefore: new Date(now - HOUR),
        notAfter: new Date(now + HOUR),
        publicKey: keys.publicKey,
        signingKey: caKeys.privateKey,
        signingAlgorithm: SIGNING,
        extensions: [
          new x509.BasicConstraintsExtension(false),
          new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
          // Workloads are servers and clients at once.
          new x509.ExtendedKeyUsageExtension([
            x509.ExtendedKeyUsage.serverAuth,
            x509.ExtendedKeyUsage.clientAuth,
          ]),
          new x509.SubjectAlternativeNameExtension([{ type: 'url', value: uri }]),
          authorityKeyId,
        ],
      },
      crypto,
    );
    const files: CertFiles = {
      certFile: join(dir, `${name}.crt`),
      keyFile: join(dir, `${name}.key`),
      caFile,
    };
    await writeFile(files.certFile, leaf.toString('pem'));
    await writeFile(files.keyFile, keyPem(keys.privateKey), { mode: 0o600 });
    out[name] = files;
  }
  return out;
}
