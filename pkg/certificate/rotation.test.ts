import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { BuiltinCA } from './builtin.js';
import { LocalCARecordStore } from './ca-store.js';
import { RotatingCA } from './rotating-ca.js';
import {
  advance,
  beginRotation,
  bundlePairs,
  type CARecord,
  decodeRecord,
  encodeRecord,
  issuerPair,
  RotationError,
  readyToAdvance,
  stageNumber,
} from './rotation.js';

const A = { certPem: 'A-cert', keyPem: 'A-key' };
const B = { certPem: 'B-cert', keyPem: 'B-key' };

test('the stages move trust first, issuance second, retirement last', () => {
  let rec: CARecord = { active: A };
  assert.deepEqual(bundlePairs(rec), [A]);
  assert.equal(issuerPair(rec), A);
  rec = beginRotation(rec, B, 1000);
  assert.equal(rec.rotation?.stage, 'distribute');
  assert.deepEqual(bundlePairs(rec), [A, B], 'stage 1: both trusted');
  assert.equal(issuerPair(rec), A, 'stage 1: the old root still issues');
  rec = advance(rec, 2000);
  assert.equal(rec.rotation?.stage, 'reissue');
  assert.deepEqual(bundlePairs(rec), [B, A], 'stage 2: both trusted, the issuer first');
  assert.equal(issuerPair(rec), B);
  assert.equal(rec.rotation?.startedAt, 1000);
  assert.equal(rec.rotation?.stageSince, 2000);
  rec = advance(rec, 3000);
  assert.equal(rec.rotation?.stage, 'retire');
  assert.deepEqual(bundlePairs(rec), [B], 'stage 3: the old root is gone');
  rec = advance(rec, 4000);
  assert.deepEqual(rec, { active: B }, 'done: the new root is the one in force');
  assert.throws(() => advance(rec, 5000), RotationError);
  assert.deepEqual(
    [undefined, 'distribute', 'reissue', 'retire'].map((s) => stageNumber(s as never)),
    [0, 1, 2, 3],
  );
});

test('a rotation is refused while one runs, and to the same root', () => {
  const running = beginRotation({ active: A }, B, 1);
  assert.throws(() => beginRotation(running, B, 2), /already in stage distribute/);
  assert.throws(() => beginRotation({ active: A }, A, 2), /already in force/);
});

test('the evidence rule: nothing pending, then the delivery time after the last write', () => {
  const quiet = { proxies: 0, leaves: 0, files: 0 };
  assert.equal(readyToAdvance(quiet, 10_000, 5000).ready, true);
  const r = readyToAdvance({ ...quiet, proxies: 2, files: 1 }, 10_000, 5000);
  assert.equal(r.ready, false);
  assert.match(r.reason, /2 proxies, 0 leaves, 1 Secrets\/files/);
  const wait = readyToAdvance({ ...quiet, lastWriteAt: 8000 }, 10_000, 5000);
  assert.equal(wait.ready, false);
  assert.match(wait.reason, /3 s more/);
  assert.equal(readyToAdvance({ ...quiet, lastWriteAt: 5000 }, 10_000, 5000).ready, true);
});

test('the record round-trips through the stored keys; broken records name what is wrong', () => {
  const rec = advance(beginRotation({ active: A }, B, 1), 2);
  assert.deepEqual(decodeRecord(encodeRecord(rec), 'x'), rec);
  const requested: CARecord = { active: A, next: B, requested: { at: 7 } };
  assert.deepEqual(decodeRecord(encodeRecord(requested), 'x'), requested);
  const data = encodeRecord(rec);
  assert.throws(
    () => decodeRecord({ ...data, 'next.crt': '' }, 'Secret s/ca'),
    /Secret s\/ca has next.key without its pair/,
  );
  assert.throws(
    () => decodeRecord({ ...data, 'rotation.json': '{"stage":"sideways"}' }, 'Secret s/ca'),
    /unknown rotation stage sideways/,
  );
  assert.throws(() => decodeRecord({ ...data, 'ca.key': '' }, 'Secret s/ca'), /has no ca.key/);
});

test('RotatingCA swaps bundle and issuer with the record; leaves carry the whole bundle', async () => {
  const [old, next] = await Promise.all([BuiltinCA.create(), BuiltinCA.create()]);
  const pa = { certPem: old.rootCertPem, keyPem: old.rootKeyPem };
  const pb = { certPem: next.rootCertPem, keyPem: next.rootKeyPem };
  const ca = await RotatingCA.fromRecord({ active: pa });
  let changes = 0;
  ca.on('changed', () => changes++);
  const leaf0 = await ca.issue({ commonName: 'x', validityMs: 60_000 });
  assert.equal(leaf0.caPem, old.rootCertPem);
  let rec = beginRotation(ca.record, pb, 1);
  await ca.apply(rec);
  const leaf1 = await ca.issue({ commonName: 'x', validityMs: 60_000 });
  assert.ok(ca.issuedByCurrent(leaf1.certPem), 'stage 1: still the old root');
  assert.ok(leaf1.caPem.includes(next.rootCertPem.trim()) && leaf1.caPem.includes(old.rootCertPem.trim()));
  rec = advance(rec, 2);
  await ca.apply(rec);
  assert.equal(ca.issuedByCurrent(leaf1.certPem), false, 'stage 2: a leaf of the old root is not current');
  const leaf2 = await ca.issue({ commonName: 'x', validityMs: 60_000 });
  assert.ok(ca.issuedByCurrent(leaf2.certPem));
  assert.equal(ca.roots().filter((r) => r.issuing).length, 1);
  rec = advance(rec, 3);
  await ca.apply(rec);
  assert.equal(ca.trustBundlePem.trim(), next.rootCertPem.trim());
  assert.equal(await ca.apply(rec), false, 'the same record again changes nothing');
  assert.equal(changes, 3);
});

test('local store: the record survives in one file; a stale version is refused', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'skein-rotation-'));
  try {
    const store = new LocalCARecordStore(dir);
    const first = await store.load();
    assert.ok(first);
    const next = await BuiltinCA.create();
    const begun = beginRotation(first.record, { certPem: next.rootCertPem, keyPem: next.rootKeyPem }, 5);
    assert.equal(await store.save(begun, first.version), true);
    assert.equal(await store.save(begun, first.version), false, 'written since: the old version is stale');
    const again = await store.load();
    assert.deepEqual(again?.record, begun);
    assert.equal(
      (await readFile(path.join(dir, 'ca.crt'), 'utf8')).trim(),
      first.record.active.certPem.trim(),
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
