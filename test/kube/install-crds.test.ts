// pkg/install/crds.ts against the real API server: skein's CRDs applied twice
// change nothing the second time, and a changed CRD — first created the way
// Helm's first install does it, by another field manager — is upgraded in place
// and serves its new schema. The upgrade runs on a CRD of its own (a random
// group), because on the shared cluster other files use skein's CRDs.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { KubeConfig } from '@kubernetes/client-node';
import { applyCrds, deleteCrds, loadCrdManifests } from '../../pkg/install/crds.js';
import { KubeApiError, KubeClient } from '../../pkg/registry/kube/client.js';
import { isRecord } from '../../pkg/schema/guards.js';
import { acquireCluster } from '../support/cluster.js';
import { waitFor } from '../support/kube.js';

const CRD_PATH = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

function resourceVersion(obj: unknown): string {
  const md = isRecord(obj) ? obj['metadata'] : undefined;
  return isRecord(md) ? String(md['resourceVersion']) : '';
}

/** A namespaced test CRD; `withColor` adds spec.color to its schema (the "upgrade"). */
function gadgetCrd(group: string, withColor: boolean): Record<string, unknown> {
  const specProps: Record<string, unknown> = { size: { type: 'integer' } };
  if (withColor) specProps['color'] = { type: 'string' };
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `gadgets.${group}` },
    spec: {
      group,
      scope: 'Namespaced',
      names: { kind: 'Gadget', listKind: 'GadgetList', plural: 'gadgets', singular: 'gadget' },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: { spec: { type: 'object', properties: specProps } },
            },
          },
        },
      ],
    },
  };
}

describe('pkg/install/crds: server-side apply of CRDs', () => {
  let kc: KubeConfig;
  let client: KubeClient;
  let release: () => Promise<void>;
  let dir: string;
  const group = `g${randomBytes(4).toString('hex')}.crdtest.skein.dev`;
  const ns = `crdtest-${randomBytes(3).toString('hex')}`;

  before(async () => {
    const acquired = await acquireCluster();
    kc = acquired.kubeConfig;
    release = acquired.release;
    client = new KubeClient({ kubeConfig: kc });
    dir = await mkdtemp(path.join(tmpdir(), 'skein-crdtest-'));
    await client.request('POST', '/api/v1/namespaces', { body: { metadata: { name: ns } } });
  });
  after(async () => {
    await client?.request('DELETE', `/api/v1/namespaces/${ns}`).catch(() => undefined);
    await client?.request('DELETE', `${CRD_PATH}/gadgets.${group}`).catch(() => undefined);
    if (dir) await rm(dir, { recursive: true, force: true });
    await release?.();
  });

  test("skein's CRDs: a second apply is a no-op (same resourceVersion, `unchanged`)", async () => {
    const progress: string[] = [];
    const first = await applyCrds(kc, { onProgress: (l) => progress.push(l) });
    const names = loadCrdManifests().map((m) => m.name);
    assert.deepEqual(
      first.map((c) => c.name),
      names,
    );
    assert.ok(names.includes('meshconfigs.config.skein.dev'));
    assert.equal(progress.length, names.length);
    const before = await Promise.all(names.map((n) => client.request('GET', `${CRD_PATH}/${n}`)));

    const second = await applyCrds(kc);
    assert.deepEqual(
      second.map((c) => c.result),
      names.map(() => 'unchanged'),
    );
    const afterApply = await Promise.all(names.map((n) => client.request('GET', `${CRD_PATH}/${n}`)));
    assert.deepEqual(afterApply.map(resourceVersion), before.map(resourceVersion));
    // skein owns the fields now (managedFields), whoever created the CRDs first.
    for (const crd of afterApply) {
      const md = isRecord(crd) ? crd['metadata'] : undefined;
      const managers = isRecord(md) && Array.isArray(md['managedFields']) ? md['managedFields'] : [];
      assert.ok(
        managers.some((m) => isRecord(m) && m['manager'] === 'skein' && m['operation'] === 'Apply'),
        `skein is an Apply manager of ${JSON.stringify(isRecord(md) ? md['name'] : md)}`,
      );
    }
  });

  test('a CRD Helm created once is upgraded in place, and its new schema is served', async () => {
    // Helm's first install: a plain create by another manager.
    await client.request('POST', CRD_PATH, { body: gadgetCrd(group, false) });
    const file = path.join(dir, 'gadgets.yaml');
    // JSON is YAML; a leading comment and a trailing empty document, as real files have.
    const write = (withColor: boolean) =>
      writeFile(file, `# test CRD\n${JSON.stringify(gadgetCrd(group, withColor))}\n---\n`);

    // Before the upgrade, the structural schema prunes spec.color on write.
    await write(false);
    // Taking the fields over from Helm rewrites managedFields only: the spec (generation) stays.
    const takeover = await applyCrds(kc, { dir });
    assert.deepEqual(
      takeover.map((c) => [c.result, c.generation]),
      [['configured', 1]],
    );
    assert.equal((await applyCrds(kc, { dir }))[0]?.result, 'unchanged');
    const gadgets = `/apis/${group}/v1/namespaces/${ns}/gadgets`;
    const old: unknown = await client.request('POST', gadgets, {
      body: {
        apiVersion: `${group}/v1`,
        kind: 'Gadget',
        metadata: { name: 'a' },
        spec: { size: 1, color: 'red' },
      },
    });
    assert.deepEqual(isRecord(old) ? old['spec'] : undefined, { size: 1 });

    await write(true);
    const upgraded = await applyCrds(kc, { dir });
    assert.equal(upgraded.length, 1);
    assert.equal(upgraded[0]?.result, 'configured');
    assert.equal(upgraded[0]?.generation, 2);
    const gadgetB = {
      apiVersion: `${group}/v1`,
      kind: 'Gadget',
      metadata: { name: 'b' },
      spec: { size: 2, color: 'blue' },
    };
    // The API server rebuilds a CRD's handlers after an update asynchronously (a CI run's create
    // right after the apply was still pruned by the old schema): wait, with dry-run creates,
    // until the new schema is the one served.
    await waitFor('the upgraded schema served', async () => {
      const dry: unknown = await client.request('POST', gadgets, { query: { dryRun: 'All' }, body: gadgetB });
      return isRecord(dry) && isRecord(dry['spec']) && dry['spec']['color'] === 'blue';
    });
    const created: unknown = await client.request('POST', gadgets, { body: gadgetB });
    assert.deepEqual(isRecord(created) ? created['spec'] : undefined, { size: 2, color: 'blue' });

    // And applying the upgraded file again changes nothing.
    assert.equal((await applyCrds(kc, { dir }))[0]?.result, 'unchanged');

    assert.deepEqual(await deleteCrds(kc, { dir }), [`gadgets.${group}`]);
    // The API server first deletes the Gadgets (the CRD's cleanup finalizer), then the CRD.
    await waitFor(`CRD gadgets.${group} gone`, async () =>
      client.request('GET', `${CRD_PATH}/gadgets.${group}`).then(
        () => false,
        (err: unknown) => {
          if (err instanceof KubeApiError && err.status === 404) return true;
          throw err;
        },
      ),
    );
    assert.deepEqual(await deleteCrds(kc, { dir }), [], 'deleting again finds nothing');
  });

  test('a CRD the API server refuses fails with its message', async () => {
    const bad = gadgetCrd(`bad${group}`, false);
    Reflect.set(bad, 'spec', { ...Object(bad['spec']), scope: 'Sideways' });
    await writeFile(path.join(dir, 'gadgets.yaml'), JSON.stringify(bad));
    await assert.rejects(applyCrds(kc, { dir }), /applying CRD gadgets\.bad.*HTTP 422.*scope/s);
  });
});
