import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ProblemBook } from './problem-book.js';
import { LAST_VALID_IN_FORCE } from './registry.js';

test('ProblemBook: entries stay until resolved, keep their first-seen time, and say what is in force', () => {
  let now = Date.parse('2026-01-01T00:00:00.000Z');
  const book = new ProblemBook(() => now);
  const split = { source: 'split.yaml', kind: 'TrafficSplit', namespace: 'shop', name: 's' };
  book.report({ ...split, reason: `weight: must be >= 0${LAST_VALID_IN_FORCE}` });
  book.report({ source: 'broken.yaml', reason: 'invalid YAML: bad indentation' });
  now += 5000;
  // A repeat (the file edited again, same problem) keeps the first time.
  book.report({ ...split, reason: `weight: must be >= 0${LAST_VALID_IN_FORCE}` });
  book.setPolicy([{ kind: 'Service', namespace: 'shop', name: 'v2', reason: 'no ready endpoints' }]);
  // Another problem of the same object replaces the first.
  book.report({ source: 'pods.yaml', kind: 'Pod', namespace: 'shop', name: 'p', reason: 'port: too big' });
  book.report({ source: 'pods.yaml', kind: 'Pod', namespace: 'shop', name: 'p', reason: 'port: too small' });
  assert.deepEqual(
    book
      .entries()
      .filter((e) => e.kind === 'Pod')
      .map((e) => e.reason),
    ['port: too small'],
  );
  book.resolved('pods.yaml');
  assert.deepEqual(
    book.entries().map((e) => [e.type, e.source, e.since.slice(17, 19), e.inForce]),
    [
      ['invalid-object', 'broken.yaml', '00', 'nothing from this document'],
      ['invalid-object', 'split.yaml', '00', 'the last valid version of the object'],
      ['policy', 'policy', '05', 'the rest of the mesh policy; the reason says what is left out'],
    ],
  );
  assert.deepEqual(
    [...book.countsByKind('invalid-object')],
    [
      ['unknown', 1],
      ['TrafficSplit', 1],
    ],
  );
  assert.deepEqual([...book.countsByKind('policy')], [['Service', 1]]);
  // Policy problems are the view's list: an unchanged one keeps its time, a gone one goes.
  now += 5000;
  book.setPolicy([{ kind: 'Service', namespace: 'shop', name: 'v2', reason: 'no ready endpoints' }]);
  assert.equal(book.entries().at(-1)?.since, '2026-01-01T00:00:05.000Z');
  book.setPolicy([]);
  book.resolved('split.yaml');
  // Policy problems reported through the registry path are the view's, not counted twice.
  book.report({ source: 'policy', kind: 'Service', name: 'x', reason: 'r' });
  assert.deepEqual(
    book.entries().map((e) => e.source),
    ['broken.yaml'],
  );
});
