import type { PolicyProblem } from '../catalog/problems.js';
import type { Logger } from '../logger/logger.js';

function describe(p: PolicyProblem): string {
  return `${p.kind} ${p.namespace ? `${p.namespace}/` : ''}${p.name}: ${p.reason}`;
}

/**
 * Logs semantic policy problems (a TrafficTarget naming a missing route group,
 * a TrafficSplit backend that does not exist, …) once when they appear and
 * once when they are gone, rather than on every view rebuild.
 */
export class ProblemLog {
  private current = new Set<string>();

  constructor(private readonly log: Logger) {}

  update(problems: readonly PolicyProblem[]): void {
    const next = new Set(problems.map(describe));
    for (const p of problems) {
      if (!this.current.has(describe(p))) {
        this.log.warn(
          { kind: p.kind, namespace: p.namespace, name: p.name, reason: p.reason },
          'policy problem',
        );
      }
    }
    for (const old of this.current)
      if (!next.has(old)) this.log.info({ problem: old }, 'policy problem resolved');
    this.current = next;
  }

  get size(): number {
    return this.current.size;
  }
}
