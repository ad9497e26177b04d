// Outside-in process figures from /proc (Linux): resident memory and CPU time.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let ticksPerSecond: number | undefined;

function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100; // USER_HZ is 100 on every mainstream Linux build
    }
  }
  return ticksPerSecond;
}

/** VmRSS of a process in bytes, or undefined when it is gone. */
export function rssBytes(pid: number): number | undefined {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m?.[1] ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** User + system CPU seconds a process used so far (10 ms resolution), or undefined when it is gone. */
export function cpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may contain spaces; fields after its closing paren are fixed.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // After ')' the fields start at field 3 (state); utime and stime are fields 14 and 15.
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    return (utime + stime) / clockTicks();
  } catch {
    return undefined;
  }
}
