import assert from 'node:assert/strict';
import { test } from 'node:test';
import { residentBreakdown, residentOf } from './smaps.js';

const SAMPLE = `55d0c0000000-55d0c2000000 r-xp 00000000 08:01 1234 /usr/bin/node
Size:              32768 kB
Rss:               20480 kB
55d0c3000000-55d0c3100000 rw-p 00000000 00:00 0 [heap]
Rss:                1024 kB
7f0000000000-7f0000200000 r-xp 00000000 08:01 99 /usr/lib/x86_64-linux-gnu/libc.so.6
Rss:                2048 kB
7f1000000000-7f1001000000 rw-p 00000000 00:00 0
Rss:                4096 kB
`;

test('residentBreakdown sums Rss by the binary, other files and anonymous mappings', () => {
  assert.deepEqual(residentBreakdown(SAMPLE, '/usr/bin/node'), {
    nodeBinaryMB: 20,
    otherFilesMB: 2,
    anonymousMB: 5,
  });
});

test('residentOf reads this process: its binary is resident and the parts sum to about its RSS', () => {
  const r = residentOf(process.pid, process.execPath);
  assert.ok(r, 'smaps readable');
  assert.ok(r.nodeBinaryMB > 1, `node binary resident: ${r.nodeBinaryMB} MB`);
  const total = r.nodeBinaryMB + r.otherFilesMB + r.anonymousMB;
  const rss = process.memoryUsage().rss / 1024 / 1024;
  // smaps and memoryUsage are read a moment apart; the heap may move by a few MB between.
  assert.ok(Math.abs(total - rss) < Math.max(8, rss * 0.1), `smaps ${total} MB vs rss ${rss} MB`);
});
