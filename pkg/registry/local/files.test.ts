import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { listManifestFiles, restampHinted } from './files.js';

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
