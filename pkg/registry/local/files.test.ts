import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { listManifestFiles, readInOrder, restampHinted } from './files.js';

describe('restampHinted', () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'skein-files-'));
    await mkdir(path.join(dir, 'sub'));
    await writeFile(path.join(dir, 'a.yaml'), 'a');
    await writeFile(path.join(dir, 'sub', 'b.yaml'), 'b');
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('stats only the hinted manifests and keeps every other stamp as known', async () => {
    const known = await listManifestFiles(dir);
    await writeFile(path.join(dir, 'sub', 'b.yaml'), 'bigger');
    await writeFile(path.join(dir, 'new.yml'), 'n');
    const out = await restampHinted(
      dir,
      known,
      new Set([path.join(dir, 'sub', 'b.yaml'), path.join(dir, 'new.yml')]),
    );
    assert.ok(out);
    assert.equal(out.get(path.join(dir, 'sub', 'b.yaml'))?.size, 6);
    assert.equal(out.get(path.join(dir, 'new.yml'))?.size, 1);
    assert.equal(out.get(path.join(dir, 'a.yaml')), known.get(path.join(dir, 'a.yaml')));
  });

  it('drops a known file that is gone', async () => {
    const known = await listManifestFiles(dir);
    await rm(path.join(dir, 'a.yaml'));
    const out = await restampHinted(dir, known, new Set([path.join(dir, 'a.yaml')]));
    assert.ok(out);
    assert.equal(out.has(path.join(dir, 'a.yaml')), false);
    assert.equal(out.size, known.size - 1);
  });

  it('asks for a walk when a hint is a directory, hidden, not a manifest, outside, or an unknown path that is gone', async () => {
    const known = await listManifestFiles(dir);
    for (const hint of [
      path.join(dir, 'sub'),
      path.join(dir, '..2026_12_04', 'x.yaml'),
      path.join(dir, 'notes.txt'),
      path.join(path.dirname(dir), 'elsewhere.yaml'),
      path.join(dir, 'never-was.yaml'),
    ]) {
      assert.equal(await restampHinted(dir, known, new Set([hint])), undefined, hint);
    }
  });
});

describe('readInOrder', () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'skein-read-'));
    // Sizes from large to small, so later reads tend to finish first.
    for (let i = 0; i < 20; i++) await writeFile(path.join(dir, `${i}.yaml`), 'x'.repeat((20 - i) * 10_000));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('yields every file in the given order, reading ahead or blocking, and a failed read with its error', async () => {
    const files = Array.from({ length: 20 }, (_, i) => path.join(dir, `${i}.yaml`));
    files.splice(7, 0, path.join(dir, 'missing.yaml'));
    for (const blocking of [false, true]) {
      const got: string[] = [];
      for await (const r of readInOrder(files, { window: 3, blocking })) {
        if ('error' in r) {
          assert.equal(r.file, path.join(dir, 'missing.yaml'));
          assert.equal((r.error as NodeJS.ErrnoException).code, 'ENOENT');
          got.push('missing');
        } else {
          assert.equal(r.text.length, (20 - Number(path.basename(r.file, '.yaml'))) * 10_000);
          got.push(path.basename(r.file, '.yaml'));
        }
      }
      assert.deepEqual(
        got,
        [
          ...Array.from({ length: 7 }, (_, i) => String(i)),
          'missing',
          ...Array.from({ length: 13 }, (_, i) => String(i + 7)),
        ],
        `blocking: ${blocking}`,
      );
    }
  });
});
