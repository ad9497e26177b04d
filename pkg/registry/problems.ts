import type { Logger } from '../logger/logger.js';
import type { Problem, ProblemReporter } from './registry.js';

function objectName(p: Problem): string | undefined {
  if (p.name === undefined) return undefined;
  return p.namespace ? `${p.namespace}/${p.name}` : p.name;
}

/** Logs each problem at warn level: file, kind, name (`ns/name`) and reason. */
export class LoggingProblemReporter implements ProblemReporter {
  constructor(private readonly logger: Logger) {}

  report(p: Problem): void {
    this.logger.warn(
      { file: p.source, kind: p.kind, name: objectName(p), reason: p.reason },
      'object skipped',
    );
  }

  resolved(source: string): void {
    this.logger.info({ file: source }, 'earlier problems resolved');
  }
}

/**
 * Keeps the current problems per source (for tests and status pages). A problem
 * reported again is kept once; all of a source's problems go when it is resolved.
 */
export class ProblemCollector implements ProblemReporter {
  private readonly bySource = new Map<string, Map<string, Problem>>();

  report(p: Problem): void {
    const list = this.bySource.get(p.source) ?? new Map<string, Problem>();
    list.set(JSON.stringify(p), p);
    this.bySource.set(p.source, list);
  }

  resolved(source: string): void {
    this.bySource.delete(source);
  }

  /** Current problems, in the order they were reported. */
  get problems(): Problem[] {
    return [...this.bySource.values()].flatMap((m) => [...m.values()]);
  }
}

/** Sends every problem to each reporter in turn (e.g. the log, Kubernetes Events, the problem book). */
export function teeReporter(...reporters: ProblemReporter[]): ProblemReporter {
  return {
    report: (p) => {
      for (const r of reporters) r.report(p);
    },
    resolved: (source) => {
      for (const r of reporters) r.resolved?.(source);
    },
  };
}
