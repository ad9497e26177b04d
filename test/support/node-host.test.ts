import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { nodeOwnerRecord, ownerRecordAlive } from './node-host.js';

const startOf = async (pid: number) => {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
};

test('an owner record is alive only for a live process other than this one, started when it says', async () => {
  const parent = process.ppid;
  const started = await startOf(parent);
  assert.ok(started);
  assert.equal(await ownerRecordAlive(`${parent} ${started}`), true);
  // The same pid with another start time: reused by an unrelated process since it was written.
  assert.equal(await ownerRecordAlive(`${parent} ${Number(started) + 1}`), false);
  // A record of the old form (pid only) falls back to the pid being alive.
  assert.equal(await ownerRecordAlive(String(parent)), true);
  assert.equal(
    await ownerRecordAlive(await nodeOwnerRecord()),
    false,
    'this process owns it: ours to clean up',
  );
  for (const bad of ['', 'x', '-1', '0', '4194305 1']) assert.equal(await ownerRecordAlive(bad), false, bad);
});
