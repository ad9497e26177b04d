// Where replicas publish their root rotation evidence (replica-evidence.ts):
// one coordination.k8s.io Lease per replica, `skein-replica-<name>` in the
// control-plane namespace, the report in an annotation. A Lease because it is
// the API's object for "this holder is alive until renewTime +
// leaseDurationSeconds" (kube-node-lease does the same per node), it is small,
// and no other component reacts to it. Each replica renews its own every third
// of its duration and whenever its report changes; the leader reads them all
// and deletes those not renewed for their duration (their replica is gone).
import { hostname } from 'node:os';
import { microTime } from '../leader/elector.js';
import type { Logger } from '../logger/logger.js';
import { KubeApiError, type RequestOptions } from '../registry/kube/client.js';
import { decodeReport, type ReplicaReport, ReportLiveness, sameReport } from './replica-evidence.js';

export const REPLICA_LEASE_PREFIX = 'skein-replica-';
export const EVIDENCE_ANNOTATION = 'skein.dev/rotation-evidence';
const LABELS = { 'app.kubernetes.io/managed-by': 'skein', 'app.kubernetes.io/component': 'replica-evidence' };
const SELECTOR = Object.entries(LABELS)
  .map(([k, v]) => `${k}=${v}`)
  .join(',');

/** What the rotation driver needs of the reports (a fake in unit tests). */
export interface ReplicaEvidenceBoard {
  /** This replica's name. */
  readonly replica: string;
  /** Stores this replica's report when it changed or its renewal is due; failures are logged, not thrown. */
  publish(report: ReplicaReport): Promise<void>;
  /** The other live replicas' reports; with `collect`, gone ones are deleted. Throws when they cannot be read. */
  others(o: { collect: boolean }): Promise<ReplicaReport[]>;
  /** Withdraws this replica's report (graceful shutdown: its proxies move to the others). */
  withdraw(): Promise<void>;
}

/**
 * A replica's name: the pod's (unique in its namespace, and kept across a
 * container restart) or, outside a pod, the host's with a random suffix.
 */
export function replicaName(podName: string | undefined, random: string): string {
  if (podName) return podName;
  const host = hostname()
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40);
  return `${host || 'controller'}-${random}`;
}

/** The part of KubeClient this needs (a fake in unit tests). */
export interface LeaseRequester {
  request(method: string, path: string, options?: RequestOptions): Promise<unknown>;
}

interface LeaseItem {
  metadata?: { name?: string; resourceVersion?: string; annotations?: Record<string, string> };
  spec?: { renewTime?: string; leaseDurationSeconds?: number };
}

export interface KubeReplicaReportsOptions {
  client: LeaseRequester;
  namespace: string;
  replica: string;
  /** How long a report stands without renewal (the leader-election lease duration). */
  leaseDurationMs: number;
  logger: Logger;
  /** Monotonic ms (liveness and renewal); default performance.now. */
  monotonic?: () => number;
}

export class KubeReplicaReports implements ReplicaEvidenceBoard {
  readonly replica: string;
  readonly #o: KubeReplicaReportsOptions;
  readonly #collection: string;
  readonly #path: string;
  readonly #monotonic: () => number;
  readonly #liveness: ReportLiveness;
  #written: { report: ReplicaReport; at: number } | undefined;
  #lastProblem = '';
  /** The last renewTime written (epoch ms): each renewal must differ, or it is not seen as one. */
  #renewedAt = 0;

  constructor(o: KubeReplicaReportsOptions) {
    this.#o = o;
    this.replica = o.replica;
    this.#monotonic = o.monotonic ?? (() => performance.now());
    this.#liveness = new ReportLiveness(this.#monotonic);
    this.#collection = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(o.namespace)}/leases`;
    this.#path = `${this.#collection}/${encodeURIComponent(REPLICA_LEASE_PREFIX + o.replica)}`;
  }

  async publish(report: ReplicaReport): Promise<void> {
    const w = this.#written;
    if (sameReport(w?.report, report) && this.#monotonic() - (w?.at ?? 0) < this.#o.leaseDurationMs / 3)
      return;
    const startedAt = this.#monotonic();
    this.#renewedAt = Math.max(Date.now(), this.#renewedAt + 1);
    const body = {
      metadata: { labels: LABELS, annotations: { [EVIDENCE_ANNOTATION]: JSON.stringify(report) } },
      spec: {
        holderIdentity: this.replica,
        leaseDurationSeconds: Math.max(1, Math.ceil(this.#o.leaseDurationMs / 1000)),
        renewTime: microTime(this.#renewedAt),
      },
    };
    try {
      try {
        // A merge patch needs no resourceVersion: only this replica writes its Lease.
        await this.#o.client.request('PATCH', this.#path, {
          body,
          contentType: 'application/merge-patch+json',
        });
      } catch (err) {
        // First report, or the leader collected it while we could not renew: create it again.
        if (!(err instanceof KubeApiError && err.status === 404)) throw err;
        await this.#o.client.request('POST', this.#collection, {
          body: {
            apiVersion: 'coordination.k8s.io/v1',
            kind: 'Lease',
            ...body,
            metadata: { ...body.metadata, name: REPLICA_LEASE_PREFIX + this.replica },
          },
        });
      }
      this.#written = { report, at: startedAt };
      this.#lastProblem = '';
    } catch (err) {
      const problem = err instanceof Error ? err.message : String(err);
      // Once per distinct problem: the check runs every second.
      if (problem !== this.#lastProblem)
        this.#o.logger.warn(
          { lease: `${this.#o.namespace}/${REPLICA_LEASE_PREFIX}${this.replica}`, err: problem },
          'cannot publish this replica’s root rotation evidence; retrying',
        );
      this.#lastProblem = problem;
    }
  }

  async others({ collect }: { collect: boolean }): Promise<ReplicaReport[]> {
    const list = (await this.#o.client.request('GET', this.#collection, {
      query: { labelSelector: SELECTOR },
    })) as { items?: LeaseItem[] };
    const items = (list.items ?? []).filter((i) => i.metadata?.name?.startsWith(REPLICA_LEASE_PREFIX));
    const { live, gone } = this.#liveness.observe(
      items.map((i) => ({
        name: i.metadata?.name ?? '',
        renewTime: i.spec?.renewTime ?? '',
        durationMs: (i.spec?.leaseDurationSeconds ?? 0) * 1000,
      })),
    );
    const out: ReplicaReport[] = [];
    for (const i of items) {
      const name = i.metadata?.name ?? '';
      const replica = name.slice(REPLICA_LEASE_PREFIX.length);
      if (replica === this.replica) continue;
      if (gone.has(name)) {
        if (collect) await this.#collect(name, i.metadata?.resourceVersion);
        continue;
      }
      if (!live.has(name)) continue;
      out.push(this.#read(i, name, replica));
    }
    return out;
  }

  /** A live report that cannot be read holds the rotation (fail closed) and says why. */
  #read(i: LeaseItem, name: string, replica: string): ReplicaReport {
    const where = `Lease ${this.#o.namespace}/${name}`;
    try {
      const r = decodeReport(i.metadata?.annotations?.[EVIDENCE_ANNOTATION] ?? '', where);
      return { ...r, replica };
    } catch (err) {
      return {
        replica,
        stage: `unreadable (${(err as Error).message})`,
        proxies: 0,
        leaves: 0,
        files: 0,
        connected: 0,
        ready: false,
        waitingFor: '',
        observedAt: 0,
      };
    }
  }

  /** Deletes a gone replica's report, only if unchanged since it was listed (a renewal wins). */
  async #collect(name: string, resourceVersion: string | undefined): Promise<void> {
    try {
      await this.#o.client.request('DELETE', `${this.#collection}/${encodeURIComponent(name)}`, {
        body: { preconditions: resourceVersion !== undefined ? { resourceVersion } : {} },
      });
      this.#o.logger.info(
        { lease: `${this.#o.namespace}/${name}` },
        'replica gone: its root rotation evidence is collected',
      );
    } catch (err) {
      if (err instanceof KubeApiError && (err.status === 404 || err.status === 409)) return;
      throw err;
    }
  }

  async withdraw(): Promise<void> {
    try {
      await this.#o.client.request('DELETE', this.#path);
    } catch (err) {
      if (!(err instanceof KubeApiError && err.status === 404)) throw err;
    }
  }
}
