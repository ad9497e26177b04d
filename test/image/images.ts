// Test support for the image tests: the archives `make image` / `make
// test-images` left in out/images/, unpacked with GNU tar (a reader
// independent of pkg/oci's) into a root filesystem a test can chroot into.
import { execFile } from 'node:child_process';
import { access, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';
import { promisify } from 'node:util';
import { repoRoot } from '../support/local-mesh.js';

export const run = promisify(execFile);
export const imagesDir = path.join(repoRoot, 'out', 'images');

export interface Summary {
  name: string;
  ref: string;
  file: string;
  digest: string;
  compressedSize: number;
  uncompressedSize: number;
  layers: { comment: string; digest: string; size: number; uncompressedSize: number }[];
  labels: Record<string, string>;
}

export interface OciConfig {
  architecture: string;
  os: string;
  config: {
    User?: string;
    Entrypoint?: string[];
    Cmd?: string[];
    Env?: string[];
    WorkingDir?: string;
    ExposedPorts?: Record<string, object>;
    Labels?: Record<string, string>;
  };
  rootfs: { diff_ids: string[] };
}

/** The summary cmd/skein-image wrote next to an archive, or why a test must skip. */
export async function summary(name: string): Promise<Summary | string> {
  const file = path.join(imagesDir, `${name}.json`);
  try {
    await access(path.join(imagesDir, `${name}.oci.tar`));
    return JSON.parse(await readFile(file, 'utf8')) as Summary;
  } catch {
    return `no out/images/${name}.oci.tar: run make ${name === 'controller' ? 'image' : 'test-images'}`;
  }
}

/** Unpacks an OCI archive's layout into `dir/layout` and its layers, in order, into `dir/rootfs`. */
export async function unpack(archive: string, dir: string) {
  const layout = path.join(dir, 'layout');
  const rootfs = path.join(dir, 'rootfs');
  await mkdir(layout, { recursive: true });
  await mkdir(rootfs, { recursive: true });
  await run('tar', ['-xf', archive, '-C', layout]);
  const blob = async (digest: string) =>
    readFile(path.join(layout, 'blobs', 'sha256', digest.replace(/^sha256:/, '')));
  const index = JSON.parse(await readFile(path.join(layout, 'index.json'), 'utf8')) as {
    manifests: { digest: string; annotations: Record<string, string> }[];
  };
  const desc = index.manifests[0]!;
  const manifest = JSON.parse((await blob(desc.digest)).toString()) as {
    config: { digest: string };
    layers: { digest: string }[];
  };
  const config = JSON.parse((await blob(manifest.config.digest)).toString()) as OciConfig;
  // As root GNU tar keeps the layers' owners and modes, as a container runtime would.
  for (const l of manifest.layers)
    await run('tar', [
      '--numeric-owner',
      '-xzf',
      path.join(layout, 'blobs', 'sha256', l.digest.slice(7)),
      '-C',
      rootfs,
    ]);
  return { index, manifest, config, rootfs, layout, digest: desc.digest };
}

/** Runs a command chrooted into `rootfs` with a clean environment (no host variables leak in). */
export function inRoot(rootfs: string, argv: string[], env: Record<string, string> = {}, netns?: string) {
  const cmd = [
    ...(netns ? ['ip', 'netns', 'exec', netns] : []),
    'env',
    '-i',
    'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    ...Object.entries(env).map(([k, v]) => `${k}=${v}`),
    'chroot',
    rootfs,
    ...argv,
  ];
  return run(cmd[0]!, cmd.slice(1), { maxBuffer: 16 << 20 });
}

/** The Dockerfile's final stage, as far as the image tests compare it. */
export interface DockerStage {
  entrypoint: string[];
  user: string;
  workdir: string;
  env: string[];
  expose: string[];
  /** Absolute paths COPY creates (a copy into a directory: the directory plus each source's name). */
  copies: string[];
  aptPackages: string[];
}

export function parseDockerfile(text: string): DockerStage {
  const lines = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const last = lines.map((l) => /^FROM\b/i.test(l)).lastIndexOf(true);
  const stage: DockerStage = {
    entrypoint: [],
    user: '',
    workdir: '/',
    env: [],
    expose: [],
    copies: [],
    aptPackages: [],
  };
  for (const l of lines.slice(last + 1)) {
    const [, op = '', rest = ''] = /^(\w+)\s+(.*)$/.exec(l) ?? [];
    switch (op.toUpperCase()) {
      case 'ENTRYPOINT':
        stage.entrypoint = JSON.parse(rest) as string[];
        break;
      case 'USER':
        stage.user = rest;
        break;
      case 'WORKDIR':
        stage.workdir = path.posix.resolve(stage.workdir, rest);
        break;
      case 'ENV':
        for (const kv of rest.split(/\s+/)) stage.env.push(kv);
        break;
      case 'EXPOSE':
        stage.expose.push(...rest.split(/\s+/).map((p) => (p.includes('/') ? p : `${p}/tcp`)));
        break;
      case 'COPY': {
        const args = rest.split(/\s+/).filter((a) => !a.startsWith('--'));
        const dest = args.pop() ?? '';
        const abs = path.posix.resolve(stage.workdir, dest);
        if (dest.endsWith('/') || args.length > 1)
          for (const s of args) stage.copies.push(path.posix.join(abs, path.posix.basename(s)));
        else stage.copies.push(abs);
        break;
      }
      case 'RUN': {
        const m = /apt-get install\s+(.*?)(&&|$)/.exec(rest);
        if (m?.[1]) stage.aptPackages.push(...m[1].split(/\s+/).filter((a) => a && !a.startsWith('-')));
        break;
      }
    }
  }
  return stage;
}

/**
 * The suite's unpacked image: unpacked in a `before` hook of the calling suite, removed
 * in its `after`; read `config` and `rootfs` inside tests.
 */
export function unpackedInSuite(
  archive: () => string,
  prefix: string,
): { readonly config: OciConfig; readonly rootfs: string } {
  let dir = '';
  let unpacked: { config: OciConfig; rootfs: string } | undefined;
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), prefix));
    unpacked = await unpack(archive(), dir);
  });
  after(() => rm(dir, { recursive: true, force: true }));
  const get = () => {
    if (!unpacked) throw new Error("the image is unpacked in the suite's before hook");
    return unpacked;
  };
  return {
    get config() {
      return get().config;
    },
    get rootfs() {
      return get().rootfs;
    },
  };
}
