import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pino } from 'pino';
import { ProblemLog } from './problem-log.js';

test('a policy problem is logged once when it appears and once when it is resolved', () => {
  const lines: { level: number; msg: string; name?: string; problem?: string }[] = [];
  const log = pino({ level: 'info' }, { write: (s: string) => lines.push(JSON.parse(s)) });
  const problems = new ProblemLog(log);
  const missing = {
    kind: 'TrafficTarget',
    namespace: 'shop',
    name: 'a',
    reason: 'HTTPRouteGroup shop/r not found',
  };
  problems.update([missing]);
  problems.update([missing]);
  assert.equal(lines.length, 1);
  assert.equal(lines[0]?.msg, 'policy problem');
  assert.equal(lines[0]?.name, 'a');
  assert.equal(problems.size, 1);
  problems.update([]);
  assert.equal(lines.length, 2);
  assert.equal(lines[1]?.msg, 'policy problem resolved');
  assert.match(lines[1]?.problem ?? '', /TrafficTarget shop\/a: HTTPRouteGroup shop\/r not found/);
  assert.equal(problems.size, 0);
});

test('with a reporter, each appearance of a policy problem is reported once (Kubernetes Events)', () => {
  const reported: unknown[] = [];
  const problems = new ProblemLog(pino({ level: 'silent' }), { report: (p) => reported.push(p) });
  const missing = { kind: 'TrafficSplit', namespace: 'shop', name: 's', reason: 'backend shop/v2 not found' };
  problems.update([missing]);
  problems.update([missing]);
  assert.deepEqual(reported, [
    {
      source: 'policy',
      kind: 'TrafficSplit',
      namespace: 'shop',
      name: 's',
      reason: 'backend shop/v2 not found',
      code: 'PolicyProblem',
    },
  ]);
  problems.update([]);
  problems.update([missing]);
  assert.equal(reported.length, 2, 'reported again when it comes back');
});
