// The controller's CA: the issuing root and the trust bundle of the persisted
// record (rotation.ts), swapped as the rotation moves. Everything downstream
// reads `trustBundlePem` and `issue` when it needs them, so a swap reaches it.
import { X509Certificate } from 'node:crypto';
import { EventEmitter } from 'node:events';
import {
  BuiltinCA,
  type BuiltinCertificateRequest,
  type BuiltinIssuedCertificate,
  type ServerCertificateOptions,
} from './builtin.js';
import type { CAKeyPair } from './ca-store.js';
import { bundlePairs, type CARecord, issuerPair, type RootInfo } from './rotation.js';
import type { CertificateAuthority } from './types.js';

export interface RotatingCAEvents {
  /** The bundle or the issuer moved (a rotation stage began or ended). */
  changed: [];
}

async function loadPair(pair: CAKeyPair, cache: Map<string, BuiltinCA>): Promise<BuiltinCA> {
  const known = cache.get(pair.certPem);
  if (known) return known;
  const ca = await BuiltinCA.fromPem(pair.certPem, pair.keyPem);
  cache.set(pair.certPem, ca);
  return ca;
}

export class RotatingCA extends EventEmitter<RotatingCAEvents> implements CertificateAuthority {
  #record: CARecord;
  #issuer: BuiltinCA;
  #roots: BuiltinCA[];
  #bundle: string;
  readonly #loaded = new Map<string, BuiltinCA>();
  #verdicts: { issuer: BuiltinCA; root: X509Certificate; byPem: Map<string, boolean> } | undefined;

  private constructor(record: CARecord, issuer: BuiltinCA, roots: BuiltinCA[]) {
    super();
    this.#record = record;
    this.#issuer = issuer;
    this.#roots = roots;
    this.#bundle = bundleOf(roots);
  }

  /** Throws (the message names the root) when a root of the record is unusable. */
  static async fromRecord(record: CARecord): Promise<RotatingCA> {
    const cache = new Map<string, BuiltinCA>();
    const roots = await Promise.all(bundlePairs(record).map((p) => loadPair(p, cache)));
    const ca = new RotatingCA(record, await loadPair(issuerPair(record), cache), roots);
    for (const [k, v] of cache) ca.#loaded.set(k, v);
    return ca;
  }

  get record(): CARecord {
    return this.#record;
  }

  /** Follows a new record; emits `changed` when the bundle or the issuer moved. */
  async apply(record: CARecord): Promise<boolean> {
    const roots = await Promise.all(bundlePairs(record).map((p) => loadPair(p, this.#loaded)));
    const issuer = await loadPair(issuerPair(record), this.#loaded);
    const bundle = bundleOf(roots);
    const moved = bundle !== this.#bundle || issuer !== this.#issuer;
    this.#record = record;
    this.#roots = roots;
    this.#issuer = issuer;
    this.#bundle = bundle;
    // Roots no longer in the record are not kept (their keys leave memory with them).
    const inUse = new Set([record.active.certPem, record.next?.certPem]);
    for (const k of this.#loaded.keys()) if (!inUse.has(k)) this.#loaded.delete(k);
    if (moved) this.emit('changed');
    return moved;
  }

  /** Every root a peer must trust now, concatenated (TLS stacks read several PEM roots from one string). */
  get trustBundlePem(): string {
    return this.#bundle;
  }

  /** The issuing root's certificate. */
  get rootCertPem(): string {
    return this.#issuer.rootCertPem;
  }

  /** The issuing root's key — only for `--workload-files` copies of the CA. */
  get rootKeyPem(): string {
    return this.#issuer.rootKeyPem;
  }

  roots(): RootInfo[] {
    return this.#roots.map((r) => {
      const x = new X509Certificate(r.rootCertPem);
      return {
        subject: x.subject,
        fingerprint: x.fingerprint256,
        notAfter: new Date(x.validTo).toISOString(),
        issuing: r === this.#issuer,
      };
    });
  }

  /**
   * Whether the current issuing root signed `certPem` (false for anything
   * unreadable). The rotation asks every second for every leaf: answers are
   * kept per issuer, so a leaf is parsed and verified once.
   */
  issuedByCurrent(certPem: string): boolean {
    const issuer = this.#issuer;
    let memo = this.#verdicts;
    if (memo?.issuer !== issuer || memo.byPem.size > MAX_VERDICTS) {
      memo = { issuer, root: new X509Certificate(issuer.rootCertPem), byPem: new Map() };
      this.#verdicts = memo;
    }
    const known = memo.byPem.get(certPem);
    if (known !== undefined) return known;
    let verdict = false;
    try {
      const x = new X509Certificate(certPem);
      const root = memo.root;
      verdict = x.checkIssued(root) && x.verify(root.publicKey);
    } catch {
      verdict = false;
    }
    memo.byPem.set(certPem, verdict);
    return verdict;
  }

  async issue(req: BuiltinCertificateRequest): Promise<BuiltinIssuedCertificate> {
    const bundle = this.#bundle;
    const cert = await this.#issuer.issue(req);
    // The leaf travels with the whole bundle: its peers may hold leaves of the other root.
    return { ...cert, caPem: bundle };
  }

  async issueServerCert(
    hosts?: string[],
    opts: ServerCertificateOptions = {},
  ): Promise<BuiltinIssuedCertificate> {
    const bundle = this.#bundle;
    const cert = await this.#issuer.issueServerCert(hosts, opts);
    return { ...cert, caPem: bundle };
  }
}

/** Leaves remembered per issuer before the memo starts over (renewals keep adding new ones). */
const MAX_VERDICTS = 20_000;

function bundleOf(roots: readonly BuiltinCA[]): string {
  return roots.map((r) => (r.rootCertPem.endsWith('\n') ? r.rootCertPem : `${r.rootCertPem}\n`)).join('');
}
