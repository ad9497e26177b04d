import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  combineEvidence,
  decodeReport,
  type ReplicaReport,
  ReportLiveness,
  reportOf,
  sameReport,
  stageKey,
} from './replica-evidence.js';
import type { CARecord } from './rotation.js';

const pair = { certPem: 'c', keyPem: 'k' };
const inStage = (stage: 'distribute' | 'reissue', stageSince: number): CARecord => ({
  active: pair,
  next: pair,
  rotation: { stage, startedAt: 100, stageSince },
});
const KEY = stageKey(inStage('distribute', 100));

function report(replica: string, over: Partial<ReplicaReport> = {}): ReplicaReport {
  return {
    replica,
    stage: KEY,
    proxies: 0,
    leaves: 0,
    files: 0,
    connected: 3,
    ready: true,
    waitingFor: '',
    observedAt: 0,
    ...over,
  };
}

test('a stage key names the stage of one rotation', () => {
  assert.equal(stageKey({ active: pair }), 'idle');
  assert.equal(KEY, 'distribute@100/100');
  assert.notEqual(stageKey(inStage('reissue', 200)), KEY);
  // The same stage name of a later rotation is another stage.
  assert.notEqual(
    stageKey({
      ...inStage('distribute', 100),
      rotation: { stage: 'distribute', startedAt: 900, stageSince: 900 },
    }),
    KEY,
  );
});

test('every live replica ready for the current stage: the leader may advance; counts are summed', () => {
  const own = { proxies: 0, leaves: 0, files: 0, connected: 2 };
  const c = combineEvidence(
    own,
    { ready: true, reason: 'every consumer holds this stage' },
    [report('b'), report('c')],
    KEY,
  );
  assert.equal(c.ready, true);
  assert.deepEqual(c.evidence, { proxies: 0, leaves: 0, files: 0, connected: 8 });
});

test("a follower's proxy behind holds the stage, though the leader's own proxies all hold it", () => {
  const behind = report('b', {
    proxies: 1,
    ready: false,
    waitingFor: 'waiting for 1 proxies, 0 leaves, 0 Secrets/files',
  });
  const c = combineEvidence(
    { proxies: 0, leaves: 0, files: 0, connected: 2 },
    { ready: true, reason: '' },
    [behind, report('c')],
    KEY,
  );
  assert.equal(c.ready, false);
  assert.equal(c.evidence.proxies, 1);
  assert.match(c.reason, /^replica b: waiting for 1 proxies/);
});

test('a report for an earlier stage holds the stage and counts its connected proxies as behind', () => {
  const stale = report('b', { stage: 'distribute@100/50', connected: 4 });
  const c = combineEvidence({ proxies: 0, leaves: 0, files: 0 }, { ready: true, reason: '' }, [stale], KEY);
  assert.equal(c.ready, false);
  assert.equal(c.evidence.proxies, 4);
  assert.match(c.reason, /replica b has not reported this stage yet \(it reports distribute@100\/50\)/);
});

test("the leader's own verdict still counts", () => {
  const c = combineEvidence(
    { proxies: 0, leaves: 1, files: 0 },
    { ready: false, reason: 'waiting for 0 proxies, 1 leaves, 0 Secrets/files' },
    [report('b')],
    KEY,
  );
  assert.equal(c.ready, false);
  assert.match(c.reason, /^this replica: waiting for 0 proxies, 1 leaves/);
});

test('a report not renewed for its duration, as observed locally, is gone; a renewal keeps it live', () => {
  let now = 0;
  const l = new ReportLiveness(() => now);
  const seen = (renewTime: string) => l.observe([{ name: 'a', renewTime, durationMs: 3000 }]);
  // First seen: counts as just renewed, whatever its timestamp says (clocks may differ).
  assert.deepEqual([...seen('2001-01-01T00:00:00.000000Z').live], ['a']);
  now = 2999;
  assert.deepEqual([...seen('2001-01-01T00:00:00.000000Z').live], ['a']);
  now = 3000;
  assert.deepEqual([...seen('2001-01-01T00:00:00.000000Z').gone], ['a']);
  // Renewed after all (a partition healed): live again from now.
  now = 4000;
  assert.deepEqual([...seen('2001-01-01T00:00:09.000000Z').live], ['a']);
  now = 6999;
  assert.deepEqual([...seen('2001-01-01T00:00:09.000000Z').live], ['a']);
  // A report that disappears is forgotten: if it comes back it starts afresh.
  l.observe([]);
  now = 50_000;
  assert.deepEqual([...seen('2001-01-01T00:00:09.000000Z').live], ['a']);
});

test('reports round-trip; a malformed one is refused naming where and why', () => {
  const r = reportOf(
    'b',
    KEY,
    { proxies: 1, leaves: 0, files: 2, connected: 5 },
    { ready: false, reason: 'why' },
    7,
  );
  assert.deepEqual(decodeReport(JSON.stringify(r), 'Lease x'), r);
  assert.equal(sameReport(r, { ...r, observedAt: 8 }), true, 'the time alone is no change');
  assert.equal(sameReport(r, { ...r, proxies: 0 }), false);
  assert.equal(sameReport(undefined, r), false);
  assert.throws(() => decodeReport('{', 'Lease ns/x'), /^Error: Lease ns\/x: the evidence is not JSON$/);
  assert.throws(
    () => decodeReport(JSON.stringify({ ...r, proxies: -1 }), 'L'),
    /the evidence's proxies is not a count/,
  );
  assert.throws(() => decodeReport(JSON.stringify({ ...r, ready: 'yes' }), 'L'), /ready is not a boolean/);
  assert.throws(() => decodeReport('{}', 'L'), /has no replica or stage/);
});
