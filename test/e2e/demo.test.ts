// Smoke test of `make demo`: the demo binary, run for a few seconds with its
// workload ports shifted (so it never meets a running demo or other tests),
// must show the 75/25 split reaching both bookstore versions and bookthief
// being denied, and leave no process behind.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseRow, type Row } from '../demo/table.js';

const demoScript = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'demo', 'main.js');
const EXIT_PORT_BUSY = 3;

function runDemo(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [demoScript, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => {
      stdout += b.toString();
    });
    child.stderr.on('data', (b: Buffer) => {
      stderr += b.toString();
    });
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Offsets keep every port (14011..14031 + offset) below Linux's ephemeral range (32768+). */
function randomOffset(): number {
  return 1000 + Math.floor(Math.random() * 17_000);
}

test('make demo: bookbuyer reaches both bookstore versions, bookthief is only denied', {
  timeout: 90_000,
}, async () => {
  let run: Awaited<ReturnType<typeof runDemo>> | undefined;
  let offset = 0;
  // A random port that happens to be taken is a reason to draw again, not to skip.
  for (let attempt = 0; attempt < 3; attempt++) {
    offset = randomOffset();
    run = await runDemo(['--duration', '8', '--port-offset', String(offset)]);
    if (run.code !== EXIT_PORT_BUSY) break;
  }
  assert.ok(run);
  assert.equal(run.code, 0, `demo failed:\n${run.stdout}\n${run.stderr}`);

  const lines = run.stdout.split('\n');
  const finalAt = lines.findIndex((l) => l.startsWith('final counts'));
  assert.ok(finalAt >= 0, `no final counts in:\n${run.stdout}`);
  const rows = lines
    .slice(finalAt)
    .map(parseRow)
    .filter((r): r is Row => r !== undefined);
  const of = (caller: string) => rows.filter((r) => r.caller === caller);

  const buyer = of('bookbuyer');
  for (const backend of ['bookstore-v1', 'bookstore-v2']) {
    const row = buyer.find((r) => r.outcome === 'ok' && r.key === backend);
    assert.ok(row && row.total > 0, `bookbuyer got no OK from ${backend}:\n${run.stdout}`);
  }
  const thief = of('bookthief');
  assert.ok(thief.length > 0, `no bookthief rows:\n${run.stdout}`);
  assert.deepEqual(
    thief.filter((r) => r.outcome !== 'denied'),
    [],
    'bookthief must get denials only',
  );
  assert.ok(thief.every((r) => r.key === 'PERMISSION_DENIED' && r.total > 0));

  // The shifted ports were used, and the temp dir and every child are gone.
  assert.match(run.stdout, new RegExp(`127\\.0\\.0\\.21:${14021 + offset}\\b`));
  const manifests = /manifests: (\S+)/.exec(run.stdout)?.[1];
  assert.ok(manifests, 'the demo prints where its manifests are');
  assert.equal(existsSync(manifests), false, 'temp dir removed on a clean exit');
  const root = path.dirname(manifests);
  const ps = execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' });
  const leftovers = ps
    .split('\n')
    .filter((l) => l.includes(root) || (/workload\.js/.test(l) && l.includes(`:${14021 + offset}`)));
  assert.deepEqual(leftovers, [], 'no demo process outlives the demo');
});
