/**
 * A semantic problem found while computing a MeshView: the object is valid on
 * its own but refers to something that does not exist or cannot apply. The
 * controller adds a `source` and hands it to the registry's ProblemReporter.
 */
export interface PolicyProblem {
  kind: string;
  namespace?: string;
  name: string;
  reason: string;
}

/** Collects problems while a view is built; deduplicates identical reports. */
export class ProblemList {
  private readonly seen = new Set<string>();
  readonly items: PolicyProblem[] = [];

  add(p: PolicyProblem): void {
    const key = `${p.kind}|${p.namespace ?? ''}|${p.name}|${p.reason}`;
    if (this.seen.has(key)) return;
    this.seen.add(key);
    this.items.push(p);
  }
}
