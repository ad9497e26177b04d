// Rotation of the ADS client certificate in each pod's bootstrap Secret.
//
// The webhook issues a sidecar's (or the ingress gateway's) ADS client
// certificate at admission with the MeshConfig's certificate validity. Least
// privilege forbids reading Secrets back, so when a certificate is due is
// learnt from the proxy itself: every mTLS ADS stream shows the certificate it
// was opened with (the TLS handshake proved the proxy holds its key). Once
// two thirds of that certificate's life have passed, the replica the proxy is
// connected to (only it sees the stream) issues a new one for the same CN and replaces `tls.crt`, `tls.key` and `ca.crt` in
// `skein-bootstrap-<uuid>` by a merge patch (which never creates a Secret the
// garbage collector already deleted). Kubelet swaps the mounted files
// atomically (`..data`), Envoy's file-based SDS watch reloads them, and its
// next ADS connection presents the new certificate; the ADS server ends the
// open connection when the old one expires (pkg/xds/server/connections.ts).
//
// Nothing is stored: after a restart the connected proxies show again which
// certificates are due, and a second issuance for one proxy is harmless.
import type { IssuedCertificate } from '../certificate/types.js';
import type { Logger } from '../logger/logger.js';
import type { ProxyIdentity } from '../mesh/identity.js';
import { bootstrapSecretName, SecretKey } from './constants.js';

/** A connected proxy and the validity of the certificate its ADS stream was opened with (epoch ms). */
export interface ConnectedCertificate {
  identity: ProxyIdentity;
  cert: { notBefore: number; notAfter: number };
}

/** Replaces the credentials of an existing bootstrap Secret (Kubernetes, or local-mode files). */
export interface BootstrapCredentialWriter {
  /** Rejects when the Secret does not exist (it is never created here). */
  replace(namespace: string, name: string, data: Record<string, string>): Promise<void>;
}

export interface BootstrapRotationOptions {
  /** The proxies connected over mTLS now (the ADS server's `connectedCertificates()`). */
  connected: () => Iterable<ConnectedCertificate>;
  /** Issues a client certificate for a proxy CN with the mesh's current validity. */
  issue: (commonName: string) => Promise<IssuedCertificate>;
  writer: BootstrapCredentialWriter;
  logger: Logger;
  /**
   * Milliseconds until the next check, asked after each one (default 10 s). The
   * controller passes a tenth of the mesh's validity, at most 10 s, so a short
   * validity is still renewed well before expiry.
   */
  intervalMs?: () => number;
  now?: () => number;
}

/** The proxy kinds whose credentials come from a bootstrap Secret (proxyless: through skein-agent). */
const BOOTSTRAPPED = new Set(['sidecar', 'gateway', 'grpc']);

/** Renewal at two thirds of the certificate's life: a day's certificate has eight hours for kubelet to deliver the next. */
export function renewAt(cert: { notBefore: number; notAfter: number }): number {
  return cert.notBefore + ((cert.notAfter - cert.notBefore) * 2) / 3;
}

/**
 * A root CA rotation stage (pkg/controller/ca-rotation.ts): every connected
 * proxy's Secret gets the stage's trust bundle in `ca.crt` (Envoy validates
 * the ADS server with it), and in the reissue stage a client certificate from
 * the new root as well. `key` names the stage; a new key starts over.
 */
export interface CaStage {
  key: string;
  reissue: boolean;
  bundlePem: () => string;
}

export interface RotationCounts {
  rotated: number;
  failed: number;
}

/** Keeps every connected proxy's bootstrap Secret holding a certificate that is not due. */
export class BootstrapCertRotation {
  readonly #o: BootstrapRotationOptions;
  readonly #log: Logger;
  readonly #now: () => number;
  /** proxy UUID → validity of the certificate last written for it (it may not be in use yet). */
  readonly #written = new Map<string, { notBefore: number; notAfter: number }>();
  /** proxy UUID → time before which a failed write is not retried. */
  readonly #backoff = new Map<string, { until: number; failures: number }>();
  #timer: NodeJS.Timeout | undefined;
  #stopped = true;
  #running: Promise<RotationCounts> | undefined;
  readonly totals: RotationCounts = { rotated: 0, failed: 0 };
  #caStage: CaStage | undefined;
  /** Proxy UUIDs whose Secret holds the current CA stage's content. */
  readonly #stageWritten = new Set<string>();
  #stageLastWriteAt: number | undefined;

  constructor(o: BootstrapRotationOptions) {
    this.#o = o;
    this.#log = o.logger.child({ component: 'bootstrap-rotation' });
    this.#now = o.now ?? Date.now;
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#schedule();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Follows a root rotation stage (undefined: none); writes start at once. */
  setCaStage(stage: CaStage | undefined): void {
    if (stage?.key === this.#caStage?.key) return;
    this.#caStage = stage;
    this.#stageWritten.clear();
    this.#stageLastWriteAt = undefined;
    if (stage !== undefined && !this.#stopped) void this.tick();
  }

  /** Connected proxies whose Secret does not hold the current CA stage yet, and when the last one was written. */
  caStageProgress(): { pending: number; lastWriteAt?: number } {
    let pending = 0;
    if (this.#caStage !== undefined)
      for (const { identity } of this.#o.connected())
        if (BOOTSTRAPPED.has(identity.kind) && !this.#stageWritten.has(identity.uuid)) pending++;
    return this.#stageLastWriteAt === undefined
      ? { pending }
      : { pending, lastWriteAt: this.#stageLastWriteAt };
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(
      () => void this.tick().finally(() => this.#schedule()),
      this.#o.intervalMs?.() ?? 10_000,
    );
    this.#timer.unref();
  }

  /** One pass over the connected proxies; a pass already running is joined, not doubled. */
  tick(): Promise<RotationCounts> {
    this.#running ??= this.#pass()
      .catch((err: unknown) => {
        this.#log.warn({ err }, 'bootstrap rotation pass failed');
        return { rotated: 0, failed: 0 };
      })
      .finally(() => {
        this.#running = undefined;
      });
    return this.#running;
  }

  async #pass(): Promise<RotationCounts> {
    const counts: RotationCounts = { rotated: 0, failed: 0 };
    // Every replica, leader or not, renews and writes rotation stages for the proxies connected
    // to it: only it sees their streams (a follower's proxies would otherwise never be renewed,
    // and lose their connection when the certificate expires), and each replica's rotation
    // evidence counts its own proxies' Secrets (docs/certificates.md, "Several replicas").
    // A proxy holds one stream at a time, so two replicas write one Secret only across a
    // reconnect, and a second issuance is harmless.
    const now = this.#now();
    const seen = new Set<string>();
    const due: ProxyIdentity[] = [];
    for (const { identity, cert } of this.#o.connected()) {
      if (!BOOTSTRAPPED.has(identity.kind)) continue;
      seen.add(identity.uuid);
      if (now < renewAt(cert)) continue;
      // A certificate written earlier and not due yet is waiting for the proxy's next connection.
      const written = this.#written.get(identity.uuid);
      if (written !== undefined && written.notAfter > cert.notAfter && now < renewAt(written)) continue;
      const wait = this.#backoff.get(identity.uuid);
      if (wait !== undefined && now < wait.until) continue;
      due.push(identity);
    }
    // Forget proxies that left: what they need is decided again if they come back.
    for (const uuid of this.#written.keys()) if (!seen.has(uuid)) this.#written.delete(uuid);
    for (const uuid of this.#backoff.keys()) if (!seen.has(uuid)) this.#backoff.delete(uuid);
    const stage = this.#caStage;
    const rebundle: ProxyIdentity[] = [];
    if (stage !== undefined) {
      const dueNow = new Set(due.map((d) => d.uuid));
      for (const { identity } of this.#o.connected()) {
        if (!BOOTSTRAPPED.has(identity.kind) || this.#stageWritten.has(identity.uuid)) continue;
        if (dueNow.has(identity.uuid)) continue;
        const wait = this.#backoff.get(identity.uuid);
        if (wait !== undefined && now < wait.until) continue;
        // The reissue stage replaces the client certificate too; the others only the bundle.
        if (stage.reissue) due.push(identity);
        else rebundle.push(identity);
      }
    }
    for (const identity of due) {
      if (await this.#rotate(identity)) {
        counts.rotated++;
        this.#stageDone(stage, identity);
      } else counts.failed++;
    }
    for (const identity of rebundle) {
      if (stage !== undefined && (await this.#rebundle(identity, stage))) this.#stageDone(stage, identity);
      else counts.failed++;
    }
    this.totals.rotated += counts.rotated;
    this.totals.failed += counts.failed;
    return counts;
  }

  #stageDone(stage: CaStage | undefined, identity: ProxyIdentity): void {
    if (stage === undefined || stage !== this.#caStage || this.#stageWritten.has(identity.uuid)) return;
    this.#stageWritten.add(identity.uuid);
    this.#stageLastWriteAt = this.#now();
  }

  /** Only `ca.crt`: the proxy's client certificate stays (a merge patch leaves the other keys). */
  async #rebundle(identity: ProxyIdentity, stage: CaStage): Promise<boolean> {
    const name = bootstrapSecretName(identity.uuid);
    try {
      await this.#o.writer.replace(identity.namespace, name, { [SecretKey.ca]: stage.bundlePem() });
      this.#log.info(
        { secret: `${identity.namespace}/${name}`, stage: stage.key },
        'bootstrap trust bundle rewritten',
      );
      return true;
    } catch (err) {
      this.#failed(
        identity,
        { secret: `${identity.namespace}/${name}` },
        err,
        'bootstrap trust bundle not rewritten',
      );
      return false;
    }
  }

  /** 10 s, 20 s, … up to 5 min between tries for one proxy; the others go on. */
  #failed(identity: ProxyIdentity, fields: Record<string, string>, err: unknown, msg: string): void {
    const failures = (this.#backoff.get(identity.uuid)?.failures ?? 0) + 1;
    const delay = Math.min(10_000 * 2 ** (failures - 1), 300_000);
    this.#backoff.set(identity.uuid, { until: this.#now() + delay, failures });
    this.#log.warn(
      { ...fields, err: err instanceof Error ? err.message : String(err), retryInMs: delay },
      msg,
    );
  }

  async #rotate(identity: ProxyIdentity): Promise<boolean> {
    const name = bootstrapSecretName(identity.uuid);
    const fields = { secret: `${identity.namespace}/${name}`, proxy: identity.cn };
    try {
      const cert = await this.#o.issue(identity.cn);
      await this.#o.writer.replace(identity.namespace, name, {
        [SecretKey.cert]: cert.certPem,
        [SecretKey.key]: cert.keyPem,
        [SecretKey.ca]: cert.caPem,
      });
      this.#written.set(identity.uuid, {
        notBefore: cert.notBefore.getTime(),
        notAfter: cert.notAfter.getTime(),
      });
      this.#backoff.delete(identity.uuid);
      this.#log.info(
        { ...fields, serial: cert.serialNumber, notAfter: cert.notAfter.toISOString() },
        'bootstrap client certificate rotated',
      );
      return true;
    } catch (err) {
      this.#failed(identity, fields, err, 'bootstrap client certificate not rotated');
      return false;
    }
  }
}
