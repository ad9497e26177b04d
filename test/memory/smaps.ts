// Where a process's resident memory lives, from /proc/<pid>/smaps (Linux): the Node
// binary's mapped text, other files (shared libraries), and anonymous memory (V8's
// heap, malloc, thread stacks).
import { readFileSync } from 'node:fs';

export interface ResidentBreakdown {
  /** Rss of mappings of the node executable itself (its text and data). */
  nodeBinaryMB: number;
  /** Rss of other file-backed mappings (libc, libstdc++, ...). */
  otherFilesMB: number;
  /** Rss of anonymous mappings ([heap], V8 pages, stacks). */
  anonymousMB: number;
}

const MB = 1024;

/** Sums Rss by kind of mapping; `executable` is the process's binary (process.execPath). */
export function residentBreakdown(smaps: string, executable: string): ResidentBreakdown {
  const out = { nodeBinaryMB: 0, otherFilesMB: 0, anonymousMB: 0 };
  let target: keyof ResidentBreakdown = 'anonymousMB';
  for (const line of smaps.split('\n')) {
    // A mapping's header: address range, perms, offset, dev, inode, then an optional path.
    const header = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ (\d+)\s*(.*)$/.exec(line);
    if (header) {
      const [, inode, name] = header;
      if (name === executable) target = 'nodeBinaryMB';
      else if (inode !== '0' && name?.startsWith('/')) target = 'otherFilesMB';
      else target = 'anonymousMB';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss?.[1]) out[target] += Number(rss[1]) / MB;
  }
  return out;
}

/** residentBreakdown of a running process, or undefined when it is gone. */
export function residentOf(pid: number, executable: string): ResidentBreakdown | undefined {
  try {
    return residentBreakdown(readFileSync(`/proc/${pid}/smaps`, 'utf8'), executable);
  } catch {
    return undefined;
  }
}
