import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const cli = fileURLToPath(new URL('./main.js', import.meta.url));
const run = (...args: string[]) => spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8' });

test('skein --help lists the commands', () => {
  const r = run('--help');
  assert.equal(r.status, 0);
  assert.match(r.stdout, /Usage:\n {2}skein <command>/);
  assert.match(r.stdout, /version/);
});

test('skein version prints the package version', () => {
  const r = run('version');
  assert.equal(r.status, 0);
  assert.match(r.stdout, /^skein \d+\.\d+\.\d+/);
});

test('an unknown command fails with exit 2 and says which', () => {
  const r = run('frobnicate');
  assert.equal(r.status, 2);
  assert.match(r.stderr, /unknown command "frobnicate"/);
});
