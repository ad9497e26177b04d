// The pod's ADS client credentials, read from the mounted bootstrap Secret at
// each new upstream stream: kubelet swaps the files (`..data`) when the
// controller rotates the certificate, and the next stream presents the new one.
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';

export interface CredentialFiles {
  certFile: string;
  keyFile: string;
  caFile: string;
}

export interface PodCredentials {
  /** The certificate's subject CN: the proxy identity the controller will see. */
  commonName: string;
  channel: grpc.ChannelCredentials;
}

/** The single CN of a certificate subject (Node prints one attribute per line). */
export function subjectCommonName(certPem: string): string {
  const cns = new X509Certificate(certPem).subject
    .split('\n')
    .filter((line) => line.startsWith('CN='))
    .map((line) => line.slice(3));
  if (cns.length !== 1 || cns[0] === '') throw new Error('the certificate subject has no single CN');
  return cns[0] as string;
}

/** Reads the three files now; throws with the file's name when one cannot be read or parsed. */
export function readPodCredentials(f: CredentialFiles): PodCredentials {
  const read = (file: string): Buffer => {
    try {
      return readFileSync(file);
    } catch (err) {
      throw new Error(`cannot read ${file}: ${err instanceof Error ? err.message : String(err)}`);
    }
  };
  const cert = read(f.certFile);
  const key = read(f.keyFile);
  const ca = read(f.caFile);
  let commonName: string;
  try {
    commonName = subjectCommonName(cert.toString());
  } catch (err) {
    throw new Error(`${f.certFile}: ${err instanceof Error ? err.message : String(err)}`);
  }
  return { commonName, channel: grpc.credentials.createSsl(ca, key, cert) };
}
