import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BuiltinCA } from '../certificate/builtin.js';
import type { CARecordStore, VersionedRecord } from '../certificate/ca-store.js';
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
