import type { PolicyProblem } from '../catalog/problems.js';
import type { Logger } from '../logger/logger.js';
import type { ProblemReporter } from '../registry/registry.js';

/** Event reason of policy problems (schema and semantic ones are `InvalidObject`). */
export const POLICY_PROBLEM_CODE = 'PolicyProblem';

function describe(p: PolicyProblem): string {
  return `${p.kind} ${p.namespace ? `${p.namespace}/` : ''}${p.name}: ${p.reason}`;
}

/**
 * Logs semantic policy problems (a TrafficTarget naming a missing route group,
 * a TrafficSplit backend that does not exist, …) once when they appear and
 * once when they are gone, rather than on every view rebuild. With a reporter
 * (Kubernetes mode: Events on the object) each appearance is reported too.
 */
export class ProblemLog {
  private current = new Set<string>();

  constructor(
    private readonly log: Logger,
    private readonly reporter?: ProblemReporter,
  ) {}

  update(problems: readonly PolicyProblem[]): void {
    const next = new Set(problems.map(describe));
    for (const p of problems) {
      if (!this.current.has(describe(p))) {
        this.log.warn(
          { kind: p.kind, namespace: p.namespace, name: p.name, reason: p.reason },
          'policy problem',
        );
        this.reporter?.report({
          source: 'policy',
          kind: p.kind,
          ...(p.namespace !== undefined ? { namespace: p.namespace } : {}),
          name: p.name,
          reason: p.reason,
          code: POLICY_PROBLEM_CODE,
        });
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
