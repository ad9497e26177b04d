// MeshConfig certificate.ingressGateway (OSM v1.2's field): a client
// certificate for a third-party ingress controller (NGINX, Contour), issued
// by the mesh CA so the backends' https ingress chains (lds/ingress.ts)
// validate it, written where the controller reads it — a kubernetes.io/tls
// Secret in Kubernetes mode, files under the state dir in local mode — and
// reissued before it expires. Its SANs are DNS names; an IngressBackend
// AuthenticatedPrincipal source names one of them exactly.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../logger/logger.js';
import { parseDuration } from '../mesh/duration.js';
import type { MeshConfigSpec } from '../model/objects.js';
import { KubeApiError } from '../registry/kube/client.js';
import { writeFileAtomic } from './builtin.js';
import type { KubeRequester } from './kube-secret-store.js';
import type { CertificateAuthority, IssuedCertificate } from './types.js';

export type IngressGatewaySpec = NonNullable<NonNullable<MeshConfigSpec['certificate']>['ingressGateway']>;

export const DEFAULT_INGRESS_VALIDITY_MS = 24 * 60 * 60 * 1000;
/** Reissued once this share of the validity has passed (as the workload certificates). */
const RENEW_AT = 0.75;

/** Where the certificate goes. */
export interface IngressCertSink {
  write(target: IngressGatewaySpec['secret'], cert: IssuedCertificate): Promise<void>;
}

/** The Secret's keys, as cert-manager and ingress-nginx's proxy-ssl-secret read them. */
export function ingressSecretData(cert: IssuedCertificate): Record<string, string> {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  return { 'tls.crt': b64(cert.certPem), 'tls.key': b64(cert.keyPem), 'ca.crt': b64(cert.caPem) };
}

/** Kubernetes mode: create the Secret, or replace its data (merge patch) when it exists; never read it. */
export class KubeIngressSecretSink implements IngressCertSink {
  constructor(private readonly client: KubeRequester) {}

  async write(target: IngressGatewaySpec['secret'], cert: IssuedCertificate): Promise<void> {
    const collection = `/api/v1/namespaces/${encodeURIComponent(target.namespace)}/secrets`;
    const metadata = {
      name: target.name,
      namespace: target.namespace,
      labels: { 'app.kubernetes.io/managed-by': 'skein', 'app.kubernetes.io/component': 'ingress-gateway' },
    };
    const data = ingressSecretData(cert);
    try {
      await this.client.request('POST', collection, {
        body: { apiVersion: 'v1', kind: 'Secret', metadata, type: 'kubernetes.io/tls', data },
      });
    } catch (err) {
      if (!(err instanceof KubeApiError && err.status === 409)) throw err;
      await this.client.request('PATCH', `${collection}/${encodeURIComponent(target.name)}`, {
        body: { metadata: { labels: metadata.labels }, data },
        contentType: 'application/merge-patch+json',
      });
    }
  }
}

/** Local mode: `<dir>/<namespace>/<name>/{tls.crt,tls.key,ca.crt}`, the key readable by its owner only. */
export class FileIngressCertSink implements IngressCertSink {
  constructor(private readonly dir: string) {}

  static pathOf(dir: string, target: IngressGatewaySpec['secret']): string {
    return path.join(dir, target.namespace, target.name);
  }

  async write(target: IngressGatewaySpec['secret'], cert: IssuedCertificate): Promise<void> {
    const d = FileIngressCertSink.pathOf(this.dir, target);
    await mkdir(d, { recursive: true });
    await writeFileAtomic(path.join(d, 'ca.crt'), cert.caPem, 0o644);
    await writeFileAtomic(path.join(d, 'tls.key'), cert.keyPem, 0o600);
    await writeFileAtomic(path.join(d, 'tls.crt'), cert.certPem, 0o644);
  }
}

export interface IngressGatewayOptions {
  ca: CertificateAuthority;
  sink: IngressCertSink;
  logger: Logger;
  /** Called after each write (metrics, tests). */
  onIssued?: (cert: IssuedCertificate) => void;
  /** Told why a write failed (the target and the reason), and undefined once one succeeds. */
  onProblem?: (problem: { secret: IngressGatewaySpec['secret']; reason: string } | undefined) => void;
}

/** What a failed write means for the operator: a Secret skein did not make is never taken over. */
export function ingressWriteProblem(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  if (err instanceof KubeApiError && (err.status === 403 || err.status === 422))
    return `cannot write the ingress client certificate: ${text} (a Secret of that name that skein did not create is never overwritten: delete it, or name another Secret in MeshConfig spec.certificate.ingressGateway.secret)`;
  return `cannot write the ingress client certificate: ${text}; retrying every 10 s`;
}

/**
 * Follows the MeshConfig: `update(spec)` on each change issues at once when
 * the spec differs from the last one, and a timer reissues at 75% of the
 * validity. A failed write is retried after 10 s.
 */
export class IngressGatewayCertificates {
  private spec: IngressGatewaySpec | undefined;
  private specKey = '';
  private timer: NodeJS.Timeout | undefined;
  private current: IssuedCertificate | undefined;
  private readonly log: Logger;

  constructor(private readonly o: IngressGatewayOptions) {
    this.log = o.logger.child({ component: 'ingress-gateway-cert' });
  }

  get certificate(): IssuedCertificate | undefined {
    return this.current;
  }

  /** The certificate of the spec in force; undefined when none is asked for. */
  get inForce(): IssuedCertificate | undefined {
    return this.spec ? this.current : undefined;
  }

  /** Reissues now (a root rotation stage moved the issuer or the bundle). */
  renewNow(): void {
    if (!this.spec) return;
    this.clear();
    void this.issue();
  }

  update(spec: IngressGatewaySpec | undefined): void {
    const key = spec ? JSON.stringify(spec) : '';
    if (key === this.specKey) return;
    this.specKey = key;
    this.spec = spec;
    this.clear();
    if (spec) void this.issue();
  }

  stop(): void {
    this.clear();
    this.spec = undefined;
  }

  private clear(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(ms: number): void {
    this.clear();
    this.timer = setTimeout(() => void this.issue(), Math.max(0, ms));
    this.timer.unref();
  }

  private async issue(): Promise<void> {
    const spec = this.spec;
    if (!spec) return;
    const key = this.specKey;
    let validityMs = DEFAULT_INGRESS_VALIDITY_MS;
    if (spec.validityDuration !== undefined) validityMs = parseDuration(spec.validityDuration);
    const [commonName = 'ingress-gateway'] = spec.subjectAltNames;
    try {
      const cert = await this.o.ca.issue({
        commonName,
        dnsSans: [...spec.subjectAltNames],
        validityMs,
        usage: 'client',
      });
      await this.o.sink.write(spec.secret, cert);
      if (key !== this.specKey) return; // the spec moved on meanwhile
      this.current = cert;
      this.log.info(
        { secret: `${spec.secret.namespace}/${spec.secret.name}`, notAfter: cert.notAfter.toISOString() },
        'ingress gateway certificate issued',
      );
      this.o.onIssued?.(cert);
      this.o.onProblem?.(undefined);
      this.schedule(validityMs * RENEW_AT);
    } catch (err) {
      if (key === this.specKey) this.o.onProblem?.({ secret: spec.secret, reason: ingressWriteProblem(err) });
      this.log.error(
        { err: err instanceof Error ? err.message : String(err) },
        'ingress gateway certificate not written; retrying in 10 s',
      );
      if (key === this.specKey) this.schedule(10_000);
    }
  }
}
