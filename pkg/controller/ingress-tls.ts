// The I/O behind the ingress gateway's TLS (pkg/certificate/ingress-tls.ts):
// a list+watch of kubernetes.io/tls Secrets, the SecretSource the generators
// read (workload certificates and those key pairs), and the problems of the
// Secrets the gateway's Ingresses name (missing, not a key pair, expired).
import type { AnnouncementBus } from '../announcements/bus.js';
import type { MeshView } from '../catalog/types.js';
import { gatewayPlan } from '../catalog/view.js';
import { decodeTlsSecret, type IngressTlsSecrets, type TlsSecretEntry } from '../certificate/ingress-tls.js';
import type { CertificateManager } from '../certificate/manager.js';
import type { SecretSource } from '../certificate/types.js';
import type { Logger } from '../logger/logger.js';
import type { KubeClient } from '../registry/kube/client.js';
import { Reflector } from '../registry/kube/reflector.js';
import type { ProblemBook } from '../registry/problem-book.js';

const PROBLEM_SOURCE = 'ingress-tls';

/** Workload certificates from the manager, Ingress key pairs from the store; one version for both. */
export function meshSecrets(certs: CertificateManager, tls: IngressTlsSecrets): SecretSource {
  return {
    get trustBundlePem() {
      return certs.trustBundlePem;
    },
    // Both only grow, so the sum moves whenever either does.
    get version() {
      return certs.version + tls.version;
    },
    serviceCertificate: (key) => certs.serviceCertificate(key),
    ingressTlsCertificate: (key) => tls.get(key),
  };
}

export interface IngressTlsWatchOptions {
  kube: KubeClient;
  store: IngressTlsSecrets;
  bus: AnnouncementBus;
  problems: ProblemBook;
  view: () => MeshView;
  logger: Logger;
}

/**
 * Watches TLS Secrets cluster-wide (RBAC list/watch on secrets, granted by
 * the chart only with the gateway on; the field selector keeps other types
 * off the wire) and keeps the gateway's problems current.
 */
export class IngressTlsWatch {
  readonly #o: IngressTlsWatchOptions;
  readonly #reflector: Reflector<TlsSecretEntry>;
  #reported = '';
  #expiryCheck: NodeJS.Timeout | undefined;

  constructor(o: IngressTlsWatchOptions) {
    this.#o = o;
    this.#reflector = new Reflector<TlsSecretEntry>({
      name: 'Secret',
      client: o.kube,
      path: '/api/v1/secrets',
      query: { fieldSelector: 'type=kubernetes.io/tls' },
      decode: (raw) => decodeTlsSecret(raw),
      handler: {
        upsert: (key, entry) => o.store.upsert(key, entry),
        delete: (key) => o.store.delete(key),
      },
      logger: o.logger,
    });
    o.store.on('change', (key) => {
      o.bus.announce('certificate', `ingress TLS Secret ${key} changed`);
      this.refreshProblems();
    });
  }

  /**
   * Starts the watch and waits for the first list, but at most `syncTimeoutMs`:
   * without RBAC for Secrets the list fails forever (retried with backoff),
   * and the rest of the mesh must not wait for the gateway's certificates.
   */
  async start(syncTimeoutMs = 10_000): Promise<void> {
    this.#reflector.start();
    let timer: NodeJS.Timeout | undefined;
    const synced = await Promise.race([
      // Rejected when stopped before the first list: no unhandled rejection after the race.
      this.#reflector.whenSynced().then(
        () => true,
        () => false,
      ),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), syncTimeoutMs);
      }),
    ]).finally(() => clearTimeout(timer));
    if (!synced)
      this.#o.logger.warn(
        { waitedMs: syncTimeoutMs },
        'kubernetes.io/tls Secrets not listed yet (does the controller have list/watch on secrets? chart: ingressGateway.enabled); the gateway serves no TLS until they are',
      );
    this.refreshProblems();
    // A certificate in force can expire without any Secret event.
    this.#expiryCheck = setInterval(() => this.refreshProblems(), 60_000);
    this.#expiryCheck.unref();
  }

  stop(): Promise<void> {
    clearInterval(this.#expiryCheck);
    return this.#reflector.stop();
  }

  /** Re-derives the problems of the Secrets the gateway's Ingresses name (after a Secret or Ingress change). */
  refreshProblems(): void {
    const wanted = gatewayPlan(this.#o.view()).tls.map((t) => t.secret);
    const issues = this.#o.store.issues(wanted);
    const digest = JSON.stringify(issues);
    if (digest === this.#reported) return;
    this.#reported = digest;
    this.#o.problems.resolved(PROBLEM_SOURCE);
    for (const i of issues) {
      const slash = i.secret.indexOf('/');
      const reason = `${i.reason}; ${i.servingPrevious ? 'the last valid certificate stays in force' : 'its hosts get no TLS at the ingress gateway'}`;
      this.#o.logger.warn({ secret: i.secret, reason }, 'ingress TLS Secret unusable');
      this.#o.problems.report({
        source: PROBLEM_SOURCE,
        kind: 'Secret',
        namespace: i.secret.slice(0, slash),
        name: i.secret.slice(slash + 1),
        reason,
        code: 'InvalidTlsSecret',
      });
    }
  }
}
