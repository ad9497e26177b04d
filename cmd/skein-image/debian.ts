// Debian packages for the images' root filesystem: the candidate version apt
// knows, downloaded once into the cache (`apt-get download`, no install, no
// maintainer scripts) and unpacked with `dpkg-deb -x`.
import { execFile } from 'node:child_process';
import { access, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface Deb {
  name: string;
  version: string;
  file: string;
}

async function exists(p: string): Promise<boolean> {
  return access(p).then(
    () => true,
    () => false,
  );
}

/** Candidate version and architecture of each package, from apt's lists. */
async function candidates(names: readonly string[]): Promise<Map<string, { version: string; arch: string }>> {
  const { stdout } = await run('apt-cache', ['show', '--no-all-versions', ...names], { maxBuffer: 16 << 20 });
  const out = new Map<string, { version: string; arch: string }>();
  for (const para of stdout.split(/\n\n+/)) {
    const f = (k: string) => new RegExp(`^${k}: (.+)$`, 'm').exec(para)?.[1];
    const name = f('Package');
    const version = f('Version');
    const arch = f('Architecture');
    if (name && version && arch && !out.has(name)) out.set(name, { version, arch });
  }
  for (const n of names) if (!out.has(n)) throw new Error(`apt knows no package ${n} (apt-get update?)`);
  return out;
}

/** The packages' .deb files in `cache`, downloading the missing ones. */
export async function download(names: readonly string[], cache: string): Promise<Deb[]> {
  await mkdir(cache, { recursive: true });
  const versions = await candidates(names);
  const debs: Deb[] = [];
  const missing: string[] = [];
  for (const name of names) {
    const { version, arch } = versions.get(name)!;
    // apt-get download's file name: the epoch's colon is URL-encoded.
    const file = path.join(cache, `${name}_${version.replace(/:/g, '%3a')}_${arch}.deb`);
    if (!(await exists(file))) missing.push(`${name}=${version}`);
    debs.push({ name, version, file });
  }
  if (missing.length)
    await run('apt-get', ['download', '-q', ...missing], { cwd: cache, maxBuffer: 16 << 20 });
  for (const d of debs) if (!(await exists(d.file))) throw new Error(`apt-get download left no ${d.file}`);
  return debs;
}

/** Unpacks every package's files into `dir` (ownership and modes as packaged). */
export async function extract(debs: readonly Deb[], dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const d of debs) await run('dpkg-deb', ['-x', d.file, dir]);
}
