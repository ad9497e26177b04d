import assert from 'node:assert/strict';
import { test } from 'node:test';
import { commandPath, flagIndex, resolveArgs } from './args.js';
import { UsageError } from './errors.js';
import { GLOBAL_FLAGS, ROOT } from './root.js';

const parse = (...argv: string[]) => resolveArgs(ROOT, GLOBAL_FLAGS, argv);

test('words select subcommands until the first positional; flags may come anywhere', () => {
  const r = parse('-n', 'shop', 'proxy', 'get', '--controller-url=http://h:1', 'status', 'web-1');
  assert.equal(commandPath(r.path), 'skein proxy get status');
  assert.deepEqual(r.args, ['web-1']);
  assert.equal(r.flags.string('namespace'), 'shop');
  assert.equal(r.flags.string('controller-url'), 'http://h:1');
  assert.equal(r.help, false);
});

test('a positional named like a subcommand after the first positional stays a positional', () => {
  const r = parse('policy', 'check', 'status', 'config');
  assert.equal(commandPath(r.path), 'skein policy check');
  assert.deepEqual(r.args, ['status', 'config']);
});

test('short forms -n v, -n=v and -nv; a flag value is never taken for a subcommand', () => {
  for (const form of [['-n', 'ns1'], ['-n=ns1'], ['-nns1']]) {
    const r = parse('policy', 'check', ...form, 'a', 'b');
    assert.equal(r.flags.string('namespace'), 'ns1', form.join(' '));
  }
  const r = parse('namespace', 'list', '--mesh-name', 'add');
  assert.equal(commandPath(r.path), 'skein namespace list');
  assert.equal(r.flags.string('mesh-name'), 'add');
});

test('repeatable flags keep every value in order; booleans take =true/=false; -- ends flags', () => {
  const r = parse('install', '--set', 'a=1', '--set=b.c=x', '--wait=false', '--permissive');
  assert.deepEqual(r.flags.strings('set'), ['a=1', 'b.c=x']);
  assert.equal(r.flags.has('wait'), true);
  assert.equal(r.flags.boolean('wait'), false);
  assert.equal(r.flags.boolean('permissive'), true);
  assert.equal(r.flags.has('timeout'), false);
  const d = parse('namespace', 'add', '--', '--weird');
  assert.deepEqual(d.args, ['--weird']);
});

test('-h/--help anywhere asks for help of the command reached', () => {
  const r = parse('namespace', '--help', 'add');
  assert.equal(r.help, true);
  assert.equal(commandPath(r.path), 'skein namespace add');
});

test('usage errors: unknown flag, a flag of another command, missing value, bad boolean', () => {
  assert.throws(
    () => parse('version', '--frob'),
    (e: unknown) => e instanceof UsageError && /unknown flag --frob/.test(e.message),
  );
  assert.throws(
    () => parse('version', '--permissive'),
    (e: unknown) => e instanceof UsageError && e.message === 'unknown flag --permissive for "skein version"',
  );
  assert.throws(() => parse('namespace', 'add', 'x', '--mesh-name'), /flag --mesh-name needs a value/);
  assert.throws(() => parse('install', '--wait=maybe'), /true or false/);
  assert.throws(() => parse('install', '-x'), /unknown flag -x/);
});

test('the command table defines each flag name with one type and shorthand', () => {
  const index = flagIndex(ROOT, GLOBAL_FLAGS);
  assert.equal(index.get('namespace')?.short, 'n');
  assert.equal(index.get('help')?.type, 'boolean');
});
