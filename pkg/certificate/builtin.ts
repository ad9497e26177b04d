import {
  createPrivateKey,
  createPublicKey,
  KeyObject,
  X509Certificate as NodeX509Certificate,
  randomBytes,
  webcrypto,
} from 'node:crypto';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { join } from 'node:path';
import type * as X509 from '@peculiar/x509';
import { keyIdOfSpki, subjectKeyIdOf, subjectNameDer } from './der-read.js';
import { authorityKeyIdExtension, createEcRoot, issueEcLeaf, type LeafIssuer } from './leaf-der.js';
import type { CertificateAuthority, CertificateRequest, IssuedCertificate } from './types.js';

export const DEFAULT_CA_COMMON_NAME = 'skein-ca';
export const DEFAULT_ROOT_VALIDITY_MS = 10 * 365 * 24 * 60 * 60 * 1000;
export const DEFAULT_SERVER_CERT_VALIDITY_MS = 365 * 24 * 60 * 60 * 1000;
/** Certificates start this far in the past so peers with a slightly slow clock accept them. */
export const CLOCK_SKEW_MS = 60 * 1000;
export const CA_CERT_FILE = 'ca.crt';
export const CA_KEY_FILE = 'ca.key';

export interface BuiltinCAOptions {
  commonName?: string;
  /** Validity of a newly created root; default 10 years. */
  validityMs?: number;
}

/** The built-in CA also accepts IP SANs (loopback TLS needs them; DNS `localhost` is not enough). */
export interface BuiltinCertificateRequest extends CertificateRequest {
  ipSans?: string[];
}

export interface BuiltinIssuedCertificate extends IssuedCertificate {
  ipSans: string[];
}

export interface ServerCertificateOptions {
  commonName?: string;
  validityMs?: number;
  usage?: CertificateRequest['usage'];
}

/** A CA file pair that cannot be used; never replaced automatically, so an operator must act. */
export class CAFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CAFileError';
  }
}

// The crypto provider is passed explicitly to @peculiar/x509 so nothing depends on a global.
const crypto = webcrypto;

const LEAF_KEY_ALGORITHM: webcrypto.EcKeyGenParams = { name: 'ECDSA', namedCurve: 'P-256' };

/** How a CA key signs: derived from the key, so a user-supplied RSA or P-384 root works too. */
interface SigningProfile {
  importAlgorithm: webcrypto.EcKeyImportParams | webcrypto.RsaHashedImportParams;
  signingAlgorithm: webcrypto.EcdsaParams | webcrypto.Algorithm;
}

function signingProfile(key: KeyObject): SigningProfile {
  if (key.asymmetricKeyType === 'ec') {
    const curve = key.asymmetricKeyDetails?.namedCurve;
    if (curve === 'prime256v1' || curve === 'P-256') {
      return {
        importAlgorithm: { name: 'ECDSA', namedCurve: 'P-256' },
        signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' } satisfies webcrypto.EcdsaParams,
      };
    }
    if (curve === 'secp384r1' || curve === 'P-384') {
      return {
        importAlgorithm: { name: 'ECDSA', namedCurve: 'P-384' },
        signingAlgorithm: { name: 'ECDSA', hash: 'SHA-384' } satisfies webcrypto.EcdsaParams,
      };
    }
    throw new Error(`unsupported CA key curve ${String(curve)} (want P-256 or P-384)`);
  }
  if (key.asymmetricKeyType === 'rsa') {
    return {
      importAlgorithm: { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' },
      signingAlgorithm: { name: 'RSASSA-PKCS1-v1_5' },
    };
  }
  throw new Error(`unsupported CA key type ${String(key.asymmetricKeyType)} (want EC or RSA)`);
}

function pkcs8Pem(key: webcrypto.CryptoKey): string {
  return String(KeyObject.from(key).export({ type: 'pkcs8', format: 'pem' }));
}

/** RFC 5280 §4.1.2.2: a positive serial of at most 20 octets; 128 random bits, top bit clear. */
/**
 * @peculiar/x509 for roots that are not ECDSA P-256 (the general path of issue()),
 * imported on first use: with its ASN.1 schemas it costs ~9 MB of RSS, and the
 * default root never needs it (leaf-der.ts).
 */
async function loadX509(): Promise<typeof X509> {
  // Must precede '@peculiar/x509': tsyringe checks for Reflect metadata at load time.
  await import('./reflect-shim.js');
  return import('@peculiar/x509');
}

function randomSerial(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] ?? 0) & 0x7f || 0x01;
  return bytes.toString('hex');
}

function spkiDer(key: KeyObject): Buffer {
  return key.export({ type: 'spki', format: 'der' });
}

async function fileExists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (err) {
    if (err instanceof Error && 'code' in err && err.code === 'ENOENT') return false;
    throw err;
  }
}

/** Write-then-rename so a concurrent reader sees the old file or the new one, never a torn one. */
export async function writeFileAtomic(path: string, data: string, mode: number): Promise<void> {
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    await writeFile(tmp, data, { mode });
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

/**
 * skein's built-in certificate authority: one self-signed root (ECDSA P-256 by
 * default) that signs every workload, proxy and control-plane certificate.
 */
export class BuiltinCA implements CertificateAuthority {
  readonly rootCertPem: string;
  readonly commonName: string;
  readonly notAfter: Date;
  readonly #keyPem: string;
  readonly #signingKey: webcrypto.CryptoKey;
  readonly #profile: SigningProfile;
  /** The root's DER. */
  readonly #certDer: Buffer;
  /** The root's key id, which every leaf names as its authority key id. */
  readonly #keyId: Buffer;
  /** The DER fast path's view of this CA; null when the root is not ECDSA P-256 (general path). */
  #leafIssuer: LeafIssuer | null | undefined;

  private constructor(args: {
    certPem: string;
    keyPem: string;
    signingKey: webcrypto.CryptoKey;
    profile: SigningProfile;
    cert: NodeX509Certificate;
    keyId: Buffer;
  }) {
    this.rootCertPem = args.certPem;
    this.#keyPem = args.keyPem;
    this.#signingKey = args.signingKey;
    this.#profile = args.profile;
    this.#certDer = args.cert.raw;
    this.#keyId = args.keyId;
    // node:crypto writes the subject one attribute per line: "CN=skein-ca\nO=skein".
    const cn = args.cert.subject.split('\n').find((line) => line.startsWith('CN='));
    this.commonName = cn?.slice(3) ?? '';
    this.notAfter = new Date(args.cert.validTo);
  }

  /** What every peer trusts. One root for now; a CA rotation would append the next root here. */
  get trustBundlePem(): string {
    return this.rootCertPem;
  }

  /** The root key, PEM PKCS#8 — only for persisting the CA (a file in local mode, a Secret in Kubernetes). */
  get rootKeyPem(): string {
    return this.#keyPem;
  }

  /** Creates a new self-signed root. */
  static async create(opts: BuiltinCAOptions = {}): Promise<BuiltinCA> {
    const commonName = opts.commonName ?? DEFAULT_CA_COMMON_NAME;
    const validityMs = opts.validityMs ?? DEFAULT_ROOT_VALIDITY_MS;
    if (!(validityMs > 0)) throw new RangeError(`CA validity must be positive, got ${validityMs}`);
    const now = Date.now();
    const { certPem, keyPem } = await createEcRoot({
      serialHex: randomSerial(),
      commonName,
      organization: 'skein',
      // X.509 times have one-second precision.
      notBefore: new Date(Math.floor((now - CLOCK_SKEW_MS) / 1000) * 1000),
      notAfter: new Date(Math.floor((now + validityMs) / 1000) * 1000),
    });
    return BuiltinCA.#load(certPem, keyPem, false);
  }

  /**
   * Loads a root certificate and its key (any PEM key format Node reads: PKCS#8,
   * SEC1, PKCS#1). Throws if the certificate is not a CA, has expired, or the key
   * does not belong to it.
   */
  static fromPem(certPem: string, keyPem: string): Promise<BuiltinCA> {
    return BuiltinCA.#load(certPem, keyPem, true);
  }

  static async #load(certPem: string, keyPem: string, requireUnexpired: boolean): Promise<BuiltinCA> {
    let nodeCert: NodeX509Certificate;
    try {
      nodeCert = new NodeX509Certificate(certPem);
    } catch (err) {
      throw new Error(`CA certificate is not a valid PEM certificate: ${(err as Error).message}`);
    }
    if (!nodeCert.ca)
      throw new Error(`certificate ${nodeCert.subject} is not a CA (basicConstraints CA:false)`);
    if (requireUnexpired && Date.parse(nodeCert.validTo) <= Date.now()) {
      throw new Error(`CA certificate ${nodeCert.subject} expired at ${nodeCert.validTo}`);
    }
    let keyObject: KeyObject;
    try {
      keyObject = createPrivateKey(keyPem);
    } catch (err) {
      throw new Error(`CA key is not a valid PEM private key: ${(err as Error).message}`);
    }
    if (!spkiDer(createPublicKey(keyObject)).equals(spkiDer(nodeCert.publicKey))) {
      throw new Error('CA key does not match the CA certificate (public keys differ)');
    }
    const profile = signingProfile(keyObject);
    const pkcs8 = keyObject.export({ type: 'pkcs8', format: 'der' });
    const signingKey = await crypto.subtle.importKey('pkcs8', pkcs8, profile.importAlgorithm, false, [
      'sign',
    ]);
    // Reuse the root's own key id so chains link the way the root announces itself;
    // a root without one gets the RFC 5280 §4.2.1.2 method 1 id of its key.
    const keyId = subjectKeyIdOf(nodeCert.raw) ?? keyIdOfSpki(spkiDer(nodeCert.publicKey));
    return new BuiltinCA({
      certPem: nodeCert.toString(),
      keyPem: String(keyObject.export({ type: 'pkcs8', format: 'pem' })),
      signingKey,
      profile,
      cert: nodeCert,
      keyId,
    });
  }

  static pathsFor(dir: string): { certFile: string; keyFile: string } {
    return { certFile: join(dir, CA_CERT_FILE), keyFile: join(dir, CA_KEY_FILE) };
  }

  /**
   * Local mode: the root lives in `<dir>/ca.crt` + `<dir>/ca.key` (0600) so
   * restarts keep trust with running proxies. Creates the pair when neither file
   * exists; a partial, corrupt, expired or mismatched pair is a CAFileError —
   * replacing it silently would orphan every certificate already issued.
   */
  static async loadOrCreate(dir: string, opts: BuiltinCAOptions = {}): Promise<BuiltinCA> {
    const { certFile, keyFile } = BuiltinCA.pathsFor(dir);
    const [hasCert, hasKey] = await Promise.all([fileExists(certFile), fileExists(keyFile)]);
    const remedy = `remove both ${certFile} and ${keyFile} to create a new CA (certificates issued by the old one stop being trusted)`;
    if (hasCert && hasKey) {
      const [certPem, keyPem] = await Promise.all([readFile(certFile, 'utf8'), readFile(keyFile, 'utf8')]);
      try {
        return await BuiltinCA.fromPem(certPem, keyPem);
      } catch (err) {
        throw new CAFileError(`cannot use the CA in ${dir}: ${(err as Error).message}; ${remedy}`);
      }
    }
    if (hasCert || hasKey) {
      const missing = hasCert ? keyFile : certFile;
      throw new CAFileError(`incomplete CA in ${dir}: ${missing} is missing; ${remedy}`);
    }
    const ca = await BuiltinCA.create(opts);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    // Key first: a crash in between leaves a key without a certificate, which is reported above.
    await writeFileAtomic(keyFile, ca.rootKeyPem, 0o600);
    await writeFileAtomic(certFile, ca.rootCertPem, 0o644);
    return ca;
  }

  async issue(req: BuiltinCertificateRequest): Promise<BuiltinIssuedCertificate> {
    if (req.commonName === '') throw new Error('certificate request without a common name');
    if (!(req.validityMs > 0) || !Number.isFinite(req.validityMs)) {
      throw new RangeError(`certificate validity must be a positive number of ms, got ${req.validityMs}`);
    }
    const uriSans = req.uriSans ?? [];
    const dnsSans = req.dnsSans ?? [];
    const ipSans = req.ipSans ?? [];
    for (const uri of uriSans) {
      if (!URL.canParse(uri)) throw new Error(`invalid URI SAN ${JSON.stringify(uri)}`);
    }
    for (const ip of ipSans) {
      if (isIP(ip) === 0) throw new Error(`invalid IP SAN ${JSON.stringify(ip)}`);
    }
    const usage = req.usage ?? 'both';

    const now = Date.now();
    // X.509 times have one-second precision: round up so the leaf lives at least validityMs,
    // but never past its root (validators reject the chain after the root expires anyway).
    const notAfter = new Date(
      Math.min(Math.ceil((now + req.validityMs) / 1000) * 1000, this.notAfter.getTime()),
    );
    const issuer = this.leafIssuer();
    if (issuer !== null) {
      const serialNumber = randomSerial();
      const notBefore = new Date(Math.floor((now - CLOCK_SKEW_MS) / 1000) * 1000);
      const { certPem, keyPem } = await issueEcLeaf(issuer, {
        serialHex: serialNumber,
        commonName: req.commonName,
        notBefore,
        notAfter,
        dnsSans,
        ipSans,
        uriSans,
        serverAuth: usage !== 'client',
        clientAuth: usage !== 'server',
      });
      return {
        commonName: req.commonName,
        certPem,
        keyPem,
        caPem: this.trustBundlePem,
        serialNumber,
        notBefore,
        notAfter,
        uriSans: [...uriSans],
        dnsSans: [...dnsSans],
        ipSans: [...ipSans],
      };
    }
    const x509 = await loadX509();
    const extKeyUsages: string[] = [];
    if (usage !== 'client') extKeyUsages.push(x509.ExtendedKeyUsage.serverAuth);
    if (usage !== 'server') extKeyUsages.push(x509.ExtendedKeyUsage.clientAuth);
    const keys = await crypto.subtle.generateKey(LEAF_KEY_ALGORITHM, true, ['sign', 'verify']);
    const names: X509.JsonGeneralName[] = [
      ...dnsSans.map((value): X509.JsonGeneralName => ({ type: 'dns', value })),
      ...ipSans.map((value): X509.JsonGeneralName => ({ type: 'ip', value })),
      ...uriSans.map((value): X509.JsonGeneralName => ({ type: 'url', value })),
    ];
    const extensions: X509.Extension[] = [
      new x509.BasicConstraintsExtension(false, undefined, true),
      // keyEncipherment is meaningless for EC keys but harmless; Go/OSM-issued certs carry it too.
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
        true,
      ),
      new x509.ExtendedKeyUsageExtension(extKeyUsages, false),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false, crypto),
      new x509.AuthorityKeyIdentifierExtension(this.#keyId.toString('hex'), false),
    ];
    // RFC 5280 §4.2.1.6: an empty SAN extension is invalid, so leave it out when there are no names.
    if (names.length > 0) extensions.push(new x509.SubjectAlternativeNameExtension(names, false));

    const cert = await x509.X509CertificateGenerator.create(
      {
        serialNumber: randomSerial(),
        subject: [{ CN: [req.commonName] }],
        issuer: new x509.X509Certificate(this.#certDer).subjectName,
        notBefore: new Date(now - CLOCK_SKEW_MS),
        notAfter,
        publicKey: keys.publicKey,
        signingKey: this.#signingKey,
        signingAlgorithm: this.#profile.signingAlgorithm,
        extensions,
      },
      crypto,
    );
    return {
      commonName: req.commonName,
      certPem: cert.toString('pem'),
      keyPem: pkcs8Pem(keys.privateKey),
      caPem: this.trustBundlePem,
      serialNumber: cert.serialNumber,
      notBefore: cert.notBefore,
      notAfter: cert.notAfter,
      uriSans: [...uriSans],
      dnsSans: [...dnsSans],
      ipSans: [...ipSans],
    };
  }

  /** What the DER fast path needs (leaf-der.ts), or null when the root's key is not ECDSA P-256. */
  private leafIssuer(): LeafIssuer | null {
    if (this.#leafIssuer !== undefined) return this.#leafIssuer;
    const key = createPrivateKey(this.#keyPem);
    const curve = key.asymmetricKeyDetails?.namedCurve;
    this.#leafIssuer =
      key.asymmetricKeyType === 'ec' && (curve === 'prime256v1' || curve === 'P-256')
        ? {
            key,
            nameDer: subjectNameDer(this.#certDer),
            authorityKeyIdDer: authorityKeyIdExtension(this.#keyId),
          }
        : null;
    return this.#leafIssuer;
  }

  /**
   * A server certificate for a control-plane endpoint (the ADS server, the
   * webhook). Each host is an IP SAN when it parses as an IP, else a DNS SAN.
   */
  issueServerCert(
    hosts: string[] = ['localhost', '127.0.0.1', '::1'],
    opts: ServerCertificateOptions = {},
  ): Promise<BuiltinIssuedCertificate> {
    return this.issue({
      commonName: opts.commonName ?? hosts[0] ?? 'skein-controller',
      dnsSans: hosts.filter((h) => isIP(h) === 0),
      ipSans: hosts.filter((h) => isIP(h) !== 0),
      validityMs: opts.validityMs ?? DEFAULT_SERVER_CERT_VALIDITY_MS,
      usage: opts.usage ?? 'server',
    });
  }
}
