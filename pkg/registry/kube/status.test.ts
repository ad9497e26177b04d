import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { BookEntry } from '../problem-book.js';
import { desiredAccepted, type StatusObject, storedAccepted } from './status.js';

const NOW = new Date('2026-12-02T10:00:00Z');
const split: StatusObject = {
  kind: 'TrafficSplit',
  apiVersion: 'split.smi-spec.io/v1alpha4',
  plural: 'trafficsplits',
  namespace: 'shop',
  name: 'web-split',
  generation: 3,
};

function entry(type: BookEntry['type'], reason: string, name = 'web-split'): BookEntry {
  return {
    type,
    source: type === 'policy' ? 'policy' : `kubernetes:TrafficSplit/shop/${name}`,
    kind: 'TrafficSplit',
    namespace: 'shop',
    name,
    reason,
    since: NOW.toISOString(),
    inForce: 'x',
  };
}

test('no problem: Accepted True for the current generation', () => {
  assert.deepEqual(desiredAccepted(split, [entry('policy', 'other', 'another-split')], NOW), {
    type: 'Accepted',
    status: 'True',
    reason: 'Accepted',
    message: 'valid and in force in the mesh',
    observedGeneration: 3,
    lastTransitionTime: NOW.toISOString(),
  });
});

test('problems: False, invalid versions first, every reason in the message', () => {
  const c = desiredAccepted(
    split,
    [entry('policy', 'backend missing'), entry('invalid-object', 'weight -5')],
    NOW,
  );
  assert.equal(c?.status, 'False');
  assert.equal(c?.reason, 'InvalidObject');
  assert.equal(c?.message, 'weight -5; backend missing');
  assert.equal(desiredAccepted(split, [entry('policy', 'backend missing')], NOW)?.reason, 'PolicyProblem');
  const long = desiredAccepted(split, [entry('policy', 'x'.repeat(5000))], NOW);
  assert.equal(long?.message.length, 1024);
});

test('nothing to write when the stored condition already says it; the transition time moves with the status only', () => {
  const stored = { ...desiredAccepted(split, [], NOW) } as Record<string, unknown>;
  delete stored['type'];
  const same = { ...split, accepted: storedAccepted({ conditions: [{ type: 'Accepted', ...stored }] }) };
  assert.equal(desiredAccepted(same, [], new Date(NOW.getTime() + 1000)), undefined);
  // A new generation, same status: rewritten, transition time kept.
  const edited = desiredAccepted({ ...same, generation: 4 }, [], new Date(NOW.getTime() + 1000));
  assert.equal(edited?.observedGeneration, 4);
  assert.equal(edited?.lastTransitionTime, NOW.toISOString());
  // Another status: a new transition time.
  const later = new Date(NOW.getTime() + 2000);
  assert.equal(desiredAccepted(same, [entry('policy', 'p')], later)?.lastTransitionTime, later.toISOString());
});

test('storedAccepted reads only a well-formed Accepted condition', () => {
  assert.equal(storedAccepted(undefined), undefined);
  assert.equal(storedAccepted({ conditions: 'x' }), undefined);
  assert.equal(storedAccepted({ conditions: [{ type: 'Ready', status: 'True' }] }), undefined);
  assert.equal(storedAccepted({ conditions: [{ type: 'Accepted', status: 'Maybe' }] }), undefined);
  assert.deepEqual(
    storedAccepted({ conditions: [null, { type: 'Accepted', status: 'False', reason: 'R' }] }),
    {
      status: 'False',
      reason: 'R',
      message: '',
      observedGeneration: -1,
      lastTransitionTime: '',
    },
  );
});
