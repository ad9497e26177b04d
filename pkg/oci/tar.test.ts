import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { normalisePath, readTar, type TarEntry, writeTar } from './tar.js';

const longDir = `deep/${'d'.repeat(120)}`;
const entries: TarEntry[] = [
  { path: 'usr/bin/tool', type: 'file', mode: 0o755, data: Buffer.from('#!/bin/sh\necho hi\n') },
  { path: 'usr', type: 'dir', mode: 0o755 },
  { path: 'usr/bin', type: 'dir', mode: 0o755 },
  { path: 'tmp', type: 'dir', mode: 0o1777 },
  { path: 'bin/sh', type: 'symlink', mode: 0o777, linkname: 'dash' },
  { path: 'bin', type: 'dir', mode: 0o755 },
  { path: 'home/skein', type: 'dir', mode: 0o750, uid: 1000, gid: 1000 },
  { path: 'home', type: 'dir', mode: 0o755 },
  { path: 'deep', type: 'dir', mode: 0o755 },
  { path: longDir, type: 'dir', mode: 0o755 },
  { path: `${longDir}/file`, type: 'file', mode: 0o600, data: Buffer.from('x'.repeat(1000)) },
  { path: 'deep/link', type: 'symlink', mode: 0o777, linkname: `/${'t'.repeat(150)}` },
];

test('tar: what is written parses back, sorted, with one mtime, owners and modes kept', async () => {
  const tar = await writeTar(entries, 1_700_000_000);
  assert.equal(tar.length % 512, 0);
  const back = readTar(tar);
  const paths = back.map((e) => e.path);
  assert.deepEqual(paths, [...paths].sort());
  assert.equal(back.length, entries.length);
  for (const e of entries) {
    const r = back.find((b) => b.path === e.path);
    assert.ok(r, e.path);
    assert.equal(r.type, e.type);
    assert.equal(r.mode, e.mode);
    assert.equal(r.uid, e.uid ?? 0);
    assert.equal(r.mtime, 1_700_000_000);
    if (e.data) assert.deepEqual(r.data, e.data);
    if (e.linkname) assert.equal(r.linkname, e.linkname);
  }
});

test('tar: the same entries in any order give the same bytes', async () => {
  const a = await writeTar(entries, 0);
  const b = await writeTar([...entries].reverse(), 0);
  assert.deepEqual(a, b);
});

test('tar: GNU tar reads it (long names via PAX, the sticky bit, owners)', async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'skein-tar-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'a.tar');
  await writeFile(file, await writeTar(entries, 0));
  const listing = execFileSync('tar', ['--numeric-owner', '-tvf', file], { encoding: 'utf8' });
  assert.match(listing, /^drwxrwxrwt 0\/0 .* tmp\/$/m);
  assert.match(listing, /^drwxr-x--- 1000\/1000 .* home\/skein\/$/m);
  assert.match(listing, new RegExp(`${longDir}/file$`, 'm'));
  assert.match(listing, /deep\/link -> \/t{150}$/m);
});

test('tar: refuses duplicate and escaping paths', async () => {
  await assert.rejects(writeTar([entries[1]!, { ...entries[1]!, path: './usr/' }], 0), /twice/);
  assert.throws(() => normalisePath('a/../b'), /bad path/);
  assert.equal(normalisePath('./a/b/'), 'a/b');
});
