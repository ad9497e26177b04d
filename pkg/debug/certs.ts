import type { ManagedCertificateInfo } from '../certificate/manager.js';

export interface DebugCertificate {
  identity: string;
  commonName: string;
  uriSans: string[];
  dnsSans: string[];
  serialNumber: string;
  notBefore: string;
  notAfter: string;
  renewAt: string;
}

/** `/debug/certs`: issued certificates, named field by field so a key can never slip in. */
export function buildCerts(list: readonly ManagedCertificateInfo[]): DebugCertificate[] {
  return list
    .map((c) => ({
      identity: c.identityKey,
      commonName: c.commonName,
      uriSans: [...c.uriSans],
      dnsSans: [...c.dnsSans],
      serialNumber: c.serialNumber,
      notBefore: c.notBefore.toISOString(),
      notAfter: c.notAfter.toISOString(),
      renewAt: c.renewAt.toISOString(),
    }))
    .sort((a, b) => a.identity.localeCompare(b.identity));
}
