import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { LoggingProblemReporter, ProblemCollector } from './problems.js';

describe('problem reporters', () => {
  it('LoggingProblemReporter logs at warn with file, kind, name and reason', () => {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(JSON.parse(chunk.toString()));
        done();
      },
    });
    const reporter = new LoggingProblemReporter(pino({ level: 'info' }, sink));
    reporter.report({ source: 'a.yaml', kind: 'TrafficSplit', namespace: 'shop', name: 's', reason: 'bad' });
    reporter.resolved('a.yaml');
    assert.equal(lines.length, 2);
    const [warn, info] = lines;
    assert.deepEqual(
      {
        level: warn?.['level'],
        file: warn?.['file'],
        kind: warn?.['kind'],
        name: warn?.['name'],
        reason: warn?.['reason'],
      },
      { level: 40, file: 'a.yaml', kind: 'TrafficSplit', name: 'shop/s', reason: 'bad' },
    );
    assert.equal(info?.['level'], 30);
  });

  it('ProblemCollector keeps repeated problems once and drops a resolved source', () => {
    const c = new ProblemCollector();
    c.report({ source: 'a', reason: 'x' });
    c.report({ source: 'a', reason: 'x' });
    c.report({ source: 'b', reason: 'y' });
    assert.deepEqual(c.problems, [
      { source: 'a', reason: 'x' },
      { source: 'b', reason: 'y' },
    ]);
    c.resolved('a');
    assert.deepEqual(c.problems, [{ source: 'b', reason: 'y' }]);
  });
});
