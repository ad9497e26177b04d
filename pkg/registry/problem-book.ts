// Every problem in force now, for the places users look (`/debug/problems`,
// the `skein_invalid_objects` and `skein_policy_problems` gauges): invalid
// objects as the registries report them, and the view's policy problems. An
// entry stays until its source is resolved (a valid version, a deletion, the
// policy fixed), and keeps the time it was first seen across repeats.
import type { PolicyProblem } from '../catalog/problems.js';
import type { GraphProblem } from '../ui/graph-types.js';
import { LAST_VALID_IN_FORCE, type Problem, type ProblemReporter } from './registry.js';

/**
 * One problem in force. The shape is the web view's `GraphProblem` itself:
 * `/debug/problems` and the page's problems panel read the same JSON, and
 * the page's types import nothing, so the type lives there.
 */
export type BookEntry = GraphProblem;

function entryKey(p: {
  source: string;
  kind?: string;
  namespace?: string;
  name?: string;
  reason: string;
}): string {
  return JSON.stringify([p.source, p.kind ?? '', p.namespace ?? '', p.name ?? '', p.reason]);
}

function inForceOf(p: Problem): string {
  if (p.reason.endsWith(LAST_VALID_IN_FORCE)) return 'the last valid version of the object';
  if (/stay in force$/.test(p.reason)) return 'the last valid versions of the objects the file held';
  return p.name === undefined ? 'nothing from this document' : 'nothing: the object is ignored';
}

export class ProblemBook implements ProblemReporter {
  private readonly invalid = new Map<string, Map<string, BookEntry>>();
  private policyEntries = new Map<string, BookEntry>();

  /** Called after every change of the entries (the web view follows them live). */
  onChange: () => void = () => {};

  constructor(private readonly now: () => number = Date.now) {}

  report(p: Problem): void {
    if (p.source === 'policy') return; // the view's own list is authoritative (setPolicy)
    const bySource = this.invalid.get(p.source) ?? new Map<string, BookEntry>();
    this.invalid.set(p.source, bySource);
    // One entry per object: a new problem with the same object replaces the old one (an
    // unnamed document-level problem is its own entry).
    const key =
      p.name === undefined ? entryKey(p) : JSON.stringify([p.kind ?? '', p.namespace ?? '', p.name]);
    if (bySource.get(key)?.reason === p.reason) return;
    queueMicrotask(() => this.onChange());
    bySource.set(key, {
      type: 'invalid-object',
      source: p.source,
      ...(p.kind !== undefined ? { kind: p.kind } : {}),
      ...(p.namespace !== undefined ? { namespace: p.namespace } : {}),
      ...(p.name !== undefined ? { name: p.name } : {}),
      reason: p.reason,
      since: new Date(this.now()).toISOString(),
      inForce: inForceOf(p),
    });
  }

  resolved(source: string): void {
    if (this.invalid.delete(source)) queueMicrotask(() => this.onChange());
  }

  /** The view's policy problems now: new ones are added, gone ones dropped, the rest keep their `since`. */
  setPolicy(problems: readonly PolicyProblem[]): void {
    const next = new Map<string, BookEntry>();
    for (const p of problems) {
      const key = entryKey({ source: 'policy', ...p });
      next.set(
        key,
        this.policyEntries.get(key) ?? {
          type: 'policy',
          source: 'policy',
          kind: p.kind,
          ...(p.namespace !== undefined ? { namespace: p.namespace } : {}),
          name: p.name,
          reason: p.reason,
          since: new Date(this.now()).toISOString(),
          inForce: 'the rest of the mesh policy; the reason says what is left out',
        },
      );
    }
    const changed =
      next.size !== this.policyEntries.size || [...next.keys()].some((k) => !this.policyEntries.has(k));
    this.policyEntries = next;
    if (changed) queueMicrotask(() => this.onChange());
  }

  /** Oldest first. */
  entries(): BookEntry[] {
    const all = [
      ...[...this.invalid.values()].flatMap((m) => [...m.values()]),
      ...this.policyEntries.values(),
    ];
    return all.sort((a, b) => a.since.localeCompare(b.since) || entryKey(a).localeCompare(entryKey(b)));
  }

  /** How many entries of a type there are per object kind (`unknown` when the problem names none). */
  countsByKind(type: BookEntry['type']): Map<string, number> {
    const out = new Map<string, number>();
    for (const e of this.entries()) {
      if (e.type !== type) continue;
      const kind = e.kind ?? 'unknown';
      out.set(kind, (out.get(kind) ?? 0) + 1);
    }
    return out;
  }
}
