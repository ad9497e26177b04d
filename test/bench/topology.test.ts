import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { buildMeshView, egressRulesOf, ingressPorts, policyProblems } from '../../pkg/catalog/view.js';
import { silentLogger } from '../../pkg/logger/logger.js';
import { parseProxyCommonName } from '../../pkg/mesh/identity.js';
import { LocalRegistry } from '../../pkg/registry/local/registry.js';
import { ProblemCollector } from '../../pkg/registry/problems.js';
import { CHANGE_KINDS, ChangeDriver } from './changes.js';
import { BENCH_MESH, planTopology, SERVICE_PORT, writeTopology } from './topology.js';

test('plan: pods per service, valid CNs, sources other than the service itself', () => {
  const topo = planTopology({ proxies: 40, services: 20, permissive: false }, '/nowhere');
  assert.equal(topo.services.length, 20);
  assert.equal(topo.namespaces.length, 10);
  for (const svc of topo.services) {
    assert.equal(topo.proxies.filter((p) => p.service === svc.index).length, 2);
    assert.equal(svc.sources.length, 3);
    assert.ok(!svc.sources.includes(svc.index));
  }
  const p = topo.proxies[7];
  assert.ok(p);
  const id = parseProxyCommonName(p.cn);
  assert.equal(id.kind, 'sidecar');
  assert.equal(id.uuid, p.uuid);
  assert.equal(new Set(topo.proxies.map((x) => x.podIP)).size, 40);
  assert.equal(topo.services.filter((s) => s.split).length, 1);
  assert.throws(() => planTopology({ proxies: 5, services: 3, permissive: false }, '/nowhere'), /2 pods/);
});

async function loadView(dir: string) {
  const problems = new ProblemCollector();
  const registry = new LocalRegistry({
    dir,
    reporter: problems,
    logger: silentLogger(),
    meshName: BENCH_MESH,
    watch: false,
  });
  await registry.start();
  await registry.stop();
  return { view: buildMeshView(registry.store, { meshName: BENCH_MESH }), problems: problems.problems };
}

test('written manifests load cleanly and admit exactly the planned sources (SMI mode)', async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'skein-bench-topo-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const topo = await writeTopology({ proxies: 24, services: 12, permissive: false }, dir);
  const { view, problems } = await loadView(dir);
  assert.deepEqual(problems, []);
  assert.deepEqual(policyProblems(view), []);
  assert.equal(view.permissive, false);
  const svc = topo.services[5];
  assert.ok(svc);
  const rules = view.inboundRules(`${svc.namespace}/${svc.name}`, SERVICE_PORT);
  const allowed = rules.flatMap((r) =>
    r.sources === 'any' ? ['any'] : r.sources.map((s) => s.serviceAccount),
  );
  assert.deepEqual(allowed.sort(), svc.sources.map((i) => `svc-${i}`).sort());
  assert.equal(view.endpoints(`${svc.namespace}/${svc.name}`, SERVICE_PORT).length, 2);
  const apex = topo.services.find((s) => s.split);
  assert.ok(apex);
  assert.equal(view.split(`${apex.namespace}/${apex.name}`)?.length, 2);
});

test('every change kind changes what the registry loads', async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'skein-bench-topo-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const topo = await writeTopology({ proxies: 24, services: 12, permissive: true }, dir);
  const driver = new ChangeDriver(topo);
  const before = await loadView(dir);
  assert.equal(before.view.permissive, true);
  const counts = async () => {
    const { view, problems } = await loadView(dir);
    assert.deepEqual(problems, []);
    const endpoints = view.services().reduce((n, s) => n + view.endpoints(s.key, SERVICE_PORT).length, 0);
    const apex = topo.services.find((s) => s.split);
    const weights = apex ? view.split(`${apex.namespace}/${apex.name}`)?.map((b) => b.weight) : [];
    return { endpoints, weights };
  };
  const initial = await counts();
  const added = await driver.apply('endpoint-add', 0);
  assert.equal(added.marker?.present, true);
  assert.equal((await counts()).endpoints, initial.endpoints + 1);
  await driver.apply('endpoint-remove', 0);
  assert.equal((await counts()).endpoints, initial.endpoints);
  await driver.apply('split-weight', 0);
  assert.notDeepEqual((await counts()).weights, initial.weights);
  assert.equal(CHANGE_KINDS.length, 5);
});

test('--egress-policies / --ingress-backends: valid objects that give the first N services egress and ingress answers', async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'skein-bench-topo-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const topo = await writeTopology(
    { proxies: 24, services: 12, permissive: false, egressPolicies: 3, ingressBackends: 2 },
    dir,
  );
  const { view, problems } = await loadView(dir);
  assert.deepEqual(problems, []);
  assert.deepEqual(policyProblems(view), []);
  const [first, , third, fourth] = topo.services;
  assert.ok(first && third && fourth);
  const id = (s: typeof first) => ({ namespace: s.namespace, serviceAccount: s.serviceAccount });
  assert.deepEqual(
    egressRulesOf(view, id(third)).map((r) => `${r.protocol}:${r.port}:${r.hosts.join(',')}`),
    [`http:80:${third.name}.api.example.com`, `https:443:${third.name}.api.example.com`],
  );
  assert.equal(egressRulesOf(view, id(fourth)).length, 0);
  const ports = ingressPorts(view);
  assert.deepEqual([...ports.keys()].sort(), [
    `${first.namespace}/${first.name}|8080`,
    `${topo.services[1]?.namespace}/${topo.services[1]?.name}|8080`,
  ]);
  assert.deepEqual(ports.get(`${first.namespace}/${first.name}|8080`)?.cidrs, ['10.0.0.0/8']);
});
