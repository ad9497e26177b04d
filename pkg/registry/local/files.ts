import { type Dirent, readFileSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';

export interface FileStamp {
  mtimeMs: number;
  size: number;
}

const MANIFEST = /\.(ya?ml|json)$/;

function isMissing(err: unknown): boolean {
  return err instanceof Error && 'code' in err && (err.code === 'ENOENT' || err.code === 'ENOTDIR');
}

async function stampOf(file: string): Promise<FileStamp | undefined> {
  try {
    const st = await stat(file);
    return st.isFile() ? { mtimeMs: st.mtimeMs, size: st.size } : undefined;
  } catch (err) {
    // Deleted between readdir and stat: the next scan sees it gone.
    if (isMissing(err)) return undefined;
    throw err;
  }
}

/**
 * Every manifest file (`*.yaml`, `*.yml`, `*.json`) under `root`, recursively,
 * with its mtime and size; `root` may also be a single file. Hidden entries are
 * skipped: a ConfigMap volume keeps each file twice, once under a hidden
 * `..<timestamp>` directory. Symlinked files are followed (that is how such a
 * volume exposes them), symlinked directories are not (no loops).
 */
export async function listManifestFiles(root: string): Promise<Map<string, FileStamp>> {
  const out = new Map<string, FileStamp>();
  const top = await stat(root);
  if (top.isFile()) {
    out.set(root, { mtimeMs: top.mtimeMs, size: top.size });
    return out;
  }
  const pending: Promise<void>[] = [];
  const walk = async (dir: string): Promise<void> => {
    let entries: Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (err) {
      if (isMissing(err) && dir !== root) return;
      throw err;
    }
    for (const e of entries) {
      if (e.name.startsWith('.')) continue;
      const full = path.join(dir, e.name);
      if (e.isDirectory()) pending.push(walk(full));
      else if ((e.isFile() || e.isSymbolicLink()) && MANIFEST.test(e.name))
        pending.push(
          stampOf(full).then((s) => {
            if (s) out.set(full, s);
          }),
        );
    }
  };
  await walk(root);
  // walk() adds to `pending` while earlier entries settle; drain until none are left.
  for (let i = 0; i < pending.length; i++) await pending[i];
  return out;
}

/**
 * The stamps of `known` files updated for the `hinted` paths fs.watch named,
 * stat-ing only those: a change costs one stat, not one per manifest. Returns
 * undefined when the hints cannot be trusted to cover the change (a path that
 * is a directory, hidden, not a manifest name, or gone without having been a
 * known file), and the caller walks the whole tree instead.
 */
export async function restampHinted(
  root: string,
  known: ReadonlyMap<string, FileStamp>,
  hinted: ReadonlySet<string>,
): Promise<Map<string, FileStamp> | undefined> {
  const out = new Map(known);
  for (const file of hinted) {
    const rel = path.relative(root, file);
    if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) return undefined;
    if (rel.split(path.sep).some((part) => part.startsWith('.'))) return undefined;
    if (!MANIFEST.test(path.basename(file))) return undefined;
    let st: Awaited<ReturnType<typeof stat>>;
    try {
      st = await stat(file);
    } catch (err) {
      if (!isMissing(err) || !known.has(file)) return undefined;
      out.delete(file);
      continue;
    }
    if (!st.isFile()) return undefined;
    out.set(file, { mtimeMs: st.mtimeMs, size: st.size });
  }
  return out;
}

/** A file's text, or why it could not be read. */
export type FileRead = { file: string; text: string } | { file: string; error: unknown };

/**
 * Reads `files` as UTF-8 and yields them in the given order, with up to
 * `window` reads in flight. One read is four trips to libuv's thread pool
 * (open, fstat, read, close); one file at a time, a start that reads 7,500
 * manifests left the main thread waiting ~1.5 s with the pool mostly idle.
 * The window bounds the texts held at once. `blocking` reads each file
 * synchronously instead, a quarter of the main thread's time per file: for a
 * start, when there is nothing yet to serve. Never rejects: a failed read is
 * yielded with its error, for the caller to report against that file.
 */
export async function* readInOrder(
  files: readonly string[],
  { window = 32, blocking = false }: { window?: number; blocking?: boolean } = {},
): AsyncGenerator<FileRead> {
  if (blocking) {
    for (const file of files) yield readNow(file);
    return;
  }
  const reads: (Promise<FileRead> | undefined)[] = [];
  const start = (i: number): void => {
    const file = files[i];
    if (file === undefined) return;
    reads[i] = readFile(file, 'utf8').then(
      (text) => ({ file, text }),
      (error: unknown) => ({ file, error }),
    );
  };
  for (let i = 0; i < window; i++) start(i);
  for (let i = 0; i < files.length; i++) {
    const read = reads[i];
    reads[i] = undefined;
    start(i + window);
    if (read) yield await read;
  }
}

function readNow(file: string): FileRead {
  try {
    return { file, text: readFileSync(file, 'utf8') };
  } catch (error) {
    return { file, error };
  }
}
