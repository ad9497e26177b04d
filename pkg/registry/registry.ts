import type { MeshStore } from './store.js';

/** A problem with one input object: reported with its name and the reason, then skipped. */
export interface Problem {
  /** Where it came from: a file path (local mode) or `kubernetes`. */
  source: string;
  kind?: string;
  namespace?: string;
  name?: string;
  reason: string;
  /** The object's apiVersion and uid, when known (a Kubernetes Event names its object by both). */
  apiVersion?: string;
  uid?: string;
  /** A short CamelCase cause, used as the Event reason (default `InvalidObject`). */
  code?: string;
}

/**
 * Appended to a problem's reason when the object's last valid version stays in
 * the store: an invalid edit never removes what was working (both registries).
 */
export const LAST_VALID_IN_FORCE = '; its last valid version stays in force';

/**
 * Receives problems. The local registry logs them; the Kubernetes registry also
 * records a Kubernetes Event on the offending object.
 */
export interface ProblemReporter {
  report(problem: Problem): void;
  /** Clears earlier problems of a source once it is valid again. */
  resolved?(source: string): void;
}

/**
 * A Registry fills a MeshStore from a source of truth (a directory of manifests,
 * or the Kubernetes API) and keeps it current.
 *
 * Contract:
 * - `start()` resolves once the store reflects the whole source (initial sync);
 *   after that every change in the source reaches the store as upserts/deletes.
 * - Only valid objects reach the store; anything else goes to the ProblemReporter
 *   and the rest of the mesh is unaffected.
 * - Endpoints are always present as EndpointSlices: a registry whose source has
 *   none (local mode) derives them from Pods and Services like Kubernetes does.
 * - `stop()` ends all watching; the store keeps its last contents.
 */
export interface Registry {
  readonly store: MeshStore;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** True once the initial sync completed and the registry is watching. */
  readonly synced: boolean;
}
