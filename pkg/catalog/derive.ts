// Derived answers: a pure function of a MeshView that consumers compute once
// per view and that, like the view's own answers, is the very same object
// while its inputs are unchanged (memoised on their identity). A view that
// tracks what is read from it (pkg/xds/cache/deps.ts) records a derived answer
// as one question instead of every read behind it, and computes it on the
// view it wraps, so per-view caches of the computation keep working.
import type { MeshView } from './types.js';

/** A MeshView that records derived answers itself. */
export interface DerivingView extends MeshView {
  derived<T>(name: string, compute: (view: MeshView) => T): T;
}

function isDeriving(view: MeshView): view is DerivingView {
  return 'derived' in view && typeof view.derived === 'function';
}

/**
 * `compute(view)`, or what a deriving view makes of it. `name` must identify
 * the computation and its arguments (`compute` is kept under that name), and
 * `compute` must be a pure function of the view that returns the same object
 * for unchanged inputs; a new object only means "may have changed".
 */
export function derive<T>(view: MeshView, name: string, compute: (view: MeshView) => T): T {
  return isDeriving(view) ? view.derived(name, compute) : compute(view);
}
