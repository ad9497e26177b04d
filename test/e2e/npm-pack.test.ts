// skein as a user installs it from a package: `npm pack` of this checkout
// (after `make build`), installed into an empty directory, gives working
// `skein` and `skein-controller` commands. The controller runs the bundled
// example mesh from the installed files alone (its Envoy proto list, CRD
// schemas and web assets must be in the package) and its bins are executable,
// as npx and npm's bin links need.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { access, constants, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { repoRoot } from '../support/local-mesh.js';
import { JsonLineProcess } from '../support/processes.js';

const run = promisify(execFile);

describe('the npm package', { timeout: 300_000 }, () => {
  let dir = '';
  let bin = '';

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'skein-pack-'));
    const packed = await run('npm', ['pack', '--silent', '--pack-destination', dir], { cwd: repoRoot });
    const tarball = path.join(dir, packed.stdout.trim().split('\n').at(-1) ?? '');
    const app = path.join(dir, 'app');
    await mkdir(app);
    await writeFile(path.join(app, 'package.json'), JSON.stringify({ name: 'app', private: true }));
    // Production dependencies only, as a user's install gets them.
    await run('npm', ['install', '--no-audit', '--no-fund', '--omit=dev', tarball], {
      cwd: app,
      maxBuffer: 16 << 20,
    });
    bin = path.join(app, 'node_modules', '.bin');
  });
  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('holds the built commands and what they read at run time, and no test files', async () => {
    const pkg = path.join(bin, '..', 'skein');
    for (const f of ['dist/cmd/skein/main.js', 'protos/envoy-protos.txt', 'charts/skein/Chart.yaml'])
      await access(path.join(pkg, f));
    await assert.rejects(access(path.join(pkg, 'dist/pkg/catalog/view.test.js')));
    const manifest = JSON.parse(await readFile(path.join(pkg, 'package.json'), 'utf8')) as { bin: object };
    for (const f of Object.values(manifest.bin) as string[]) {
      await access(path.join(pkg, f), constants.X_OK);
      // The checkout's own build too: `npx skein` there runs it directly.
      await access(path.join(repoRoot, f), constants.X_OK);
    }
  });

  test('`skein version` runs from the bin link', async () => {
    // Run directly, not through node: the link and its shebang must work (npx does the same).
    const { stdout } = await run(path.join(bin, 'skein'), ['version']);
    assert.match(stdout, /^skein \d+\.\d+\.\d+/);
  });

  test('`skein-controller` runs the example mesh from the installed files', async () => {
    const state = path.join(dir, 'state');
    const child = new JsonLineProcess(
      'skein-controller',
      spawn(
        path.join(bin, 'skein-controller'),
        [
          ...['--local', path.join(repoRoot, 'examples', 'bookstore'), '--state-dir', state],
          ...['--host', '127.0.0.1', '--ads-port', '0', '--http-port', '0', '--debug'],
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      ),
    );
    try {
      const ready = await child.waitFor((l) => l['msg'] === 'skein controller ready', 30_000);
      const http = Number(ready['http']);
      const res = await fetch(`http://127.0.0.1:${http}/readyz`);
      assert.equal(res.status, 200, await res.text());
      // The web view's assets came with the package.
      const page = await fetch(`http://127.0.0.1:${http}/ui/`);
      assert.equal(page.status, 200);
      assert.match(await page.text(), /<html/i);
    } finally {
      await child.stop();
    }
  });
});
