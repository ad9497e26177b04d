/** Where a change came from. */
export type AnnouncementKind = 'store' | 'ticker' | 'certificate' | 'config';

/**
 * "Something may have changed": proxies need their configuration recomputed.
 * Announcements carry no configuration; receivers recompute from the current
 * state, which is why coalescing many of them into one push loses nothing.
 */
export interface Announcement {
  kind: AnnouncementKind;
  /** Human-readable cause, e.g. `updated Service shop/web`, `rotated service-cert:shop/web`. */
  reason: string;
  /** Epoch milliseconds when it was published. */
  at: number;
  /** The object concerned, e.g. `Service shop/web` or a secret name. */
  subject?: string;
  /** Store version after the change (store and config announcements). */
  version?: number;
}
