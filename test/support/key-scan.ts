// Finds private-key material in log text: PEM private-key blocks (PKCS#8, PKCS#1, SEC1,
// encrypted, OpenSSH), the same PEM base64-encoded once more (a Kubernetes Secret's `data`,
// e.g. `tls.key: LS0tLS1CRUdJTi…`), and bare base64 DER keys (a PKCS#8 or PKCS#1 or SEC1
// structure that node:crypto accepts as a private key). Only a location and the kind are
// reported, never the key itself.
import { createPrivateKey } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';

export type KeyKind = 'pem' | 'base64-pem' | 'base64-der';

export interface KeyFinding {
  kind: KeyKind;
  /** What the block or structure says it is, e.g. `EC PRIVATE KEY`, `pkcs8`. */
  label: string;
}

// RFC 7468 labels: "PRIVATE KEY", "ENCRYPTED PRIVATE KEY"; OpenSSL's legacy "RSA/EC/DSA PRIVATE
// KEY"; OpenSSH's "OPENSSH PRIVATE KEY". Pino escapes newlines, so only the header is matched.
const PEM_HEADER = /-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY)-----/g;
// Base64 of "-----BEGIN" at a 3-byte boundary (the start of an encoded file).
const BASE64_PEM = /LS0tLS1CRUdJT[A-Za-z0-9+/]{20,}={0,2}/g;
// A run of base64 long enough to hold the smallest key (an Ed25519 PKCS#8 key is 48 bytes, 64
// characters). Certificates and hashes also match; each run is cheap to reject by its first bytes.
const BASE64_RUN = /[A-Za-z0-9+/]{64,}={0,2}/g;

/** Every key found in one line of log text. */
export function findKeys(line: string): KeyFinding[] {
  const found: KeyFinding[] = [];
  for (const m of line.matchAll(PEM_HEADER)) found.push({ kind: 'pem', label: m[1] ?? '' });
  for (const m of line.matchAll(BASE64_PEM)) {
    const decoded = Buffer.from(m[0], 'base64').toString('latin1');
    for (const inner of decoded.matchAll(PEM_HEADER))
      found.push({ kind: 'base64-pem', label: inner[1] ?? '' });
  }
  for (const m of line.matchAll(BASE64_RUN)) {
    const label = derPrivateKey(m[0]);
    if (label) found.push({ kind: 'base64-der', label });
  }
  return found;
}

/**
 * The DER shapes of a private key start SEQUENCE, INTEGER version: 0 for PKCS#8 (RFC 5208,
 * followed by the algorithm SEQUENCE) and PKCS#1 (RFC 8017, followed by the modulus INTEGER),
 * 1 for SEC1 (RFC 5915, followed by the key OCTET STRING) and PKCS#8 v2 (RFC 5958). A
 * certificate starts SEQUENCE, SEQUENCE instead. Whatever passes that test is confirmed by
 * parsing it as a key.
 */
function derPrivateKey(base64: string): string | undefined {
  // The first 9 bytes decide; most runs (certificates, hashes) stop here.
  const der = Buffer.from(base64.slice(0, 12), 'base64');
  if (der[0] !== 0x30) return undefined;
  const lengthBytes = (der[1] ?? 0) < 0x80 ? 0 : (der[1] ?? 0) - 0x80;
  if (lengthBytes > 2) return undefined;
  const at = 2 + lengthBytes;
  if (der[at] !== 0x02 || der[at + 1] !== 0x01) return undefined;
  const version = der[at + 2];
  const next = der[at + 3];
  const candidates: ('pkcs8' | 'pkcs1' | 'sec1')[] = [];
  if ((version === 0 || version === 1) && next === 0x30) candidates.push('pkcs8');
  if (version === 0 && next === 0x02) candidates.push('pkcs1');
  if (version === 1 && next === 0x04) candidates.push('sec1');
  for (const type of candidates) {
    try {
      createPrivateKey({ key: Buffer.from(base64, 'base64'), format: 'der', type });
      return type;
    } catch {
      // Not a key of this shape (or trailing bytes of a longer run): try the next.
    }
  }
  return undefined;
}

export interface FileFinding extends KeyFinding {
  file: string;
  line: number;
}

/** Scans every file under `dir` (recursively), line by line. */
export async function scanLogDir(
  dir: string,
): Promise<{ files: number; lines: number; findings: FileFinding[] }> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  const findings: FileFinding[] = [];
  let files = 0;
  let lines = 0;
  for (const e of entries) {
    if (!e.isFile()) continue;
    // `parentPath` from Node 20.12 on; `path` before it.
    const file = path.join((e as { parentPath?: string }).parentPath ?? e.path, e.name);
    files++;
    let n = 0;
    for await (const text of createInterface({ input: createReadStream(file), crlfDelay: Infinity })) {
      n++;
      for (const f of findKeys(text)) findings.push({ ...f, file, line: n });
    }
    lines += n;
  }
  return { files, lines, findings };
}
