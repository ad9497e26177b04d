// The chart's default controller image is the one `make image` builds:
// images.controller.repository + appVersion, normalised as containerd names it.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';
import { repoRoot } from '../support/local-mesh.js';
import { summary } from './images.js';

test("the chart's default controller image is what make image produces", async (t) => {
  const read = async (f: string) => readFile(path.join(repoRoot, f), 'utf8');
  const pkg = JSON.parse(await read('package.json')) as { version: string };
  const chart = parse(await read('charts/skein/Chart.yaml')) as { appVersion: string };
  const values = parse(await read('charts/skein/values.yaml')) as {
    images: { controller: { repository: string; tag: string } };
  };
  assert.equal(chart.appVersion, pkg.version);
  const { repository, tag } = values.images.controller;
  const ref = `docker.io/${repository}:${tag || chart.appVersion}`;
  assert.equal(ref, `docker.io/skein/controller:${pkg.version}`);
  const built = await summary('controller');
  if (typeof built === 'string') return t.skip(built);
  assert.equal(built.ref, ref);
});
