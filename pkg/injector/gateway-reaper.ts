// Gateway pods admitted without their identity. The chart's gateway webhook
// entry fails open (failurePolicy Ignore): Helm creates the gateway's
// Deployment together with the controller, and a refused create would put its
// ReplicaSet into exponential backoff. A pod admitted before the webhook could
// answer has no bootstrap, so its Envoy exits at start and it can never serve;
// deleting it makes its ReplicaSet create another, through the webhook.

import { ALWAYS_LEADER, type Leadership } from '../leader/leadership.js';
import type { Logger } from '../logger/logger.js';
import { LABEL_PROXY_UUID } from '../mesh/constants.js';
import type { Pod } from '../model/objects.js';

export interface GatewayReaperOptions {
  /**
   * Deletes the named pod of the control-plane namespace; resolves when it is
   * deleted or already gone, rejects when it may still be there (it is retried).
   */
  deletePod(name: string): Promise<void>;
  /**
   * At most one deletion per this many ms. Without the webhook's gateway entry
   * every replacement is unidentified too; the spacing keeps that from becoming
   * a tight loop with the ReplicaSet.
   */
  spacingMs?: number;
  /**
   * Deleting is singleton work: only the leader deletes; a follower keeps its
   * queue and deletes once `leadershipGained` is called. Default: always leader.
   */
  leadership?: Leadership;
  logger: Logger;
}

/**
 * Deletes, one at a time and spaced, every gateway pod seen without a proxy
 * UUID. A pod is queued until deleted or gone, so a pod seen while the spacing
 * holds is not forgotten (its next watch event may be minutes away, in
 * CrashLoopBackOff). Pods already being deleted are left alone.
 */
export class UnidentifiedGatewayReaper {
  readonly #o: GatewayReaperOptions;
  readonly #spacingMs: number;
  readonly #leadership: Leadership;
  readonly #queued = new Set<string>();
  #lastDelete = Number.NEGATIVE_INFINITY;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(o: GatewayReaperOptions) {
    this.#o = o;
    this.#spacingMs = o.spacingMs ?? 5_000;
    this.#leadership = o.leadership ?? ALWAYS_LEADER;
  }

  /** This replica became leader: delete what it queued as a follower. */
  leadershipGained(): void {
    this.#schedule();
  }

  /** A gateway pod was added or changed. */
  seen(pod: Pod): void {
    const name = pod.metadata.name;
    if (
      pod.metadata.labels?.[LABEL_PROXY_UUID] !== undefined ||
      pod.metadata.deletionTimestamp !== undefined
    ) {
      this.#queued.delete(name);
      return;
    }
    this.#queued.add(name);
    this.#schedule();
  }

  /** A gateway pod is gone. */
  gone(pod: Pod): void {
    this.#queued.delete(pod.metadata.name);
  }

  /** Names waiting to be deleted. */
  get pending(): readonly string[] {
    return [...this.#queued];
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #schedule(): void {
    if (this.#stopped || this.#timer !== undefined || this.#queued.size === 0) return;
    const wait = Math.max(0, this.#lastDelete + this.#spacingMs - Date.now());
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#deleteOne();
    }, wait);
    this.#timer.unref();
  }

  #deleteOne(): void {
    const name = this.#queued.values().next().value;
    // A follower keeps the queue for when it leads (leadershipGained).
    if (name === undefined || this.#stopped || !this.#leadership.isLeader) return;
    this.#queued.delete(name);
    this.#lastDelete = Date.now();
    this.#o.logger.warn(
      { pod: name },
      'ingress gateway pod was admitted without its identity (no webhook yet); deleting it so it is recreated',
    );
    this.#o.deletePod(name).catch((err: unknown) => {
      this.#o.logger.warn({ err, pod: name }, 'could not delete the gateway pod; retrying');
      this.#queued.add(name);
      this.#schedule();
    });
    this.#schedule();
  }
}
