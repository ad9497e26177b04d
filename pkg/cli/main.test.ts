import assert from 'node:assert/strict';
import { test } from 'node:test';
import { imageTag } from './commands/version.js';
import { runCli } from './main.js';

async function run(...argv: string[]) {
  let out = '';
  let err = '';
  const code = await runCli(argv, {
    out: (t) => {
      out += t;
    },
    err: (t) => {
      err += t;
    },
    env: { HOME: '/nonexistent' },
    signal: new AbortController().signal,
  });
  return { code, out, err };
}

test('--help on every command: usage line, its flags, the global flags', async () => {
  const r = await run('policy', 'check', '--help');
  assert.equal(r.code, 0);
  assert.match(r.out, /^skein policy check — /);
  assert.match(r.out, /Usage:\n {2}skein policy check <src-pod> <dst-pod> \[flags\]/);
  // One usage line per argument form.
  assert.match(
    r.out,
    /\n {2}skein policy check <src-pod> --to <url> \[flags\]\n {2}skein policy check --from-ip <ip> <dst-pod> \[flags\]\n/,
  );
  assert.match(r.out, /-o, --output <format> +Output format: text or json \(default text\)/);
  assert.match(r.out, /-n, --namespace <ns>/);
  assert.match(r.out, /Global flags:\n {2}-h, --help[\s\S]*--kubeconfig <file>[\s\S]*--context <name>/);
  const help = await run('help', 'namespace');
  assert.match(help.out, /Commands:\n {2}add {5}Add namespaces/);
});

test('usage errors: exit 2, one line plus where to get help, no stack', async () => {
  const r = await run('policy', 'check', 'only-one');
  assert.equal(r.code, 2);
  assert.equal(
    r.err,
    'skein: skein policy check needs <src-pod> <dst-pod> or <src-pod> --to <url> or --from-ip <ip> <dst-pod>\nRun "skein policy check --help" for usage.\n',
  );
  // A form's flag sets the argument count.
  const tooMany = await run('policy', 'check', 'a', 'b', '--to', 'https://github.com');
  assert.match(
    tooMany.err,
    /^skein: skein policy check takes at most 1 argument\(s\): <src-pod> --to <url>\n/,
  );
  const both = await run('policy', 'check', 'a', '--to', 'https://x', '--from-ip', '10.0.0.1');
  assert.equal(both.code, 2);
  assert.match(both.err, /--to and --from-ip ask different questions/);
  assert.match(
    (await run('policy', 'check', 'a', 'b', '-o', 'yaml')).err,
    /--output "yaml": use text or json/,
  );
  assert.match(
    (await run('policy', 'check', 'a', '--host', 'x', '--to', 'tcp://1.2.3.4:5')).err,
    /--host goes with --from-ip/,
  );
  const extra = await run('version', 'surprise');
  assert.match(extra.err, /skein version takes no arguments \(got "surprise"\)/);
  const group = await run('proxy');
  assert.equal(group.code, 2);
  assert.match(group.err, /^skein proxy: choose a command/);
});

test('version without any kubeconfig: the CLI version, and why the controller is unknown', async () => {
  const r = await run('version');
  assert.equal(r.code, 0);
  assert.match(r.out, /^skein \d+\.\d+\.\d+\ncontroller: unknown \(no kubeconfig: /);
  assert.match((await run('version', '--client')).out, /^skein \d+\.\d+\.\d+\n$/);
});

test('controller image tags', () => {
  assert.equal(imageTag('ghcr.io/x/skein-controller:0.2.0'), '0.2.0');
  assert.equal(imageTag('localhost:5000/skein'), 'localhost:5000/skein (no tag: latest)');
  assert.equal(imageTag('skein@sha256:ab'), 'skein@sha256:ab');
});
