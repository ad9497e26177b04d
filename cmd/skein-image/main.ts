#!/usr/bin/env node
// skein-image: builds the OCI image archives under out/images/ without Docker,
// from Debian and npm registry packages (docs/design.md, "Images").
//
//   skein-image [--out out/images] [--cache out/images/cache] [--layer-cache <dir>] [controller|envoy|app|pause|all ...]
//
// Same commit and same inputs give byte-identical archives: mtimes are
// SOURCE_DATE_EPOCH (else the commit time), entries sorted, owners fixed.
import { execFile } from 'node:child_process';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { type Built, type Context, IMAGES, type ImageName, readVersion } from './images.js';

const run = promisify(execFile);

async function git(repo: string, args: string[]): Promise<string> {
  return run('git', args, { cwd: repo }).then(
    (r) => r.stdout.trim(),
    () => '',
  );
}

/** SOURCE_DATE_EPOCH if set, else the commit's time, else 0. */
async function epoch(repo: string): Promise<number> {
  const env = process.env['SOURCE_DATE_EPOCH'];
  if (env !== undefined && /^\d+$/.test(env)) return Number(env);
  const t = await git(repo, ['log', '-1', '--format=%ct']);
  return /^\d+$/.test(t) ? Number(t) : 0;
}

async function source(repo: string): Promise<string> {
  const env = process.env['SKEIN_IMAGE_SOURCE'];
  if (env) return env;
  const pkg = JSON.parse(await readFile(path.join(repo, 'package.json'), 'utf8')) as {
    repository?: string | { url?: string };
  };
  const r = typeof pkg.repository === 'string' ? pkg.repository : pkg.repository?.url;
  return r || (await git(repo, ['config', '--get', 'remote.origin.url'])) || 'unknown';
}

const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`;

/** The summary both people and test/image read. */
export function summary(b: Built) {
  return {
    name: b.name,
    ref: b.ref,
    file: b.file,
    digest: b.result.digest,
    archiveSize: b.result.archiveSize,
    compressedSize: b.layers.reduce((s, l) => s + l.descriptor.size, 0),
    uncompressedSize: b.layers.reduce((s, l) => s + l.uncompressedSize, 0),
    layers: b.layers.map((l) => ({
      comment: l.comment,
      digest: l.descriptor.digest,
      size: l.descriptor.size,
      uncompressedSize: l.uncompressedSize,
    })),
    labels: b.labels,
  };
}

async function main(): Promise<void> {
  const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      out: { type: 'string', default: path.join(repo, 'out', 'images') },
      cache: { type: 'string' },
      'layer-cache': { type: 'string' },
    },
  });
  const out = path.resolve(values.out ?? '');
  const cache = path.resolve(values.cache ?? path.join(repo, 'out', 'images', 'cache'));
  const names = positionals.length === 0 ? ['controller'] : positionals;
  const wanted = (names.includes('all') ? Object.keys(IMAGES) : names) as ImageName[];
  for (const n of wanted)
    if (!(n in IMAGES)) throw new Error(`unknown image ${n} (${Object.keys(IMAGES).join(', ')}, all)`);
  const work = path.join(out, `.work-${process.pid}`);
  const ctx: Context = {
    repo,
    out,
    cache,
    layerCache: path.resolve(values['layer-cache'] ?? path.join(cache, 'layers')),
    work,
    epoch: await epoch(repo),
    revision: (await git(repo, ['rev-parse', 'HEAD'])) || 'unknown',
    version: await readVersion(repo),
    source: await source(repo),
  };
  await mkdir(out, { recursive: true });
  try {
    for (const name of wanted) {
      const started = Date.now();
      const s = summary(await IMAGES[name](ctx));
      await writeFile(path.join(out, `${name}.json`), `${JSON.stringify(s, null, 2)}\n`);
      console.log(
        `${s.ref}  ${path.relative(process.cwd(), s.file)}  (${((Date.now() - started) / 1000).toFixed(1)} s)`,
      );
      console.log(`  digest ${s.digest}`);
      console.log(`  size   ${mb(s.compressedSize)} compressed, ${mb(s.uncompressedSize)} uncompressed`);
      for (const l of s.layers)
        console.log(
          `  layer  ${l.digest.slice(7, 19)}  ${mb(l.size).padStart(9)}  ${mb(l.uncompressedSize).padStart(9)}  ${l.comment}`,
        );
      const debs = s.labels['dev.skein.debian-packages'];
      if (debs) console.log(`  debian ${debs}`);
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url))
  main().catch((err: unknown) => {
    console.error(`skein-image: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  });
