import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type CompletionLookup, complete, completionScript, FILE_DIRECTIVE } from './completion.js';
import { GLOBAL_FLAGS, ROOT } from './root.js';

const lookup: CompletionLookup = {
  namespaces: async () => ['bookstore', 'bookbuyer', 'default'],
  pods: async (ns) => (ns === 'bookstore' ? ['bookstore-v1', 'bookstore-v2'] : ['web']),
  contexts: async () => ['prod', 'test'],
};
const c = (...words: string[]) => complete(ROOT, GLOBAL_FLAGS, words, lookup);

test('commands and subcommands come from the table; hidden ones are left out', async () => {
  const top = await c('');
  assert.ok(top.includes('install') && top.includes('policy') && top.includes('help'));
  assert.ok(!top.includes('__complete'));
  assert.deepEqual(await c('na'), ['namespace']);
  assert.deepEqual(await c('proxy', 'get', ''), ['status', 'config', 'stats']);
});

test("flags: the command's own, its parents' and the global ones", async () => {
  const flags = await c('namespace', 'add', '--');
  assert.ok(flags.includes('--enable-sidecar-injection'));
  assert.ok(flags.includes('--kubeconfig'));
  assert.ok(!flags.includes('--controller-url'));
  assert.deepEqual(await c('install', '--perm'), ['--permissive']);
});

test('values: choices, files, contexts; positionals: namespaces and pods of the -n namespace', async () => {
  assert.deepEqual(await c('completion', ''), ['bash', 'zsh', 'fish']);
  assert.deepEqual(await c('install', '--values', ''), [FILE_DIRECTIVE]);
  assert.deepEqual(await c('version', '--context', 'p'), ['prod']);
  assert.deepEqual(await c('namespace', 'add', 'book'), ['bookstore', 'bookbuyer']);
  assert.deepEqual(await c('proxy', 'get', 'status', '-n', 'bookstore', ''), [
    'bookstore-v1',
    'bookstore-v2',
  ]);
  assert.deepEqual(await c('proxy', 'get', 'status', '--namespace=bookstore', 'x', ''), [], 'one pod only');
  assert.deepEqual(await c('policy', 'check', 'a', ''), ['web']);
  // With --to (or --from-ip) one pod is the whole argument list.
  assert.deepEqual(await c('policy', 'check', 'a', '--to', 'https://x', ''), []);
  assert.deepEqual(await c('policy', 'check', '--from-ip', '10.0.0.1', ''), ['web']);
  assert.deepEqual(await c('policy', 'check', 'a', '--to', ''), ['http://', 'https://', 'tcp://']);
  assert.deepEqual(await c('policy', 'check', 'a', 'b', '-o', ''), ['text', 'json']);
});

test('the bash script completes through the real CLI in a real bash', () => {
  const cli = path.resolve(
    path.dirname(fileURLToPath(import.meta.url)),
    '..',
    '..',
    'cmd',
    'skein',
    'main.js',
  );
  const script = completionScript('bash');
  const probe = (line: string[]) => {
    const words = line.map((w) => `'${w}'`).join(' ');
    const r = spawnSync(
      'bash',
      [
        '-c',
        `skein() { "${process.execPath}" "${cli}" "$@"; }
${script}
COMP_WORDS=(${words}); COMP_CWORD=${line.length - 1}
_skein; printf '%s\\n' "\${COMPREPLY[@]}"`,
      ],
      { encoding: 'utf8', env: { PATH: process.env['PATH'] ?? '', HOME: '/nonexistent' } },
    );
    assert.equal(r.status, 0, r.stderr);
    return r.stdout.split('\n').filter(Boolean);
  };
  assert.deepEqual(probe(['skein', 'namespace', 're']), ['remove']);
  assert.deepEqual(probe(['skein', 'completion', '']), ['bash', 'zsh', 'fish']);
  assert.deepEqual(probe(['skein', 'dashboard', '--no']), ['--no-browser']);
});

test('zsh and fish scripts call back into `skein __complete`', () => {
  assert.match(completionScript('zsh'), /^#compdef skein\n/);
  assert.match(completionScript('zsh'), /__complete "\$\{\(@\)words\[2,CURRENT\]\}"/);
  assert.match(completionScript('fish'), /complete -c skein -f -a '\(___skein_complete\)'/);
  assert.match(completionScript('fish'), /skein __complete \$tokens/);
});
