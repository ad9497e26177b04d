// Same commit and inputs, same image: the controller image built twice into two
// directories has the same manifest digest. The second build gets an empty
// layer cache, so it really re-tars and re-compresses every layer; both share
// the download cache (debs, node, node_modules), which keeps the test cheap.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { repoRoot } from '../support/local-mesh.js';
import { imagesDir, run, type Summary, summary } from './images.js';

const found = await summary('controller');

test('the controller image is reproducible', {
  skip: typeof found === 'string' ? found : undefined,
  timeout: 180_000,
}, async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'skein-repro-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const main = path.join(repoRoot, 'dist', 'cmd', 'skein-image', 'main.js');
  const cache = path.join(imagesDir, 'cache');
  const build = async (name: string, layerCache: string) => {
    const out = path.join(dir, name);
    await run(process.execPath, [
      main,
      '--out',
      out,
      '--cache',
      cache,
      '--layer-cache',
      layerCache,
      'controller',
    ]);
    return JSON.parse(await readFile(path.join(out, 'controller.json'), 'utf8')) as Summary;
  };
  const a = await build('a', path.join(cache, 'layers'));
  const b = await build('b', path.join(dir, 'fresh-layers'));
  assert.equal(b.digest, a.digest);
  assert.deepEqual(
    b.layers.map((l) => l.digest),
    a.layers.map((l) => l.digest),
  );
  const [fa, fb] = await Promise.all([readFile(a.file), readFile(b.file)]);
  assert.ok(fa.equals(fb), 'the archives differ byte for byte');
  t.diagnostic(`digest ${a.digest}`);
});
