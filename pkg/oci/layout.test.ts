import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { imageConfig, writeLayer, writeOciArchive } from './layout.js';
import { readTar, type TarEntry } from './tar.js';

const sha = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;
const files: TarEntry[] = [
  { path: 'app', type: 'dir', mode: 0o755 },
  { path: 'app/main.js', type: 'file', mode: 0o644, data: Buffer.from('console.log(1)\n'.repeat(100)) },
];

test('layout: an archive whose digests match its content, named for skopeo and containerd', async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'skein-oci-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const layer = await writeLayer(files, 10, path.join(dir, 'blobs'), 'app');
  const blob = await readFile(layer.file);
  assert.equal(sha(blob), layer.descriptor.digest);
  assert.equal(layer.descriptor.size, blob.length);
  assert.equal(sha(gunzipSync(blob)), layer.diffId);
  assert.equal(gunzipSync(blob).length, layer.uncompressedSize);

  const config = imageConfig(
    {
      created: new Date(10_000).toISOString(),
      user: '1000:1000',
      entrypoint: ['/app'],
      labels: { b: '2', a: '1' },
    },
    [layer],
  );
  const ref = 'docker.io/skein/test:1';
  const res = await writeOciArchive(path.join(dir, 'x.oci.tar'), ref, config, [layer], 10);
  const entries = readTar(await readFile(path.join(dir, 'x.oci.tar')));
  const byPath = new Map(entries.map((e) => [e.path, e.data]));
  assert.equal(JSON.parse(byPath.get('oci-layout')!.toString()).imageLayoutVersion, '1.0.0');
  const index = JSON.parse(byPath.get('index.json')!.toString());
  const desc = index.manifests[0];
  assert.equal(desc.annotations['org.opencontainers.image.ref.name'], ref);
  assert.equal(desc.annotations['io.containerd.image.name'], ref);
  assert.equal(desc.digest, res.digest);
  // Every blob is stored under its own digest.
  for (const [p, data] of byPath)
    if (p.startsWith('blobs/sha256/') && data.length) assert.equal(sha(data), `sha256:${p.slice(13)}`);
  const manifest = JSON.parse(byPath.get(`blobs/sha256/${res.digest.slice(7)}`)!.toString());
  assert.equal(manifest.layers[0].digest, layer.descriptor.digest);
  const cfg = JSON.parse(byPath.get(`blobs/sha256/${manifest.config.digest.slice(7)}`)!.toString());
  assert.deepEqual(cfg.rootfs.diff_ids, [layer.diffId]);
  assert.equal(cfg.architecture, 'amd64');
  assert.deepEqual(Object.keys(cfg.config.Labels), ['a', 'b']);
});

test('layout: the same files compress to the same blob in another directory', async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'skein-oci-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const a = await writeLayer(files, 10, path.join(dir, 'a'), 'app');
  const b = await writeLayer(files, 10, path.join(dir, 'b'), 'app');
  assert.equal(a.descriptor.digest, b.descriptor.digest);
  // And a second write into the same directory reuses the blob.
  const c = await writeLayer(files, 10, path.join(dir, 'a'), 'app');
  assert.equal(c.file, a.file);
  const d = await writeLayer(files, 11, path.join(dir, 'a'), 'app');
  assert.notEqual(d.diffId, a.diffId);
});
