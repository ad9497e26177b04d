// The repo's Dockerfile and cmd/skein-image describe the same controller image:
// the Dockerfile's final stage against the built OCI config and its files.
import assert from 'node:assert/strict';
import { access, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import { repoRoot } from '../support/local-mesh.js';
import { parseDockerfile, type Summary, summary, unpackedInSuite } from './images.js';

const found = await summary('controller');
const rootless = process.getuid?.() !== 0 ? 'needs root (unpacking layers with their owners)' : undefined;

describe('the Dockerfile and the image builder', {
  skip: typeof found === 'string' ? found : rootless,
}, () => {
  const s = found as Summary;
  const image = unpackedInSuite(() => s.file, 'skein-dockerfile-');

  test('agree on ENTRYPOINT, USER, WORKDIR, ENV, EXPOSE, COPY destinations and packages', async () => {
    const stage = parseDockerfile(await readFile(path.join(repoRoot, 'Dockerfile'), 'utf8'));
    assert.deepEqual(image.config.config.Entrypoint, stage.entrypoint);
    assert.equal(image.config.config.User, stage.user);
    assert.equal(image.config.config.WorkingDir, stage.workdir);
    for (const e of stage.env)
      assert.ok(image.config.config.Env?.includes(e), `ENV ${e} not in ${image.config.config.Env}`);
    assert.deepEqual(Object.keys(image.config.config.ExposedPorts ?? {}).sort(), [...stage.expose].sort());
    assert.ok(stage.copies.length >= 6, `${stage.copies}`);
    for (const c of stage.copies) await access(path.join(image.rootfs, c));
    // What the Dockerfile's RUN installs, the builder takes from Debian too.
    for (const p of stage.aptPackages)
      assert.match(s.labels['dev.skein.debian-packages'] ?? '', new RegExp(`(^| )${p}=`));
    // node:20-slim's node is /usr/local/bin/node; so is ours.
    await access(path.join(image.rootfs, stage.entrypoint[0]!));
  });
});
