// The helm driver against a stand-in helm (a shell script that records its
// arguments and answers like helm does): flags, values file, streamed lines,
// and the errors a person sees. The real helm runs in test/kube/helm.test.ts.
import assert from 'node:assert/strict';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  HELM_ENV,
  HelmError,
  HelmNotFoundError,
  helmStatus,
  helmUninstall,
  helmUpgradeInstall,
  resolveHelmPath,
  runHelm,
} from './helm.js';

// Records argv (one per line) and, for `upgrade`, the values file it was given;
// `status`/`get metadata` answer JSON, an unknown release answers like helm 3.
const FAKE_HELM = `#!/bin/sh
printf '%s\\n' "$@" > "$FAKE_DIR/args-$1"
case "$1" in
  upgrade)
    while [ $# -gt 0 ]; do
      if [ "$1" = "--values" ]; then cp "$2" "$FAKE_DIR/values.json"; fi
      shift
    done
    echo 'Release "r" does not exist. Installing it now.'
    echo 'progress on stderr' >&2
    echo 'STATUS: deployed' ;;
  status)
    if [ "$2" = "missing" ]; then echo 'Error: release: not found' >&2; exit 1; fi
    echo '{"name":"r","info":{"status":"deployed","notes":"next: label a namespace"},"version":3,"namespace":"ns"}' ;;
  get)
    echo '{"name":"r","chart":"skein","version":"0.1.0","appVersion":"0.1.0","namespace":"ns","revision":3,"status":"deployed"}' ;;
  uninstall)
    if [ "$2" = "missing" ]; then echo 'Error: uninstall: Release not loaded: missing: release: not found' >&2; exit 1; fi
    echo 'release "r" uninstalled' ;;
  *) echo "Error: unknown command \\"$1\\"" >&2; exit 1 ;;
esac
`;

describe('pkg/install/helm driver', () => {
  let dir: string;
  let helmPath: string;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'skein-fake-helm-'));
    helmPath = path.join(dir, 'helm');
    await writeFile(helmPath, FAKE_HELM);
    await chmod(helmPath, 0o755);
  });
  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const ctx = () => ({ helmPath, env: { FAKE_DIR: dir }, kubeconfig: '/k/config', kubeContext: 'prod' });
  const args = async (cmd: string) =>
    (await readFile(path.join(dir, `args-${cmd}`), 'utf8')).trim().split('\n');

  test('resolveHelmPath: explicit path, else $SKEIN_HELM, else helm on PATH', () => {
    assert.equal(resolveHelmPath({ helmPath: '/a/helm' }, { [HELM_ENV]: '/b/helm' }), '/a/helm');
    assert.equal(resolveHelmPath({}, { [HELM_ENV]: '/b/helm' }), '/b/helm');
    assert.equal(resolveHelmPath({}, { [HELM_ENV]: '' }), 'helm');
    assert.equal(resolveHelmPath({}, {}), 'helm');
  });

  test('upgrade --install: flags, values as a file, every output line streamed, status afterwards', async () => {
    const lines: [string, string][] = [];
    const release = await helmUpgradeInstall({
      ...ctx(),
      release: 'r',
      namespace: 'ns',
      chart: '/charts/skein',
      skipCrds: true,
      values: { meshName: 'm', webhook: { failurePolicy: 'Ignore' } },
      onLine: (line, stream) => lines.push([stream, line]),
    });
    const a = await args('upgrade');
    assert.deepEqual(a.slice(0, 7), [
      'upgrade',
      '--install',
      'r',
      '/charts/skein',
      '--namespace',
      'ns',
      '--create-namespace',
    ]);
    assert.ok(a.includes('--skip-crds'));
    assert.ok(!a.includes('--wait'));
    assert.deepEqual(a.slice(-4), ['--kubeconfig', '/k/config', '--kube-context', 'prod']);
    assert.deepEqual(JSON.parse(await readFile(path.join(dir, 'values.json'), 'utf8')), {
      meshName: 'm',
      webhook: { failurePolicy: 'Ignore' },
    });
    // Two pipes: the order within each stream is kept, not across them.
    const of = (stream: string) => lines.filter(([s]) => s === stream).map(([, l]) => l);
    assert.deepEqual(of('stdout'), ['Release "r" does not exist. Installing it now.', 'STATUS: deployed']);
    assert.deepEqual(of('stderr'), ['progress on stderr']);
    assert.deepEqual(release, {
      name: 'r',
      namespace: 'ns',
      revision: 3,
      status: 'deployed',
      chart: 'skein',
      chartVersion: '0.1.0',
      appVersion: '0.1.0',
      notes: 'next: label a namespace',
    });
  });

  test('a missing release: status undefined, uninstall false; other failures carry helm’s words', async () => {
    assert.equal(await helmStatus({ ...ctx(), release: 'missing', namespace: 'ns' }), undefined);
    assert.equal(await helmUninstall({ ...ctx(), release: 'missing', namespace: 'ns' }), false);
    assert.equal(await helmUninstall({ ...ctx(), release: 'r', namespace: 'ns', wait: true }), true);
    assert.ok((await args('uninstall')).includes('--wait'));
    await assert.rejects(
      runHelm(['frobnicate'], ctx()),
      (err: unknown) =>
        err instanceof HelmError &&
        err.exitCode === 1 &&
        err.message.includes('Error: unknown command "frobnicate"'),
    );
  });

  test('helm that cannot be started is HelmNotFoundError naming the path and the fix', async () => {
    await assert.rejects(runHelm(['version'], { helmPath: path.join(dir, 'nope') }), (err: unknown) => {
      assert.ok(err instanceof HelmNotFoundError);
      assert.match(err.message, /nope/);
      assert.match(err.message, /SKEIN_HELM/);
      return true;
    });
  });
});
