// Keeps the caBundle of skein's MutatingWebhookConfiguration equal to skein's
// CA, so the API server trusts the webhook's serving certificate. The object
// is installed by Helm (possibly after the controller starts, possibly reset to
// an empty caBundle by an upgrade), so this is a watch, not a one-shot patch:
// list it by name, fix every webhook entry whose caBundle differs, then watch
// and fix again on every change. A missing object or missing RBAC is logged
// and retried with backoff; it never stops the controller.

import { setTimeout as sleep } from 'node:timers/promises';
import { ALWAYS_LEADER, type Leadership } from '../leader/leadership.js';
import type { Logger } from '../logger/logger.js';
import { Backoff, type BackoffOptions } from '../registry/kube/backoff.js';
import type { Query } from '../registry/kube/client.js';

export const MUTATING_WEBHOOKS_PATH = '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations';

/** The part of KubeClient this needs (a fake in tests). */
export interface KubeWatchClient {
  request(
    method: string,
    path: string,
    options?: { query?: Query; body?: unknown; contentType?: string; signal?: AbortSignal },
  ): Promise<unknown>;
  watch(
    path: string,
    query: Query,
    options: { signal?: AbortSignal; onLine: (line: unknown) => void },
  ): Promise<void>;
}

export interface CaBundleSyncOptions {
  client: KubeWatchClient;
  /** The MutatingWebhookConfiguration's name. */
  name: string;
  /** PEM of the bundle the API server must trust (read at every reconcile). */
  caBundlePem: () => string;
  logger: Logger;
  backoff?: BackoffOptions;
  /** Server-side watch timeout (default 300-600 s, jittered); the watch is then re-opened. */
  watchTimeoutSeconds?: number;
  /** Only the leader patches (it watches either way); call resync() when it becomes leader. */
  leadership?: Leadership;
}

export type CaBundleState = 'starting' | 'current' | 'missing' | 'failing';

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Names of the webhook entries whose clientConfig.caBundle is not `want` (base64). */
export function staleWebhooks(config: unknown, want: string): string[] {
  const webhooks = isRecord(config) ? config['webhooks'] : undefined;
  if (!Array.isArray(webhooks)) return [];
  const stale: string[] = [];
  for (const w of webhooks) {
    if (!isRecord(w) || typeof w['name'] !== 'string') continue;
    const cc = w['clientConfig'];
    if (!isRecord(cc) || cc['caBundle'] !== want) stale.push(w['name']);
  }
  return stale;
}

export class CaBundleSync {
  #currentFor: string | undefined;
  readonly #o: CaBundleSyncOptions;
  readonly #log: Logger;
  readonly #backoff: Backoff;
  readonly #stop = new AbortController();
  /** Aborts the current list+watch round so the next one reconciles at once. */
  #round: AbortController | undefined;
  #loop: Promise<void> | undefined;
  #state: CaBundleState = 'starting';
  #lastProblem = '';
  #patches = 0;

  constructor(options: CaBundleSyncOptions) {
    this.#o = options;
    this.#log = options.logger.child({ component: 'ca-bundle', webhookConfiguration: options.name });
    this.#backoff = new Backoff(options.backoff);
  }

  get state(): CaBundleState {
    return this.#state;
  }

  /**
   * Whether the webhook configuration was last seen holding `pem` (a root
   * rotation waits for it). No configuration to keep ('missing') holds nothing
   * that could go stale, so it counts as holding it.
   */
  holds(pem: string): boolean {
    return this.#state === 'missing' || this.#currentFor === Buffer.from(pem).toString('base64');
  }

  /** PATCH requests that succeeded (tests). */
  get patches(): number {
    return this.#patches;
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  /** The CA bundle changed: reconcile now instead of at the next watch event. */
  resync(): void {
    this.#round?.abort(new Error('CA bundle changed'));
  }

  async stop(): Promise<void> {
    this.#stop.abort(new Error('stopped'));
    await this.#loop;
  }

  async #run(): Promise<void> {
    while (!this.#stop.signal.aborted) {
      const round = new AbortController();
      this.#round = round;
      // AbortSignal.any: aborted when the first of these is (a DOM API, not a TypeScript any).
      const signal = AbortSignal.any([this.#stop.signal, round.signal]);
      try {
        await this.#listAndWatch(signal);
      } catch (err) {
        if (this.#stop.signal.aborted) return;
        // A resync aborts the round on purpose: go again without waiting.
        if (round.signal.aborted) continue;
        this.#problem(
          'failing',
          `cannot keep caBundle current: ${err instanceof Error ? err.message : String(err)}`,
        );
        try {
          await sleep(this.#backoff.next(), undefined, { signal: this.#stop.signal });
        } catch {
          return;
        }
      }
    }
  }

  async #listAndWatch(signal: AbortSignal): Promise<void> {
    const fieldSelector = `metadata.name=${this.#o.name}`;
    const list = await this.#o.client.request('GET', MUTATING_WEBHOOKS_PATH, {
      query: { fieldSelector },
      signal,
    });
    const meta = isRecord(list) ? list['metadata'] : undefined;
    const items = isRecord(list) && Array.isArray(list['items']) ? list['items'] : [];
    const resourceVersion =
      isRecord(meta) && typeof meta['resourceVersion'] === 'string' ? meta['resourceVersion'] : undefined;
    const current: unknown = items[0];
    if (current === undefined) {
      this.#problem(
        'missing',
        `MutatingWebhookConfiguration ${this.#o.name} not found: pods are not injected until it is installed (helm install creates it); watching for it`,
      );
    } else {
      await this.#reconcile(current, signal);
    }
    this.#backoff.reset();
    // Reconciles run one at a time, in event order; a failure ends the watch and the round.
    let chain: Promise<void> = Promise.resolve();
    let failure: unknown;
    const watchAbort = new AbortController();
    // AbortSignal.any: aborted when the first of these is (a DOM API, not a TypeScript any).
    const watchSignal = AbortSignal.any([signal, watchAbort.signal]);
    const timeout = this.#o.watchTimeoutSeconds ?? 300 + Math.floor(Math.random() * 300);
    await this.#o.client
      .watch(
        MUTATING_WEBHOOKS_PATH,
        { fieldSelector, timeoutSeconds: timeout, ...(resourceVersion ? { resourceVersion } : {}) },
        {
          signal: watchSignal,
          onLine: (event) => {
            const type = isRecord(event) ? event['type'] : undefined;
            const object = isRecord(event) ? event['object'] : undefined;
            if (type === 'ERROR') {
              const message = isRecord(object) ? String(object['message']) : 'watch error';
              throw new Error(`watch: ${message}`);
            }
            if (type === 'DELETED') {
              this.#problem(
                'missing',
                `MutatingWebhookConfiguration ${this.#o.name} was deleted; watching for it`,
              );
              return;
            }
            if (type !== 'ADDED' && type !== 'MODIFIED') return;
            chain = chain.then(() =>
              this.#reconcile(object, watchSignal).catch((err: unknown) => {
                failure = err;
                watchAbort.abort(err);
              }),
            );
          },
        },
      )
      .catch((err: unknown) => {
        if (failure === undefined) throw err;
      });
    await chain;
    if (failure !== undefined) throw failure;
  }

  async #reconcile(config: unknown, signal: AbortSignal): Promise<void> {
    const want = Buffer.from(this.#o.caBundlePem()).toString('base64');
    const stale = staleWebhooks(config, want);
    if (stale.length > 0 && !(this.#o.leadership ?? ALWAYS_LEADER).isLeader) {
      // Every replica watches; only the leader writes (resync() when it becomes one).
      this.#log.debug({ webhooks: stale }, 'caBundle stale; the leader patches it');
      return;
    }
    if (stale.length > 0) {
      // Strategic merge on `webhooks` (merge key: name) touches only caBundle of the
      // named entries; entries added concurrently (e.g. by helm) are left alone.
      await this.#o.client.request('PATCH', `${MUTATING_WEBHOOKS_PATH}/${encodeURIComponent(this.#o.name)}`, {
        body: { webhooks: stale.map((name) => ({ name, clientConfig: { caBundle: want } })) },
        contentType: 'application/strategic-merge-patch+json',
        signal,
      });
      this.#patches++;
      this.#log.info({ webhooks: stale }, 'caBundle updated');
    }
    if (this.#state !== 'current') this.#log.info('webhook configuration trusts the current CA');
    this.#state = 'current';
    this.#currentFor = want;
    this.#lastProblem = '';
  }

  /** Logged as a warning once per distinct problem (retries of the same one at debug). */
  #problem(state: CaBundleState, message: string): void {
    this.#state = state;
    if (message === this.#lastProblem) this.#log.debug(message);
    else this.#log.warn(message);
    this.#lastProblem = message;
  }
}
