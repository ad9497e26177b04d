// Loaded into the controller with `node --import` by probe.ts: on SIGUSR2 it writes the
// V8 heap figures before and after a full GC to $SKEIN_MEMORY_PROBE_OUT. Node built-ins
// only, so the hook adds next to nothing to what it measures.
import { writeFileSync } from 'node:fs';
import { getHeapSpaceStatistics, setFlagsFromString, writeHeapSnapshot } from 'node:v8';
import { runInNewContext } from 'node:vm';

const out = process.env['SKEIN_MEMORY_PROBE_OUT'];
if (out) {
  setFlagsFromString('--expose-gc');
  // A fresh context sees the gc() the flag just exposed.
  const gc = runInNewContext('gc') as () => void;
  const MB = 1024 * 1024;
  const snapshot = () => {
    const u = process.memoryUsage();
    const spaces: Record<string, { committedMB: number; usedMB: number }> = {};
    for (const s of getHeapSpaceStatistics())
      spaces[s.space_name] = {
        committedMB: Math.round((s.space_size / MB) * 10) / 10,
        usedMB: Math.round((s.space_used_size / MB) * 10) / 10,
      };
    return {
      rssMB: u.rss / MB,
      heapTotalMB: u.heapTotal / MB,
      heapUsedMB: u.heapUsed / MB,
      externalMB: u.external / MB,
      arrayBuffersMB: u.arrayBuffers / MB,
      spaces,
    };
  };
  process.on('SIGUSR2', () => {
    const before = snapshot();
    gc();
    const after = snapshot();
    // SKEIN_MEMORY_PROBE_SNAPSHOT=<file>: also a heap snapshot, to see what the live heap holds.
    const heapFile = process.env['SKEIN_MEMORY_PROBE_SNAPSHOT'];
    if (heapFile) writeHeapSnapshot(heapFile);
    writeFileSync(out, JSON.stringify({ before, after }));
  });
}
