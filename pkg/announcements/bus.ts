import type { Logger } from '../logger/logger.js';
import { defaultLogger } from './log.js';
import type { Announcement, AnnouncementKind } from './types.js';

export type AnnouncementListener = (a: Announcement) => void;

export interface AnnouncementBusOptions {
  logger?: Logger;
  now?: () => number;
}

/**
 * The one stream every watcher publishes to (store changes, certificate
 * rotations, config changes) plus a periodic ticker that makes everything
 * converge even if a change were ever missed. Delivery is synchronous; a
 * throwing listener is logged and does not stop delivery to the others.
 */
export class AnnouncementBus {
  private readonly listeners = new Set<AnnouncementListener>();
  private ticker: NodeJS.Timeout | undefined;
  private readonly logger: Logger;
  private readonly now: () => number;

  constructor(opts: AnnouncementBusOptions = {}) {
    this.logger = opts.logger ?? defaultLogger();
    this.now = opts.now ?? Date.now;
  }

  publish(a: Announcement): void {
    // Snapshot: a listener may (un)subscribe while we deliver.
    for (const fn of [...this.listeners]) {
      try {
        fn(a);
      } catch (err) {
        this.logger.error({ err, announcement: a }, 'announcement listener failed');
      }
    }
  }

  /** Publishes an announcement stamped with the current time. */
  announce(
    kind: AnnouncementKind,
    reason: string,
    extra: Pick<Announcement, 'subject' | 'version'> = {},
  ): void {
    this.publish({ kind, reason, at: this.now(), ...extra });
  }

  subscribe(fn: AnnouncementListener): () => void {
    // Wrap so subscribing the same function twice yields two independent subscriptions.
    const wrapped: AnnouncementListener = (a) => fn(a);
    this.listeners.add(wrapped);
    return () => {
      this.listeners.delete(wrapped);
    };
  }

  get subscriberCount(): number {
    return this.listeners.size;
  }

  /** Starts (or restarts) the ticker; its timer does not keep the process alive. */
  startTicker(intervalMs = 60_000): void {
    this.stop();
    this.ticker = setInterval(
      () => this.announce('ticker', `periodic resync every ${intervalMs} ms`),
      intervalMs,
    );
    this.ticker.unref();
  }

  /** Stops the ticker; subscriptions stay (their owners end them). */
  stop(): void {
    if (this.ticker) clearInterval(this.ticker);
    this.ticker = undefined;
  }
}
