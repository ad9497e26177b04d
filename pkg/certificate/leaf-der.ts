// A fast path for the one certificate shape skein issues by the thousand:
// an ECDSA P-256 leaf signed by an ECDSA P-256 root. The TBSCertificate is
// written directly in DER (RFC 5280 §4.1) and signed with node:crypto, which
// costs a tenth of building it through an ASN.1 object model: a controller
// restart issues one service certificate per identity while every proxy
// reconnects. The default root is written the same way, so a controller with
// a P-256 CA never loads @peculiar/x509 (~9 MB of RSS with its ASN.1 schemas);
// other key types keep the general path in builtin.ts.
import { generateKeyPair, type KeyObject, sign } from 'node:crypto';
import { isIP } from 'node:net';
import { promisify } from 'node:util';
import { keyIdOfSpki } from './der-read.js';

const generateEcKeyPair = promisify(generateKeyPair);

// --- DER writing (X.690) ---

function len(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

function tlv(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), len(body.length), body]);
}

const seq = (...c: Buffer[]): Buffer => tlv(0x30, ...c);
const set = (...c: Buffer[]): Buffer => tlv(0x31, ...c);
const octets = (b: Buffer): Buffer => tlv(0x04, b);
const bool = (v: boolean): Buffer => tlv(0x01, Buffer.from([v ? 0xff : 0x00]));
const explicit = (n: number, c: Buffer): Buffer => tlv(0xa0 | n, c);

function oid(dotted: string): Buffer {
  const parts = dotted.split('.').map(Number);
  const [a = 0, b = 0, ...rest] = parts;
  const out = [40 * a + b];
  for (const p of rest) {
    const chunk = [p & 0x7f];
    for (let v = Math.floor(p / 128); v > 0; v = Math.floor(v / 128)) chunk.unshift((v & 0x7f) | 0x80);
    out.push(...chunk);
  }
  return tlv(0x06, Buffer.from(out));
}

/** A positive INTEGER from big-endian magnitude bytes (minimal: no redundant leading zero, a zero when the top bit is set). */
function positiveInteger(magnitude: Buffer): Buffer {
  let i = 0;
  while (i < magnitude.length - 1 && magnitude[i] === 0) i++;
  const m = magnitude.subarray(i);
  return tlv(0x02, (m[0] ?? 0) & 0x80 ? Buffer.concat([Buffer.from([0]), m]) : m);
}

/** RFC 5280 §4.1.2.5: UTCTime through 2049, GeneralizedTime from 2050; always UTC, seconds, "Z". */
function time(d: Date): Buffer {
  const iso = d.toISOString(); // YYYY-MM-DDTHH:MM:SS.sssZ
  const digits = `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}Z`;
  const year = d.getUTCFullYear();
  if (year >= 1950 && year < 2050) return tlv(0x17, Buffer.from(digits.slice(2), 'ascii'));
  return tlv(0x18, Buffer.from(digits, 'ascii'));
}

// --- the certificates ---

const ECDSA_WITH_SHA256 = seq(oid('1.2.840.10045.4.3.2'));
const EXT_BASIC_CONSTRAINTS = oid('2.5.29.19');
const EXT_KEY_USAGE = oid('2.5.29.15');
const EXT_EXT_KEY_USAGE = oid('2.5.29.37');
const EXT_SUBJECT_KEY_ID = oid('2.5.29.14');
const EXT_SUBJECT_ALT_NAME = oid('2.5.29.17');
const EXT_AUTHORITY_KEY_ID = oid('2.5.29.35');
const OID_COMMON_NAME = oid('2.5.4.3');
const OID_ORGANIZATION = oid('2.5.4.10');
const SERVER_AUTH = oid('1.3.6.1.5.5.7.3.1');
const CLIENT_AUTH = oid('1.3.6.1.5.5.7.3.2');
// digitalSignature (bit 0) | keyEncipherment (bit 2): 1010 0000, the 5 low bits unused.
const KEY_USAGE_BITS = tlv(0x03, Buffer.from([0x05, 0xa0]));
// digitalSignature (bit 0) | keyCertSign (bit 5) | cRLSign (bit 6): 1000 0110, the low bit unused.
const CA_KEY_USAGE_BITS = tlv(0x03, Buffer.from([0x01, 0x86]));

function extension(id: Buffer, critical: boolean, value: Buffer): Buffer {
  return critical ? seq(id, bool(true), octets(value)) : seq(id, octets(value));
}

/** The AuthorityKeyIdentifier extension naming `keyId` (RFC 5280 §4.2.1.1), complete DER. */
export function authorityKeyIdExtension(keyId: Buffer): Buffer {
  return extension(EXT_AUTHORITY_KEY_ID, false, seq(tlv(0x80, keyId)));
}

/** Signs a TBSCertificate with an ECDSA P-256 key: the certificate as PEM. */
function signedPem(tbs: Buffer, key: KeyObject): string {
  const signature = sign('sha256', tbs, { key, dsaEncoding: 'der' });
  const cert = seq(tbs, ECDSA_WITH_SHA256, tlv(0x03, Buffer.from([0]), signature));
  const b64 = cert.toString('base64').replace(/.{64}/g, '$&\n');
  return `-----BEGIN CERTIFICATE-----\n${b64}${b64.endsWith('\n') ? '' : '\n'}-----END CERTIFICATE-----\n`;
}

const utf8 = (text: string): Buffer => tlv(0x0c, Buffer.from(text, 'utf8'));

function ipOctets(ip: string): Buffer {
  if (isIP(ip) === 4) return Buffer.from(ip.split('.').map(Number));
  // IPv6: expand '::' and write 8 groups of 16 bits.
  const [head = '', tail] = ip.split('::');
  const h = head === '' ? [] : head.split(':');
  const t = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  const out = Buffer.alloc(16);
  for (const [i, g] of groups.entries()) out.writeUInt16BE(Number.parseInt(g, 16), i * 2);
  return out;
}

export interface LeafRequest {
  serialHex: string;
  commonName: string;
  notBefore: Date;
  notAfter: Date;
  dnsSans: readonly string[];
  ipSans: readonly string[];
  uriSans: readonly string[];
  serverAuth: boolean;
  clientAuth: boolean;
}

export interface LeafIssuer {
  /** The issuer's subject Name, DER. */
  readonly nameDer: Buffer;
  /** The issuer's complete AuthorityKeyIdentifier extension, DER. */
  readonly authorityKeyIdDer: Buffer;
  /** The issuer's ECDSA P-256 private key. */
  readonly key: KeyObject;
}

/** A fresh P-256 key pair and a certificate for it signed by `issuer`: PEMs of both. */
export async function issueEcLeaf(
  issuer: LeafIssuer,
  req: LeafRequest,
): Promise<{ certPem: string; keyPem: string }> {
  const { publicKey, privateKey } = await generateEcKeyPair('ec', { namedCurve: 'P-256' });
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  const keyId = keyIdOfSpki(spki);
  const usages: Buffer[] = [];
  if (req.serverAuth) usages.push(SERVER_AUTH);
  if (req.clientAuth) usages.push(CLIENT_AUTH);
  const names = [
    ...req.dnsSans.map((d) => tlv(0x82, Buffer.from(d, 'ascii'))),
    ...req.ipSans.map((ip) => tlv(0x87, ipOctets(ip))),
    ...req.uriSans.map((u) => tlv(0x86, Buffer.from(u, 'ascii'))),
  ];
  const extensions = [
    extension(EXT_BASIC_CONSTRAINTS, true, seq()),
    extension(EXT_KEY_USAGE, true, KEY_USAGE_BITS),
    extension(EXT_EXT_KEY_USAGE, false, seq(...usages)),
    extension(EXT_SUBJECT_KEY_ID, false, octets(keyId)),
    issuer.authorityKeyIdDer,
  ];
  // RFC 5280 §4.2.1.6: no empty SAN extension.
  if (names.length > 0) extensions.push(extension(EXT_SUBJECT_ALT_NAME, false, seq(...names)));
  const tbs = seq(
    explicit(0, tlv(0x02, Buffer.from([2]))), // v3
    positiveInteger(Buffer.from(req.serialHex, 'hex')),
    ECDSA_WITH_SHA256,
    issuer.nameDer,
    seq(time(req.notBefore), time(req.notAfter)),
    seq(set(seq(OID_COMMON_NAME, utf8(req.commonName)))),
    spki,
    explicit(3, seq(...extensions)),
  );
  return {
    certPem: signedPem(tbs, issuer.key),
    keyPem: String(privateKey.export({ type: 'pkcs8', format: 'pem' })),
  };
}

export interface RootRequest {
  serialHex: string;
  commonName: string;
  organization: string;
  notBefore: Date;
  notAfter: Date;
}

/**
 * A self-signed ECDSA P-256 root: subject CN and O, CA:true (critical), key usage
 * keyCertSign, cRLSign and digitalSignature (critical), its subject key id.
 */
export async function createEcRoot(req: RootRequest): Promise<{ certPem: string; keyPem: string }> {
  const { publicKey, privateKey } = await generateEcKeyPair('ec', { namedCurve: 'P-256' });
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  const name = seq(
    set(seq(OID_COMMON_NAME, utf8(req.commonName))),
    set(seq(OID_ORGANIZATION, utf8(req.organization))),
  );
  const tbs = seq(
    explicit(0, tlv(0x02, Buffer.from([2]))), // v3
    positiveInteger(Buffer.from(req.serialHex, 'hex')),
    ECDSA_WITH_SHA256,
    name,
    seq(time(req.notBefore), time(req.notAfter)),
    name,
    spki,
    explicit(
      3,
      seq(
        extension(EXT_BASIC_CONSTRAINTS, true, seq(bool(true))),
        extension(EXT_KEY_USAGE, true, CA_KEY_USAGE_BITS),
        extension(EXT_SUBJECT_KEY_ID, false, octets(keyIdOfSpki(spki))),
      ),
    ),
  );
  return {
    certPem: signedPem(tbs, privateKey),
    keyPem: String(privateKey.export({ type: 'pkcs8', format: 'pem' })),
  };
}
