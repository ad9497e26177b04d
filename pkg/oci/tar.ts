// A deterministic tar writer (and the reader its tests and the image tests use).
// Entries come out sorted by path with one fixed mtime and the owners given,
// so the same files always give the same bytes. POSIX ustar headers, with a
// PAX extended header for names or link targets longer than ustar holds.
import { createReadStream } from 'node:fs';

export type TarEntryType = 'file' | 'dir' | 'symlink';

export interface TarEntry {
  /** Relative path inside the archive, `/`-separated, without a leading `/` or `./`. */
  path: string;
  type: TarEntryType;
  /** Permission bits, including setuid/setgid/sticky. */
  mode: number;
  uid?: number;
  gid?: number;
  /** A file's content: in memory... */
  data?: Buffer;
  /** ...or read from disk when written (large files stay out of memory); needs `size`. */
  source?: string;
  size?: number;
  /** A symlink's target. */
  linkname?: string;
}

const BLOCK = 512;
const END = Buffer.alloc(BLOCK * 2);

/** Normalised path: no leading `./` or `/`, no trailing `/`. */
export function normalisePath(p: string): string {
  const n = p.replace(/^(\.\/|\/)+/, '').replace(/\/+$/, '');
  if (n === '' || n.split('/').some((s) => s === '..' || s === '.' || s === ''))
    throw new Error(`tar: bad path ${JSON.stringify(p)}`);
  return n;
}

function octal(value: number, width: number): string {
  const s = value.toString(8);
  if (s.length > width - 1) throw new Error(`tar: ${value} does not fit in ${width} octal digits`);
  return s.padStart(width - 1, '0') + '\0';
}

function header(
  name: string,
  typeflag: string,
  size: number,
  mtime: number,
  mode: number,
  uid: number,
  gid: number,
  linkname: string,
): Buffer {
  const h = Buffer.alloc(BLOCK);
  h.write(name, 0, 100, 'utf8');
  h.write(octal(mode & 0o7777, 8), 100, 'ascii');
  h.write(octal(uid, 8), 108, 'ascii');
  h.write(octal(gid, 8), 116, 'ascii');
  h.write(octal(size, 12), 124, 'ascii');
  h.write(octal(mtime, 12), 136, 'ascii');
  h.write(' '.repeat(8), 148, 'ascii'); // the checksum counts its own field as spaces
  h.write(typeflag, 156, 'ascii');
  h.write(linkname, 157, 100, 'utf8');
  h.write('ustar\0', 257, 'ascii');
  h.write('00', 263, 'ascii');
  h.write(octal(0, 8), 329, 'ascii');
  h.write(octal(0, 8), 337, 'ascii');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(octal(sum, 7) + ' ', 148, 'ascii');
  return h;
}

function pad(size: number): Buffer {
  const rest = size % BLOCK;
  return rest === 0 ? Buffer.alloc(0) : Buffer.alloc(BLOCK - rest);
}

/** One PAX record: `<len> key=value\n`, where len counts the whole record, itself included. */
function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  let len = Buffer.byteLength(body) + 1;
  while (String(len).length + Buffer.byteLength(body) !== len)
    len = String(len).length + Buffer.byteLength(body);
  return `${len}${body}`;
}

/** The entries in archive order: by path, bytewise, so a directory precedes its contents. */
export function sortEntries(entries: readonly TarEntry[]): TarEntry[] {
  const seen = new Set<string>();
  const out = entries.map((e) => {
    const p = normalisePath(e.path);
    if (seen.has(p)) throw new Error(`tar: ${p} appears twice`);
    seen.add(p);
    return { ...e, path: p };
  });
  return out.sort((a, b) => Buffer.compare(Buffer.from(a.path), Buffer.from(b.path)));
}

/**
 * The archive as a stream of chunks (feed it to a hash, gzip or file). Sorted,
 * every mtime `mtime`, owners 0 unless an entry says otherwise, names empty.
 */
export async function* tarChunks(entries: readonly TarEntry[], mtime: number): AsyncGenerator<Buffer> {
  for (const e of sortEntries(entries)) {
    const name = e.type === 'dir' ? `${e.path}/` : e.path;
    const linkname = e.linkname ?? '';
    if (e.type === 'symlink' && !linkname) throw new Error(`tar: symlink ${e.path} has no target`);
    const size = e.type === 'file' ? (e.data?.length ?? e.size ?? 0) : 0;
    if (e.type === 'file' && e.data === undefined && e.source === undefined && size !== 0)
      throw new Error(`tar: ${e.path} has a size but no content`);
    let pax = '';
    if (Buffer.byteLength(name) > 100) pax += paxRecord('path', name);
    if (Buffer.byteLength(linkname) > 100) pax += paxRecord('linkpath', linkname);
    const uid = e.uid ?? 0;
    const gid = e.gid ?? 0;
    if (pax) {
      const body = Buffer.from(pax);
      // The PAX header's own name is informative only; a fixed one keeps the bytes stable.
      yield header('././@PaxHeader', 'x', body.length, mtime, 0o644, 0, 0, '');
      yield body;
      yield pad(body.length);
    }
    const typeflag = e.type === 'file' ? '0' : e.type === 'dir' ? '5' : '2';
    // Names that need PAX still get a truncated ustar name for readers without it.
    yield header(cut(name, 100), typeflag, size, mtime, e.mode, uid, gid, cut(linkname, 100));
    if (e.type !== 'file') continue;
    if (e.data) yield e.data;
    else if (e.source !== undefined) {
      let read = 0;
      for await (const chunk of createReadStream(e.source)) {
        const b = chunk as Buffer;
        read += b.length;
        yield b;
      }
      if (read !== size) throw new Error(`tar: ${e.source} changed size while archived (${read} != ${size})`);
    }
    yield pad(size);
  }
  yield END;
}

function cut(s: string, bytes: number): string {
  const b = Buffer.from(s);
  return b.length <= bytes ? s : b.subarray(0, bytes).toString('utf8');
}

/** The whole archive in memory (small archives, tests). */
export async function writeTar(entries: readonly TarEntry[], mtime: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of tarChunks(entries, mtime)) parts.push(c);
  return Buffer.concat(parts);
}

export interface ReadEntry {
  path: string;
  type: TarEntryType | 'other';
  mode: number;
  uid: number;
  gid: number;
  mtime: number;
  linkname: string;
  data: Buffer;
}

function field(h: Buffer, start: number, len: number): string {
  const s = h.subarray(start, start + len);
  const nul = s.indexOf(0);
  return (nul === -1 ? s : s.subarray(0, nul)).toString('utf8');
}

const num = (h: Buffer, start: number, len: number) => Number.parseInt(field(h, start, len).trim() || '0', 8);

/** Parses a tar (ustar with PAX path/linkpath records), checking each header's checksum. */
export function readTar(buf: Buffer): ReadEntry[] {
  const out: ReadEntry[] = [];
  let off = 0;
  let pax: Record<string, string> = {};
  while (off + BLOCK <= buf.length) {
    const h = buf.subarray(off, off + BLOCK);
    if (h.every((b) => b === 0)) break;
    let sum = 0;
    for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 32 : (h[i] ?? 0);
    if (sum !== num(h, 148, 8)) throw new Error(`tar: bad checksum at offset ${off}`);
    const size = num(h, 124, 12);
    const typeflag = field(h, 156, 1);
    const data = buf.subarray(off + BLOCK, off + BLOCK + size);
    off += BLOCK + Math.ceil(size / BLOCK) * BLOCK;
    if (typeflag === 'x') {
      pax = {};
      for (const line of data.toString('utf8').split('\n')) {
        const m = /^\d+ ([^=]+)=(.*)$/s.exec(line);
        if (m?.[1] !== undefined && m[2] !== undefined) pax[m[1]] = m[2];
      }
      continue;
    }
    const prefix = field(h, 345, 155);
    const rawName = pax['path'] ?? (prefix ? `${prefix}/${field(h, 0, 100)}` : field(h, 0, 100));
    const type: ReadEntry['type'] =
      typeflag === '0' || typeflag === ''
        ? 'file'
        : typeflag === '5'
          ? 'dir'
          : typeflag === '2'
            ? 'symlink'
            : 'other';
    out.push({
      path: rawName.replace(/\/$/, ''),
      type,
      mode: num(h, 100, 8),
      uid: num(h, 108, 8),
      gid: num(h, 116, 8),
      mtime: num(h, 136, 12),
      linkname: pax['linkpath'] ?? field(h, 157, 100),
      data,
    });
    pax = {};
  }
  return out;
}
