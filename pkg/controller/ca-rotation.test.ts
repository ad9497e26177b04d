import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BuiltinCA } from '../certificate/builtin.js';
import type { CARecordStore, VersionedRecord } from '../certificate/ca-store.js';
import type { ReplicaReport } from '../certificate/replica-evidence.js';
import type { ReplicaEvidenceBoard } from '../certificate/replica-reports.js';
import { RotatingCA } from '../certificate/rotating-ca.js';
import type { CARecord, StageEvidence } from '../certificate/rotation.js';
import { silentLogger } from '../logger/logger.js';
import { RotationDriver } from './ca-rotation.js';

/** A store with versions, as the Secret's resourceVersion behaves. */
class MemoryStore implements CARecordStore {
  readonly description = 'memory';
  version = 1;
  constructor(public record: CARecord) {}
  async load(): Promise<VersionedRecord> {
    return { record: this.record, version: String(this.version) };
  }
  async save(record: CARecord, version: string): Promise<boolean> {
    if (version !== String(this.version)) return false;
    this.record = record;
    this.version++;
    return true;
  }
}

async function setup(leader: { isLeader: boolean }) {
  const old = await BuiltinCA.create();
  const store = new MemoryStore({ active: { certPem: old.rootCertPem, keyPem: old.rootKeyPem } });
  const ca = await RotatingCA.fromRecord(store.record);
  let evidence: StageEvidence = { proxies: 0, leaves: 0, files: 0 };
  let now = 1_000_000;
  const driver = new RotationDriver({
    store,
    ca,
    version: '1',
    evidence: () => evidence,
    logger: silentLogger(),
    leadership: leader,
    deliveryMs: 5000,
    now: () => now,
  });
  return {
    store,
    ca,
    driver,
    setEvidence: (e: StageEvidence) => {
      evidence = e;
    },
    advance: (ms: number) => {
      now += ms;
    },
  };
}

test('the leader begins a requested rotation and ends each stage only on evidence', async () => {
  const f = await setup({ isLeader: true });
  f.store.record = { ...f.store.record, requested: { at: 1 } };
  f.store.version++;
  await f.driver.check();
  assert.equal(f.store.record.rotation?.stage, 'distribute');
  assert.equal(f.ca.roots().length, 2, 'the CA follows at once');
  f.setEvidence({ proxies: 1, leaves: 0, files: 0 });
  await f.driver.check();
  assert.equal(f.store.record.rotation?.stage, 'distribute', 'a proxy has not ACKed the bundle');
  assert.match(f.driver.status().waitingFor ?? '', /1 proxies/);
  assert.equal(f.driver.pending(), 1);
  f.setEvidence({ proxies: 0, leaves: 0, files: 0, lastWriteAt: 1_000_000 });
  f.advance(4000);
  await f.driver.check();
  assert.equal(f.store.record.rotation?.stage, 'distribute', 'the last Secret write is not delivered yet');
  f.advance(1000);
  await f.driver.check();
  assert.equal(f.store.record.rotation?.stage, 'reissue');
  await f.driver.check();
  assert.equal(f.store.record.rotation?.stage, 'retire');
  await f.driver.check();
  assert.equal(f.store.record.rotation, undefined);
  assert.equal(f.ca.roots().length, 1);
  assert.equal(f.driver.status().stage, 'idle');
});

test('a follower follows the stored record but never advances it', async () => {
  const f = await setup({ isLeader: false });
  const next = await BuiltinCA.create();
  f.store.record = {
    active: f.store.record.active,
    next: { certPem: next.rootCertPem, keyPem: next.rootKeyPem },
    rotation: { stage: 'reissue', startedAt: 1, stageSince: 2 },
  };
  f.store.version++;
  await f.driver.check();
  await f.driver.check();
  assert.equal(f.store.record.rotation?.stage, 'reissue');
  assert.equal(f.ca.rootCertPem, next.rootCertPem, 'issues from the new root like the leader');
});

test('a request with an unusable root is refused and recorded; the CA stays as it was', async () => {
  const f = await setup({ isLeader: true });
  const a = await BuiltinCA.create();
  f.store.record = {
    ...f.store.record,
    next: { certPem: a.rootCertPem, keyPem: f.store.record.active.keyPem },
    requested: { at: 1 },
  };
  f.store.version++;
  await f.driver.check();
  assert.equal(f.store.record.rotation, undefined);
  assert.equal(f.store.record.next, undefined);
  assert.match(f.store.record.lastError ?? '', /does not match/);
  assert.equal(f.ca.roots().length, 1);
});

/** The Leases of replica-reports.ts in memory: every replica's last report, and which are gone. */
class MemoryBoard {
  readonly reports = new Map<string, ReplicaReport>();
  readonly gone = new Set<string>();
  readonly collected: string[] = [];
  for(replica: string): ReplicaEvidenceBoard {
    return {
      replica,
      publish: async (r) => void this.reports.set(replica, r),
      others: async ({ collect }) => {
        const out: ReplicaReport[] = [];
        for (const [name, r] of this.reports) {
          if (name === replica) continue;
          if (!this.gone.has(name)) out.push(r);
          else if (collect) {
            this.reports.delete(name);
            this.collected.push(name);
          }
        }
        return out;
      },
      withdraw: async () => void this.reports.delete(replica),
    };
  }
}

test('with two replicas the leader waits for the follower’s proxies, and goes on once its report is gone', async () => {
  const old = await BuiltinCA.create();
  const store = new MemoryStore({
    active: { certPem: old.rootCertPem, keyPem: old.rootKeyPem },
    requested: { at: 1 },
  });
  const board = new MemoryBoard();
  const replica = async (name: string, isLeader: boolean, evidence: () => StageEvidence) =>
    new RotationDriver({
      store,
      ca: await RotatingCA.fromRecord(store.record),
      version: '0',
      evidence,
      logger: silentLogger(),
      leadership: { isLeader },
      replicas: board.for(name),
      deliveryMs: 0,
    });
  const leader = await replica('a', true, () => ({ proxies: 0, leaves: 0, files: 0, connected: 2 }));
  let followerBehind = 1;
  const follower = await replica('b', false, () => ({
    proxies: followerBehind,
    leaves: 0,
    files: 0,
    connected: 1,
  }));
  const stages: string[] = [];
  const round = async () => {
    await leader.check();
    await follower.check();
    const s = store.record.rotation?.stage ?? 'idle';
    if (stages.at(-1) !== s) stages.push(s);
  };
  await round(); // begun: distribute; the follower follows and reports
  for (let i = 0; i < 5; i++) await round();
  assert.deepEqual(stages, ['distribute'], 'held while the follower has a proxy behind');
  const status = leader.status();
  assert.equal(status.pending?.proxies, 1);
  assert.equal(status.pending?.connected, 3);
  assert.equal(leader.pending(), 1, 'skein_ca_rotation_pending counts the follower’s proxy');
  assert.match(status.waitingFor ?? '', /^replica b: waiting for 1 proxies/);
  assert.deepEqual(
    status.replicas?.map((r) => [r.replica, r.self === true, r.current, r.proxies, r.connected]),
    [
      ['a', true, true, 0, 2],
      ['b', false, true, 1, 1],
    ],
  );
  followerBehind = 0; // the proxy ACKed
  await round(); // the leader still read the report of before the ACK
  assert.deepEqual(stages, ['distribute']);
  await leader.check();
  assert.equal(store.record.rotation?.stage, 'reissue');
  // A stage the follower has not reported yet holds too.
  await leader.check();
  assert.equal(store.record.rotation?.stage, 'reissue');
  assert.match(leader.status().waitingFor ?? '', /replica b has not reported this stage yet/);
  stages.push('reissue');
  followerBehind = 1; // the reissued leaf is not ACKed
  for (let i = 0; i < 3; i++) await round();
  assert.deepEqual(stages, ['distribute', 'reissue']);
  // The follower dies: its report stops being renewed and expires (liveness: ReportLiveness).
  board.gone.add('b');
  await leader.check();
  await leader.check();
  await leader.check();
  assert.equal(store.record.rotation, undefined, 'reissue and retire ran without the gone replica');
  assert.deepEqual(board.collected, ['b'], 'the leader collected its report');
  assert.deepEqual([...board.reports.keys()], ['a']);
});
