// Reading back the certificates skein writes (leaf-der.ts), in DER (X.690),
// without an ASN.1 object model: the issuer's subject Name and key id when a
// root is loaded, and a leaf's fields when a restart adopts the certificate
// it issued before (manager.ts). node:crypto's X509Certificate costs ~100 µs
// to construct; a controller restart adopts one certificate per identity, by
// the thousand, while every proxy reconnects. Every read is bounds-checked:
// a truncated or garbled file throws MalformedDerError, never reads past the
// buffer.
import { createHash } from 'node:crypto';

export class MalformedDerError extends Error {
  constructor(what: string) {
    super(`malformed DER: ${what}`);
    this.name = 'MalformedDerError';
  }
}

/** An element: its tag, where it begins (its tag byte), where its content starts, and where it ends. */
export interface DerElement {
  tag: number;
  at: number;
  start: number;
  end: number;
}

/** The element at `at`, which must end within `limit` (X.690 §8.1: definite lengths only). */
export function element(der: Buffer, at: number, limit = der.length): DerElement {
  if (at + 2 > limit) throw new MalformedDerError(`element at ${at} past the end`);
  const tag = der[at] as number;
  let n = der[at + 1] as number;
  let start = at + 2;
  if (n & 0x80) {
    const count = n & 0x7f;
    // DER: at most 4 length bytes here (a certificate is far below 4 GB); 0x80 is indefinite.
    if (count === 0 || count > 4 || start + count > limit) throw new MalformedDerError(`length at ${at}`);
    n = 0;
    for (let i = 0; i < count; i++) n = n * 256 + (der[start + i] as number);
    start += count;
  }
  if (start + n > limit) throw new MalformedDerError(`element at ${at} longer than what holds it`);
  return { tag, at, start, end: start + n };
}

/** The element at `at`, which must carry `tag`. */
function expect(der: Buffer, at: number, tag: number, limit: number, what: string): DerElement {
  const e = element(der, at, limit);
  if (e.tag !== tag) throw new MalformedDerError(`${what}: tag 0x${e.tag.toString(16)}`);
  return e;
}

/** The TBSCertificate's fields in order (RFC 5280 §4.1), each as its element. */
interface TbsFields {
  cert: DerElement;
  tbs: DerElement;
  serial: DerElement;
  signature: DerElement;
  issuer: DerElement;
  validity: DerElement;
  subject: DerElement;
  spki: DerElement;
  /** [3] extensions' SEQUENCE, when present. */
  extensions: DerElement | undefined;
}

function tbsFields(der: Buffer): TbsFields {
  const cert = expect(der, 0, 0x30, der.length, 'Certificate');
  const tbs = expect(der, cert.start, 0x30, cert.end, 'TBSCertificate');
  let at = tbs.start;
  if (der[at] === 0xa0) at = element(der, at, tbs.end).end; // version [0]
  const serial = expect(der, at, 0x02, tbs.end, 'serialNumber');
  const signature = expect(der, serial.end, 0x30, tbs.end, 'signature');
  const issuer = expect(der, signature.end, 0x30, tbs.end, 'issuer');
  const validity = expect(der, issuer.end, 0x30, tbs.end, 'validity');
  const subject = expect(der, validity.end, 0x30, tbs.end, 'subject');
  const spki = expect(der, subject.end, 0x30, tbs.end, 'subjectPublicKeyInfo');
  let extensions: DerElement | undefined;
  for (at = spki.end; at < tbs.end; ) {
    const field = element(der, at, tbs.end);
    // [1] and [2] are unique ids; [3] holds the extensions' SEQUENCE.
    if (field.tag === 0xa3) extensions = expect(der, field.start, 0x30, field.end, 'extensions');
    at = field.end;
  }
  return { cert, tbs, serial, signature, issuer, validity, subject, spki, extensions };
}

/** The complete DER of each extension's extnValue content, by the extnID's complete DER. */
function* extensionValues(der: Buffer, list: DerElement): Generator<[id: Buffer, value: DerElement]> {
  for (let x = list.start; x < list.end; ) {
    const ext = expect(der, x, 0x30, list.end, 'Extension');
    const id = expect(der, ext.start, 0x06, ext.end, 'extnID');
    let value = element(der, id.end, ext.end);
    if (value.tag === 0x01) value = element(der, value.end, ext.end); // the critical flag
    if (value.tag !== 0x04) throw new MalformedDerError('extnValue');
    yield [der.subarray(ext.start, id.end), value];
    x = ext.end;
  }
}

const EXT_SUBJECT_KEY_ID = Buffer.from('0603551d0e', 'hex'); // 2.5.29.14
const EXT_SUBJECT_ALT_NAME = Buffer.from('0603551d11', 'hex'); // 2.5.29.17
const OID_COMMON_NAME = Buffer.from('0603550403', 'hex'); // 2.5.4.3
/** ecdsa-with-SHA256 (RFC 5758 §3.2): the AlgorithmIdentifier's complete DER, no parameters. */
export const ECDSA_WITH_SHA256_DER = Buffer.from('300a06082a8648ce3d040302', 'hex');

/** The complete DER of a certificate's subject Name (the issuer Name of what it signs, byte for byte). */
export function subjectNameDer(certDer: Buffer): Buffer {
  const { subject } = tbsFields(certDer);
  return Buffer.from(certDer.subarray(subject.at, subject.end));
}

/** The keyIdentifier of a certificate's SubjectKeyIdentifier extension (RFC 5280 §4.2.1.2), if it has one. */
export function subjectKeyIdOf(certDer: Buffer): Buffer | undefined {
  const { extensions } = tbsFields(certDer);
  if (!extensions) return undefined;
  for (const [id, value] of extensionValues(certDer, extensions)) {
    if (!id.equals(EXT_SUBJECT_KEY_ID)) continue;
    // extnValue is an OCTET STRING holding the KeyIdentifier, itself an OCTET STRING.
    const keyId = expect(certDer, value.start, 0x04, value.end, 'KeyIdentifier');
    return Buffer.from(certDer.subarray(keyId.start, keyId.end));
  }
  return undefined;
}

/** RFC 5280 §4.2.1.2 method 1: SHA-1 of the subjectPublicKey BIT STRING's bits (after its unused-bits byte). */
export function keyIdOfSpki(spki: Buffer): Buffer {
  const spkiSeq = expect(spki, 0, 0x30, spki.length, 'SubjectPublicKeyInfo');
  const algorithm = expect(spki, spkiSeq.start, 0x30, spkiSeq.end, 'algorithm');
  const bitString = expect(spki, algorithm.end, 0x03, spkiSeq.end, 'subjectPublicKey');
  return createHash('sha1')
    .update(spki.subarray(bitString.start + 1, bitString.end))
    .digest();
}

/** What adopting a leaf needs to know of it (manager.ts). */
export interface LeafFields {
  /** The TBSCertificate, complete DER: what the signature covers. */
  tbs: Buffer;
  /** The signatureAlgorithm, complete DER (ours: ECDSA_WITH_SHA256_DER). */
  signatureAlgorithm: Buffer;
  /** The signatureValue BIT STRING's bits. */
  signature: Buffer;
  /** The serial number as X509Certificate prints it, lower case: the magnitude in hex, no sign byte. */
  serialNumber: string;
  /** The issuer Name, complete DER. */
  issuer: Buffer;
  notBefore: Date;
  notAfter: Date;
  /** The subject's common name, when the subject is that one attribute and nothing else. */
  subjectCommonName: string | undefined;
  uriSans: string[];
  dnsSans: string[];
}

/** A leaf's fields (RFC 5280 §4.1); throws MalformedDerError on anything it cannot read. */
export function readLeaf(der: Buffer): LeafFields {
  const f = tbsFields(der);
  const algorithm = expect(der, f.tbs.end, 0x30, f.cert.end, 'signatureAlgorithm');
  const value = expect(der, algorithm.end, 0x03, f.cert.end, 'signatureValue');
  // A BIT STRING's first content byte counts its unused bits: none in a signature.
  if (value.end !== f.cert.end || value.start >= value.end || der[value.start] !== 0)
    throw new MalformedDerError('signatureValue');
  const validity = f.validity;
  const notBefore = element(der, validity.start, validity.end);
  const notAfter = element(der, notBefore.end, validity.end);
  const sans = f.extensions ? subjectAltNames(der, f.extensions) : { uriSans: [], dnsSans: [] };
  return {
    tbs: der.subarray(f.tbs.at, f.tbs.end),
    signatureAlgorithm: der.subarray(algorithm.at, algorithm.end),
    signature: der.subarray(value.start + 1, value.end),
    serialNumber: serialHex(der.subarray(f.serial.start, f.serial.end)),
    issuer: der.subarray(f.issuer.at, f.issuer.end),
    notBefore: timeOf(der, notBefore),
    notAfter: timeOf(der, notAfter),
    subjectCommonName: onlyCommonName(der, f.subject),
    ...sans,
  };
}

function serialHex(magnitude: Buffer): string {
  let i = 0;
  // The leading zero is the sign byte of a positive INTEGER whose top bit is set.
  while (i < magnitude.length - 1 && magnitude[i] === 0) i++;
  return magnitude.subarray(i).toString('hex');
}

const UTC_TIME = /^(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/;
const GENERALIZED_TIME = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/;

/** RFC 5280 §4.1.2.5: UTCTime (YY below 50 is 20YY) or GeneralizedTime, in UTC with seconds. */
function timeOf(der: Buffer, e: DerElement): Date {
  const text = der.toString('latin1', e.start, e.end);
  const m = e.tag === 0x17 ? UTC_TIME.exec(text) : e.tag === 0x18 ? GENERALIZED_TIME.exec(text) : null;
  if (!m) throw new MalformedDerError(`time ${JSON.stringify(text)}`);
  const [, y = '', mo = '', d = '', h = '', mi = '', sec = ''] = m;
  const year = e.tag === 0x17 ? (Number(y) < 50 ? 2000 : 1900) + Number(y) : Number(y);
  return new Date(Date.UTC(year, Number(mo) - 1, Number(d), Number(h), Number(mi), Number(sec)));
}

/** The value of a Name that is one RDN holding one commonName attribute; undefined for any other Name. */
function onlyCommonName(der: Buffer, name: DerElement): string | undefined {
  if (name.start === name.end) return undefined;
  const rdn = expect(der, name.start, 0x31, name.end, 'RelativeDistinguishedName');
  if (rdn.end !== name.end) return undefined;
  const attribute = expect(der, rdn.start, 0x30, rdn.end, 'AttributeTypeAndValue');
  if (attribute.end !== rdn.end) return undefined;
  const type = expect(der, attribute.start, 0x06, attribute.end, 'AttributeType');
  if (!der.subarray(type.at, type.end).equals(OID_COMMON_NAME)) return undefined;
  const v = element(der, type.end, attribute.end);
  if (v.end !== attribute.end) return undefined;
  // UTF8String, PrintableString, IA5String: what a common name is written in.
  if (v.tag === 0x0c) return der.toString('utf8', v.start, v.end);
  if (v.tag === 0x13 || v.tag === 0x16) return der.toString('latin1', v.start, v.end);
  return undefined;
}

/** The URI and DNS names of the SubjectAltName extension (RFC 5280 §4.2.1.6). */
function subjectAltNames(der: Buffer, extensions: DerElement): { uriSans: string[]; dnsSans: string[] } {
  const uriSans: string[] = [];
  const dnsSans: string[] = [];
  for (const [id, value] of extensionValues(der, extensions)) {
    if (!id.equals(EXT_SUBJECT_ALT_NAME)) continue;
    const names = expect(der, value.start, 0x30, value.end, 'GeneralNames');
    for (let at = names.start; at < names.end; ) {
      const n = element(der, at, names.end);
      // [6] uniformResourceIdentifier and [2] dNSName are IA5String.
      if (n.tag === 0x86) uriSans.push(der.toString('latin1', n.start, n.end));
      else if (n.tag === 0x82) dnsSans.push(der.toString('latin1', n.start, n.end));
      at = n.end;
    }
  }
  return { uriSans, dnsSans };
}

/** The DER of a PEM text's first block (a certificate file may carry its chain after it). */
export function pemDer(pem: string): Buffer {
  const begin = pem.indexOf('-----BEGIN ');
  const body = pem.indexOf('\n', begin);
  const end = pem.indexOf('-----END ', body);
  if (begin < 0 || body < 0 || end < 0) throw new MalformedDerError('not PEM');
  return Buffer.from(pem.slice(body + 1, end), 'base64');
}
