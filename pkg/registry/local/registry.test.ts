import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { silentLogger } from '../../logger/logger.js';
import { ProblemCollector } from '../problems.js';
import type { StoreEvent } from '../store.js';
import { LocalRegistry } from './registry.js';

const ns = (name: string, mesh = 'skein'): string =>
  `apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${name}\n  labels:\n    skein.dev/monitored-by: ${mesh}\n`;
const sa = (name: string, namespace = 'shop'): string =>
  `apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: ${name}\n  namespace: ${namespace}\n`;
const service = (name: string): string =>
  [
    'apiVersion: v1',
    'kind: Service',
    `metadata: {name: ${name}, namespace: shop}`,
    'spec:',
    `  selector: {app: ${name}}`,
    '  ports: [{name: grpc-api, port: 14001, targetPort: grpc-api}]',
    '',
  ].join('\n');
const pod = (name: string, app: string, ip: string): string =>
  [
    'apiVersion: v1',
    'kind: Pod',
    `metadata: {name: ${name}, namespace: shop, labels: {app: ${app}}}`,
    'spec:',
    `  serviceAccountName: ${app}`,
    `  containers: [{name: app, ports: [{name: grpc-api, containerPort: 15000}]}]`,
    `status: {phase: Running, podIP: "${ip}"}`,
    '',
  ].join('\n');

/** Polls until `check` passes (or throws its last failure after `ms`). */
async function eventually(check: () => void, ms = 3000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      check();
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 10));
    }
  }
}

describe('LocalRegistry', () => {
  let dir: string;
  let registry: LocalRegistry | undefined;
  let reporter: ProblemCollector;

  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'skein-local-'));
    reporter = new ProblemCollector();
  });
  afterEach(async () => {
    await registry?.stop();
    registry = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  function open(pollIntervalMs = 60_000): LocalRegistry {
    registry = new LocalRegistry({
      dir,
      reporter,
      logger: silentLogger(),
      meshName: 'skein',
      pollIntervalMs,
    });
    return registry;
  }

  it('loads every manifest file recursively, skipping hidden entries and other files', async () => {
    await mkdir(path.join(dir, 'apps', 'deeper'), { recursive: true });
    await mkdir(path.join(dir, '..2024_01_01'), { recursive: true });
    await writeFile(path.join(dir, 'ns.yaml'), ns('shop'));
    await writeFile(path.join(dir, 'apps', 'sa.yml'), `${sa('a')}---\n${sa('b')}`);
    await writeFile(
      path.join(dir, 'apps', 'deeper', 'c.json'),
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'ServiceAccount',
        metadata: { name: 'c', namespace: 'shop' },
      }),
    );
    await writeFile(path.join(dir, 'apps', 'notes.txt'), 'not a manifest');
    await writeFile(path.join(dir, '..2024_01_01', 'sa.yaml'), sa('hidden'));
    const r = open();
    assert.equal(r.synced, false);
    await r.start();
    assert.equal(r.synced, true);
    assert.deepEqual(r.store.keys('Namespace'), ['shop']);
    assert.deepEqual(r.store.keys('ServiceAccount').sort(), ['shop/a', 'shop/b', 'shop/c']);
    assert.deepEqual(reporter.problems, []);
  });

  it('reports invalid documents and duplicates, and loads the rest', async () => {
    await writeFile(
      path.join(dir, 'a.yaml'),
      `${sa('good')}---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {name: BAD, namespace: shop}\n---\n{{{\n`,
    );
    await writeFile(path.join(dir, 'b.yaml'), sa('good'));
    const r = open();
    await r.start();
    assert.deepEqual(r.store.keys('ServiceAccount'), ['shop/good']);
    const problems = reporter.problems.map((p) => [p.source, p.kind, p.name, p.reason.split(':')[0]]);
    assert.deepEqual(problems, [
      [path.join(dir, 'a.yaml'), 'ServiceAccount', 'BAD', 'document 2'],
      [path.join(dir, 'a.yaml'), undefined, undefined, 'document 3'],
      [
        path.join(dir, 'b.yaml'),
        'ServiceAccount',
        'good',
        `duplicate of ServiceAccount shop/good in ${dir}/a.yaml; the first one is used`,
      ],
    ]);
  });

  it('applies only the difference when a file is edited, deleted or renamed', async () => {
    await writeFile(path.join(dir, 'one.yaml'), `${sa('a')}---\n${sa('b')}`);
    await writeFile(path.join(dir, 'two.yaml'), sa('c'));
    const r = open();
    await r.start();
    const events: string[] = [];
    r.store.on('change', (e: StoreEvent) => events.push(`${e.type} ${e.key}`));

    await writeFile(path.join(dir, 'one.yaml'), `${sa('a')}---\n${sa('b2')}\n`);
    await eventually(() =>
      assert.deepEqual(r.store.keys('ServiceAccount').sort(), ['shop/a', 'shop/b2', 'shop/c']),
    );
    assert.deepEqual(events, ['added shop/b2', 'deleted shop/b']);

    events.length = 0;
    await rename(path.join(dir, 'two.yaml'), path.join(dir, 'three.yaml'));
    await r.refresh();
    assert.deepEqual(events, [], 'a rename changes nothing');

    await rm(path.join(dir, 'three.yaml'));
    await eventually(() => assert.deepEqual(events, ['deleted shop/c']));
  });

  it('follows fs.watch alone (no poll within the test): renames, new and removed directories', async () => {
    await writeFile(path.join(dir, 'one.yaml'), sa('a'));
    const r = open(); // polls every 60 s
    await r.start();
    await rename(path.join(dir, 'one.yaml'), path.join(dir, 'moved.yaml'));
    await writeFile(path.join(dir, 'two.yaml'), sa('b'));
    await eventually(() => assert.deepEqual(r.store.keys('ServiceAccount').sort(), ['shop/a', 'shop/b']));
    await mkdir(path.join(dir, 'team', 'deep'), { recursive: true });
    await writeFile(path.join(dir, 'team', 'deep', 'c.yaml'), sa('c'));
    await eventually(() =>
      assert.deepEqual(r.store.keys('ServiceAccount').sort(), ['shop/a', 'shop/b', 'shop/c']),
    );
    await rm(path.join(dir, 'team'), { recursive: true });
    await rm(path.join(dir, 'moved.yaml'));
    await eventually(() => assert.deepEqual(r.store.keys('ServiceAccount'), ['shop/b']));
  });

  it('keeps a duplicate in reserve: it takes over when the first one goes', async () => {
    await writeFile(path.join(dir, 'a.yaml'), sa('x'));
    await writeFile(path.join(dir, 'b.yaml'), `${sa('x')}  labels: {from: b}\n`);
    const r = open();
    await r.start();
    assert.equal(reporter.problems.length, 1);
    assert.equal(r.store.get('ServiceAccount', 'shop/x')?.metadata.labels, undefined);
    await rm(path.join(dir, 'a.yaml'));
    await r.refresh();
    assert.deepEqual(r.store.get('ServiceAccount', 'shop/x')?.metadata.labels, { from: 'b' });
    assert.deepEqual(reporter.problems, [], 'the duplicate problem is resolved');
  });

  it('reports a broken edit and resolves it once fixed; the last valid version stays in force meanwhile', async () => {
    await writeFile(path.join(dir, 'a.yaml'), sa('x'));
    const r = open();
    await r.start();
    const before = r.store.get('ServiceAccount', 'shop/x');
    await writeFile(path.join(dir, 'a.yaml'), 'apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: [x}\n');
    await r.refresh();
    assert.equal(reporter.problems.length, 1);
    assert.match(
      reporter.problems[0]?.reason ?? '',
      /^invalid YAML: .*; the last valid versions of ServiceAccount shop\/x stay in force$/,
    );
    assert.equal(r.store.get('ServiceAccount', 'shop/x'), before);
    await writeFile(path.join(dir, 'a.yaml'), sa('x'));
    await r.refresh();
    assert.deepEqual(reporter.problems, []);
    assert.deepEqual(r.store.keys('ServiceAccount'), ['shop/x']);
    // Removing the object from the file still removes it.
    await writeFile(path.join(dir, 'a.yaml'), '');
    await r.refresh();
    assert.deepEqual(r.store.keys('ServiceAccount'), []);
  });

  it('an object edited into an invalid one keeps its last valid version; a new invalid object stays out', async () => {
    const split = (weight: number, name = 'apex-split') =>
      `apiVersion: split.smi-spec.io/v1alpha2\nkind: TrafficSplit\nmetadata: {name: ${name}, namespace: shop}\n` +
      `spec:\n  service: apex\n  backends:\n    - {service: v1, weight: 0}\n    - {service: v2, weight: ${weight}}\n`;
    await writeFile(path.join(dir, 'split.yaml'), split(100));
    const r = open();
    await r.start();
    const good = r.store.get('TrafficSplit', 'shop/apex-split');
    assert.ok(good);
    await writeFile(path.join(dir, 'split.yaml'), `${split(-5)}---\n${split(-1, 'born-bad')}`);
    await r.refresh();
    assert.equal(r.store.get('TrafficSplit', 'shop/apex-split'), good);
    assert.deepEqual(r.store.keys('TrafficSplit'), ['shop/apex-split']);
    const reasons = reporter.problems.map((p) => `${p.name}: ${p.reason}`);
    assert.equal(reasons.length, 2, JSON.stringify(reasons));
    assert.match(reasons[0] ?? '', /^apex-split: .*; its last valid version stays in force$/);
    assert.doesNotMatch(reasons[1] ?? '', /stays in force/);
    // A valid edit replaces it; deleting the document deletes it.
    await writeFile(path.join(dir, 'split.yaml'), split(50));
    await r.refresh();
    assert.equal(r.store.get('TrafficSplit', 'shop/apex-split')?.spec.backends[1]?.weight, 50);
    assert.deepEqual(reporter.problems, []);
  });

  it('derives EndpointSlices and updates them when a pod changes', async () => {
    await writeFile(path.join(dir, 'svc.yaml'), `${service('web')}---\n${pod('web-1', 'web', '127.0.0.41')}`);
    const r = open(50);
    await r.start();
    const slice = (): unknown => r.store.get('EndpointSlice', 'shop/web-local');
    assert.deepEqual(slice(), {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: {
        name: 'web-local',
        namespace: 'shop',
        labels: {
          'kubernetes.io/service-name': 'web',
          'endpointslice.kubernetes.io/managed-by': 'skein.dev/local-registry',
        },
      },
      addressType: 'IPv4',
      endpoints: [
        {
          addresses: ['127.0.0.41'],
          conditions: { ready: true, serving: true, terminating: false },
          targetRef: { kind: 'Pod', name: 'web-1', namespace: 'shop' },
        },
      ],
      ports: [{ name: 'grpc-api', port: 15000, protocol: 'TCP' }],
    });
    const events: string[] = [];
    r.store.on('change', (e: StoreEvent) => events.push(`${e.type} ${e.kind} ${e.key}`));
    // A second file adds a pod; the first file's pod moves to another IP.
    await writeFile(path.join(dir, 'pod2.yaml'), pod('web-2', 'web', '127.0.0.42'));
    await writeFile(path.join(dir, 'svc.yaml'), `${service('web')}---\n${pod('web-1', 'web', '127.0.0.43')}`);
    await eventually(() => {
      const s = r.store.get('EndpointSlice', 'shop/web-local');
      assert.deepEqual(
        s?.endpoints.map((e) => e.addresses[0]),
        ['127.0.0.43', '127.0.0.42'],
      );
    });
    assert.ok(
      events.every((e) => !e.startsWith('deleted')),
      events.join(', '),
    );
    assert.ok(!events.some((e) => e.includes('Service shop/web')), 'the unchanged Service is not rewritten');
  });

  it('keeps explicit EndpointSlices, and lets one of the derived name win', async () => {
    const explicit = (name: string): string =>
      [
        'apiVersion: discovery.k8s.io/v1',
        'kind: EndpointSlice',
        `metadata: {name: ${name}, namespace: shop, labels: {kubernetes.io/service-name: web}}`,
        'addressType: IPv4',
        'endpoints: [{addresses: ["10.9.9.9"]}]',
        'ports: [{name: grpc-api, port: 14001}]',
        '',
      ].join('\n');
    await writeFile(path.join(dir, 'svc.yaml'), `${service('web')}---\n${pod('web-1', 'web', '127.0.0.41')}`);
    await writeFile(path.join(dir, 'eps.yaml'), explicit('web-extra'));
    const r = open();
    await r.start();
    assert.deepEqual(r.store.keys('EndpointSlice').sort(), ['shop/web-extra', 'shop/web-local']);
    await writeFile(path.join(dir, 'eps.yaml'), explicit('web-local'));
    await r.refresh();
    assert.deepEqual(r.store.keys('EndpointSlice'), ['shop/web-local']);
    assert.deepEqual(r.store.get('EndpointSlice', 'shop/web-local')?.endpoints[0]?.addresses, ['10.9.9.9']);
  });

  it('stores objects of namespaces without a Namespace manifest', async () => {
    await writeFile(path.join(dir, 'a.yaml'), `${ns('shop', 'other-mesh')}---\n${sa('x', 'unlisted')}`);
    const r = open();
    await r.start();
    assert.deepEqual(r.store.keys('ServiceAccount'), ['unlisted/x']);
    assert.equal(r.store.get('Namespace', 'shop')?.metadata.labels?.['skein.dev/monitored-by'], 'other-mesh');
  });

  it('fails to start on a missing directory; survives the directory vanishing later', async () => {
    const missing = new LocalRegistry({
      dir: path.join(dir, 'nope'),
      reporter,
      logger: silentLogger(),
      meshName: 'skein',
    });
    await assert.rejects(missing.start(), /ENOENT/);
    await missing.stop();

    await writeFile(path.join(dir, 'a.yaml'), sa('x'));
    const r = open(20);
    await r.start();
    await rm(dir, { recursive: true, force: true });
    await r.refresh();
    assert.deepEqual(r.store.keys('ServiceAccount'), ['shop/x'], 'the last state is kept');
  });

  it('sees changes by polling alone', async () => {
    await writeFile(path.join(dir, 'a.yaml'), sa('x'));
    registry = new LocalRegistry({
      dir,
      reporter,
      logger: silentLogger(),
      meshName: 'skein',
      pollIntervalMs: 20,
      watch: false,
    });
    const r = registry;
    await r.start();
    // Same size and a fresh mtime: polling compares mtimes, then contents.
    await writeFile(path.join(dir, 'a.yaml'), sa('y'));
    await eventually(() => assert.deepEqual(r.store.keys('ServiceAccount'), ['shop/y']));
    await writeFile(path.join(dir, 'b.yaml'), sa('z'));
    await eventually(() => assert.deepEqual(r.store.keys('ServiceAccount').sort(), ['shop/y', 'shop/z']));
    await rm(path.join(dir, 'a.yaml'));
    await eventually(() => assert.deepEqual(r.store.keys('ServiceAccount'), ['shop/z']));
  });

  it('watches a single file too', async () => {
    const file = path.join(dir, 'only.yaml');
    await writeFile(file, sa('x'));
    registry = new LocalRegistry({ dir: file, reporter, logger: silentLogger(), meshName: 'skein' });
    await registry.start();
    const r = registry;
    assert.deepEqual(r.store.keys('ServiceAccount'), ['shop/x']);
    await writeFile(file, sa('yy'));
    await eventually(() => assert.deepEqual(r.store.keys('ServiceAccount'), ['shop/yy']));
  });
});
