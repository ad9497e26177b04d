// OCI image archives: gzip'd layers, the image config, the manifest and an
// image layout (oci-layout, index.json, blobs/sha256/...) in one tar, which is
// what `skopeo copy oci-archive:` and `ctr images import` read. Every JSON
// document is built with a fixed key order and every tar is deterministic, so
// the same inputs give the same manifest digest.
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { type TarEntry, tarChunks } from './tar.js';

export const MEDIA_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
export const MEDIA_INDEX = 'application/vnd.oci.image.index.v1+json';
export const MEDIA_CONFIG = 'application/vnd.oci.image.config.v1+json';
export const MEDIA_LAYER = 'application/vnd.oci.image.layer.v1.tar+gzip';
// A fixed level: the compressed bytes (and so the digests) depend on it.
const GZIP_LEVEL = 6;

export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
}

export interface Layer {
  descriptor: Descriptor;
  /** sha256 of the uncompressed tar: the config's rootfs.diff_ids. */
  diffId: string;
  uncompressedSize: number;
  /** The gzip'd blob on disk. */
  file: string;
  /** What the layer holds, for the config's history. */
  comment: string;
}

let tmpCounter = 0;

/** Bytes and sha256 of the uncompressed layer, without writing it anywhere. */
async function diffOf(
  entries: readonly TarEntry[],
  mtime: number,
): Promise<{ diffId: string; size: number }> {
  const h = createHash('sha256');
  let size = 0;
  for await (const c of tarChunks(entries, mtime)) {
    h.update(c);
    size += c.length;
  }
  return { diffId: `sha256:${h.digest('hex')}`, size };
}

/**
 * Writes one gzip'd layer into `dir` (named by its digest), hashing both forms
 * on the way. Compressing dominates the cost, so a layer whose uncompressed
 * digest (diff_id) `dir` already holds is reused: `dir/<diff_id>.json` records
 * the blob it compressed to.
 */
export async function writeLayer(
  entries: readonly TarEntry[],
  mtime: number,
  dir: string,
  comment: string,
): Promise<Layer> {
  await mkdir(dir, { recursive: true });
  const known = await diffOf(entries, mtime);
  const record = path.join(dir, `${known.diffId.replace(/^sha256:/, '')}.json`);
  try {
    const r = JSON.parse(await readFile(record, 'utf8')) as { digest: string; size: number };
    const file = path.join(dir, r.digest.replace(/^sha256:/, ''));
    if ((await stat(file)).size === r.size)
      return {
        descriptor: { mediaType: MEDIA_LAYER, digest: r.digest, size: r.size },
        diffId: known.diffId,
        uncompressedSize: known.size,
        file,
        comment,
      };
  } catch {
    // not compressed before: do it now
  }
  const diff = createHash('sha256');
  const digest = createHash('sha256');
  let uncompressedSize = 0;
  let size = 0;
  const tmp = path.join(dir, `.layer-${process.pid}-${tmpCounter++}`);
  await pipeline(
    async function* () {
      for await (const c of tarChunks(entries, mtime)) {
        diff.update(c);
        uncompressedSize += c.length;
        yield c;
      }
    },
    // zlib's gzip header carries no time or name, so the bytes depend on the input alone.
    createGzip({ level: GZIP_LEVEL }),
    async function* (source: AsyncIterable<Buffer>) {
      for await (const c of source) {
        digest.update(c);
        size += c.length;
        yield c;
      }
    },
    createWriteStream(tmp),
  );
  const diffId = `sha256:${diff.digest('hex')}`;
  if (diffId !== known.diffId) throw new Error(`layer ${comment}: files changed while it was written`);
  const hex = digest.digest('hex');
  const file = path.join(dir, hex);
  await rename(tmp, file);
  await writeFile(record, JSON.stringify({ digest: `sha256:${hex}`, size }));
  return {
    descriptor: { mediaType: MEDIA_LAYER, digest: `sha256:${hex}`, size },
    diffId,
    uncompressedSize,
    file,
    comment,
  };
}

export interface ImageConfigOptions {
  /** RFC 3339 time, from SOURCE_DATE_EPOCH. */
  created: string;
  user?: string;
  entrypoint?: string[];
  cmd?: string[];
  env?: string[];
  workingDir?: string;
  /** `15128/tcp` style. */
  exposedPorts?: string[];
  labels?: Record<string, string>;
}

/** The OCI image config (linux/amd64) for these layers, as the bytes that get hashed. */
export function imageConfig(o: ImageConfigOptions, layers: readonly Layer[]): Buffer {
  const config: Record<string, unknown> = {};
  if (o.user !== undefined) config['User'] = o.user;
  if (o.exposedPorts?.length) config['ExposedPorts'] = Object.fromEntries(o.exposedPorts.map((p) => [p, {}]));
  if (o.env) config['Env'] = o.env;
  if (o.entrypoint) config['Entrypoint'] = o.entrypoint;
  if (o.cmd) config['Cmd'] = o.cmd;
  if (o.workingDir !== undefined) config['WorkingDir'] = o.workingDir;
  if (o.labels) config['Labels'] = sortedObject(o.labels);
  const doc = {
    created: o.created,
    architecture: 'amd64',
    os: 'linux',
    config,
    rootfs: { type: 'layers', diff_ids: layers.map((l) => l.diffId) },
    history: layers.map((l) => ({ created: o.created, created_by: 'skein-image', comment: l.comment })),
  };
  return Buffer.from(JSON.stringify(doc));
}

function sortedObject(o: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

const sha256 = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

export interface ArchiveResult {
  /** The manifest's digest: the image's identity in a registry. */
  digest: string;
  manifest: Buffer;
  config: Buffer;
  index: Buffer;
  /** Bytes of the archive file. */
  archiveSize: number;
}

/**
 * Writes `<out>`: an OCI image layout in a tar holding one image, named `ref`
 * (a full reference such as docker.io/skein/controller:0.1.0) by both the OCI
 * and the containerd annotation so skopeo and `ctr images import` agree.
 */
export async function writeOciArchive(
  out: string,
  ref: string,
  config: Buffer,
  layers: readonly Layer[],
  mtime: number,
): Promise<ArchiveResult> {
  const configDigest = sha256(config);
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: MEDIA_MANIFEST,
      config: { mediaType: MEDIA_CONFIG, digest: configDigest, size: config.length },
      layers: layers.map((l) => l.descriptor),
    }),
  );
  const digest = sha256(manifest);
  const index = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: MEDIA_INDEX,
      manifests: [
        {
          mediaType: MEDIA_MANIFEST,
          digest,
          size: manifest.length,
          platform: { architecture: 'amd64', os: 'linux' },
          annotations: { 'io.containerd.image.name': ref, 'org.opencontainers.image.ref.name': ref },
        },
      ],
    }),
  );
  const blob = (d: string) => `blobs/sha256/${d.replace(/^sha256:/, '')}`;
  const entries: TarEntry[] = [
    { path: 'oci-layout', type: 'file', mode: 0o644, data: Buffer.from('{"imageLayoutVersion":"1.0.0"}') },
    { path: 'index.json', type: 'file', mode: 0o644, data: index },
    { path: 'blobs', type: 'dir', mode: 0o755 },
    { path: 'blobs/sha256', type: 'dir', mode: 0o755 },
    { path: blob(digest), type: 'file', mode: 0o644, data: manifest },
    { path: blob(configDigest), type: 'file', mode: 0o644, data: config },
  ];
  // Images may repeat a layer (the same blob twice); the layout stores it once.
  const seen = new Set<string>();
  for (const l of layers) {
    if (seen.has(l.descriptor.digest)) continue;
    seen.add(l.descriptor.digest);
    entries.push({
      path: blob(l.descriptor.digest),
      type: 'file',
      mode: 0o644,
      source: l.file,
      size: l.descriptor.size,
    });
  }
  await mkdir(path.dirname(out), { recursive: true });
  const tmp = `${out}.part`;
  await pipeline(tarChunks(entries, mtime), createWriteStream(tmp));
  await rename(tmp, out);
  return { digest, manifest, config, index, archiveSize: (await stat(out)).size };
}
