import assert from 'node:assert/strict';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import type https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { loadKubeConfig } from './kubeconfig.js';

let dir: string;

before(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'skein-kubeconfig-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function kubeconfig(name: string, cluster: object, user: object): Promise<string> {
  const file = path.join(dir, name);
  const doc = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      { name: 'other', cluster: { server: 'https://wrong:1' } },
      { name: 'c', cluster },
    ],
    users: [{ name: 'u', user }],
    contexts: [
      { name: 'other', context: { cluster: 'other', user: 'u' } },
      { name: 'ctx', context: { cluster: 'c', user: 'u' } },
    ],
    'current-context': 'ctx',
  };
  await writeFile(file, JSON.stringify(doc));
  return file;
}

async function options(file: string): Promise<https.RequestOptions> {
  const opts: https.RequestOptions = { headers: { accept: 'application/json' } };
  await loadKubeConfig({ kubeconfig: file }).applyToHTTPSOptions(opts);
  return opts;
}

test('a kubeconfig file: the current context, base64 data, a bearer token', async () => {
  const file = await kubeconfig(
    'token.yaml',
    {
      server: 'https://10.0.0.1:6443',
      'certificate-authority-data': Buffer.from('CA PEM').toString('base64'),
      'tls-server-name': 'kubernetes',
    },
    { token: 'secret-token' },
  );
  assert.deepEqual(loadKubeConfig({ kubeconfig: file }).getCurrentCluster(), {
    server: 'https://10.0.0.1:6443',
  });
  const opts = await options(file);
  assert.equal(opts.ca?.toString(), 'CA PEM');
  assert.equal(opts.servername, 'kubernetes');
  assert.equal(opts.rejectUnauthorized, undefined);
  assert.deepEqual(opts.headers, { accept: 'application/json', authorization: 'Bearer secret-token' });
});

test('file references are relative to the kubeconfig; client certificates; insecure-skip-tls-verify', async () => {
  await writeFile(path.join(dir, 'client.crt'), 'CERT');
  await writeFile(path.join(dir, 'client.key'), 'KEY');
  const file = await kubeconfig(
    'certs.yaml',
    { server: 'https://api:6443', 'insecure-skip-tls-verify': true },
    { 'client-certificate': 'client.crt', 'client-key': path.join(dir, 'client.key') },
  );
  const opts = await options(file);
  assert.equal(opts.cert?.toString(), 'CERT');
  assert.equal(opts.key?.toString(), 'KEY');
  assert.equal(opts.rejectUnauthorized, false);
  assert.equal(opts.ca, undefined);
  assert.equal((opts.headers as Record<string, string>)['authorization'], undefined);
});

test('a token file is read on use and re-read after a minute, not on every request', async (t) => {
  const tokenFile = path.join(dir, 'token');
  await writeFile(tokenFile, 'first\n');
  const file = await kubeconfig('tokenfile.yaml', { server: 'https://api:6443' }, { tokenFile: 'token' });
  const kc = loadKubeConfig({ kubeconfig: file });
  const auth = async () => {
    const opts: https.RequestOptions = {};
    await kc.applyToHTTPSOptions(opts);
    return (opts.headers as Record<string, string>)['authorization'];
  };
  t.mock.timers.enable({ apis: ['Date'], now: 1_000_000 });
  assert.equal(await auth(), 'Bearer first');
  await writeFile(tokenFile, 'rotated\n');
  assert.equal(await auth(), 'Bearer first', 'cached within the minute');
  t.mock.timers.tick(61_000);
  assert.equal(await auth(), 'Bearer rotated');
});

test('in-cluster: KUBERNETES_SERVICE_HOST/PORT (IPv6 in brackets), the mounted CA and token', async (t) => {
  const sa = path.join(dir, 'sa');
  await import('node:fs/promises').then((fs) => fs.mkdir(sa, { recursive: true }));
  await writeFile(path.join(sa, 'ca.crt'), 'CLUSTER CA');
  await writeFile(path.join(sa, 'token'), 'sa-token');
  const env = { ...process.env };
  t.after(() => {
    process.env = env;
  });
  process.env['KUBERNETES_SERVICE_HOST'] = 'fd00::1';
  process.env['KUBERNETES_SERVICE_PORT'] = '443';
  const kc = loadKubeConfig({ inCluster: true, serviceAccountDir: sa });
  assert.deepEqual(kc.getCurrentCluster(), { server: 'https://[fd00::1]:443' });
  const opts: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(opts);
  assert.equal(opts.ca?.toString(), 'CLUSTER CA');
  assert.deepEqual(opts.headers, { authorization: 'Bearer sa-token' });
  delete process.env['KUBERNETES_SERVICE_HOST'];
  assert.throws(() => loadKubeConfig({ inCluster: true, serviceAccountDir: sa }), /KUBERNETES_SERVICE_HOST/);
});

test('an exec credential plugin is run through client-node', async () => {
  const plugin = path.join(dir, 'credential-plugin.sh');
  const credential = {
    apiVersion: 'client.authentication.k8s.io/v1',
    kind: 'ExecCredential',
    status: { token: 'from-plugin' },
  };
  await writeFile(plugin, `#!/bin/sh\necho '${JSON.stringify(credential)}'\n`);
  await chmod(plugin, 0o755);
  const file = await kubeconfig(
    'exec.yaml',
    { server: 'https://api:6443' },
    { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: plugin, interactiveMode: 'Never' } },
  );
  const kc = loadKubeConfig({ kubeconfig: file });
  assert.deepEqual(kc.getCurrentCluster(), { server: 'https://api:6443' });
  const opts: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(opts);
  assert.equal((opts.headers as Record<string, string>)['Authorization'], 'Bearer from-plugin');
});

test('bad kubeconfigs fail with the file and the reason', async () => {
  const none = path.join(dir, 'none.yaml');
  await writeFile(none, JSON.stringify({ apiVersion: 'v1', kind: 'Config', clusters: [] }));
  assert.throws(() => loadKubeConfig({ kubeconfig: none }), /none\.yaml: no current cluster/);
  const dangling = path.join(dir, 'dangling.yaml');
  await writeFile(
    dangling,
    JSON.stringify({ contexts: [{ name: 'x', context: { cluster: 'gone' } }], 'current-context': 'x' }),
  );
  assert.throws(() => loadKubeConfig({ kubeconfig: dangling }), /dangling\.yaml: no cluster named "gone"/);
  assert.throws(() => loadKubeConfig({}), /pass --kubeconfig or run in a pod/);
});
