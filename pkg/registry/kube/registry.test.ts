import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { eventually } from '../../../test/support/kube/eventually.js';
import { FakeApiServer, type Obj } from '../../../test/support/kube/fake-apiserver.js';
import { silentLogger } from '../../logger/logger.js';
import { LABEL_MONITORED_BY } from '../../mesh/constants.js';
import { ProblemCollector } from '../problems.js';
import { KubeRegistry, type KubeRegistryOptions, kubeSource } from './registry.js';
import { watchedTypes } from './types.js';

const CP = 'skein-system';
const PATH = Object.fromEntries(watchedTypes(CP).map((t) => [t.kind, t.path]));
const P = (kind: string): string => {
  const p = PATH[kind];
  if (!p) throw new Error(kind);
  return p;
};

const namespace = (name: string, mesh?: string): Obj => ({
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: { name, ...(mesh ? { labels: { [LABEL_MONITORED_BY]: mesh } } : {}) },
  spec: { finalizers: ['kubernetes'] },
  status: { phase: 'Active' },
});
const service = (ns: string, name: string): Obj => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace: ns, managedFields: [{ manager: 'kubectl' }] },
  spec: {
    selector: { app: name },
    ports: [{ name: 'http', port: 80, targetPort: 8080 }],
    clusterIP: '10.0.0.1',
  },
  status: { loadBalancer: {} },
});
const slice = (ns: string, svc: string, ips: string[]): Obj => ({
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: { name: `${svc}-abc`, namespace: ns, labels: { 'kubernetes.io/service-name': svc } },
  addressType: 'IPv4',
  endpoints: ips.map((ip) => ({ addresses: [ip], conditions: { ready: true } })),
  ports: [{ name: 'http', port: 8080 }],
});
const trafficTarget = (ns: string, name: string, destNs = ns): Obj => ({
  apiVersion: 'access.smi-spec.io/v1alpha3',
  kind: 'TrafficTarget',
  metadata: { name, namespace: ns },
  spec: {
    destination: { kind: 'ServiceAccount', name: 'bookstore', namespace: destNs },
    sources: [{ kind: 'ServiceAccount', name: 'bookbuyer', namespace: ns }],
    rules: [{ kind: 'HTTPRouteGroup', name: 'routes' }],
  },
});
const meshConfig = (ns: string, permissive: boolean): Obj => ({
  apiVersion: 'config.skein.dev/v1alpha1',
  kind: 'MeshConfig',
  metadata: { name: 'skein', namespace: ns },
  spec: { traffic: { permissive } },
});

describe('KubeRegistry (against a fake API server)', () => {
  let server: FakeApiServer;
  let registry: KubeRegistry | undefined;
  let problems: ProblemCollector;

  beforeEach(async () => {
    server = await FakeApiServer.start();
    problems = new ProblemCollector();
  });
  afterEach(async () => {
    await registry?.stop();
    registry = undefined;
    await server.close();
  });

  async function start(options: Partial<KubeRegistryOptions> = {}): Promise<KubeRegistry> {
    registry = new KubeRegistry({
      kubeConfig: server.kubeConfig(),
      meshName: 'skein',
      controlPlaneNamespace: CP,
      reporter: problems,
      logger: silentLogger(),
      qps: 1000,
      burst: 1000,
      backoff: { initialMs: 20, maxMs: 200 },
      ...options,
    });
    await registry.start();
    return registry;
  }

  it('stores only monitored namespaces and their objects, pruned to the model', async () => {
    server.apply(P('Namespace'), namespace('shop', 'skein'));
    server.apply(P('Namespace'), namespace('other', 'another-mesh'));
    server.apply(P('Namespace'), namespace('plain'));
    for (const ns of ['shop', 'other', 'plain']) {
      server.apply(P('Service'), service(ns, 'web'));
      server.apply(P('EndpointSlice'), slice(ns, 'web', ['10.1.0.1']));
    }
    const r = await start();
    assert.equal(r.synced, true);
    assert.deepEqual(r.store.keys('Namespace'), ['shop']);
    assert.deepEqual(r.store.keys('Service'), ['shop/web']);
    assert.deepEqual(r.store.keys('EndpointSlice'), ['shop/web-abc']);
    const svc = r.store.get('Service', 'shop/web');
    assert.equal(svc?.apiVersion, 'v1', 'list items get their apiVersion back');
    assert.equal(svc?.kind, 'Service');
    assert.ok(svc?.metadata.uid, 'uid kept');
    assert.deepEqual(Object.keys(svc ?? {}).sort(), ['apiVersion', 'kind', 'metadata', 'spec']);
    assert.equal(JSON.stringify(svc).includes('managedFields'), false);
  });

  it('a namespace gaining the label brings its objects in; losing it or being deleted takes them out', async () => {
    server.apply(P('Namespace'), namespace('shop'));
    server.apply(P('Service'), service('shop', 'web'));
    server.apply(P('EndpointSlice'), slice('shop', 'web', ['10.1.0.1']));
    server.apply(P('TrafficTarget'), trafficTarget('shop', 'allow'));
    const r = await start();
    assert.deepEqual(r.store.keys('Service'), []);
    const events: string[] = [];
    r.store.on('change', (e) => events.push(`${e.type} ${e.kind} ${e.key}`));

    server.apply(P('Namespace'), namespace('shop', 'skein'));
    await eventually(() => assert.deepEqual(r.store.keys('Service'), ['shop/web']));
    assert.deepEqual(r.store.keys('EndpointSlice'), ['shop/web-abc']);
    assert.deepEqual(r.store.keys('TrafficTarget'), ['shop/allow']);
    // The Namespace first, then its objects in dependency order.
    assert.equal(events[0], 'added Namespace shop');

    // While monitored, changes flow through.
    server.apply(P('EndpointSlice'), slice('shop', 'web', ['10.1.0.1', '10.1.0.2']));
    await eventually(() => assert.equal(r.store.get('EndpointSlice', 'shop/web-abc')?.endpoints.length, 2));

    server.apply(P('Namespace'), namespace('shop'));
    await eventually(() => assert.deepEqual(r.store.keys('Service'), []));
    assert.deepEqual(r.store.keys('EndpointSlice'), []);
    assert.deepEqual(r.store.keys('TrafficTarget'), []);
    assert.deepEqual(r.store.keys('Namespace'), []);

    // Changes in an unmonitored namespace stay out; relabelling brings the current state.
    server.apply(P('Service'), service('shop', 'api'));
    server.apply(P('Namespace'), namespace('shop', 'skein'));
    await eventually(() => assert.deepEqual(r.store.keys('Service').sort(), ['shop/api', 'shop/web']));

    server.remove(P('Namespace'), 'shop');
    await eventually(() => assert.deepEqual(r.store.keys('Service'), []));
    assert.deepEqual(r.store.keys('Namespace'), []);
  });

  it('reads the MeshConfig of the control-plane namespace only', async () => {
    server.apply(P('MeshConfig'), meshConfig(CP, true));
    server.apply('/apis/config.skein.dev/v1alpha1/namespaces/shop/meshconfigs', meshConfig('shop', false));
    const r = await start();
    assert.deepEqual(r.store.keys('MeshConfig'), [`${CP}/skein`]);
    assert.equal(r.store.get('MeshConfig', `${CP}/skein`)?.spec.traffic?.permissive, true);
    const meshConfigWatches = server.requests.filter((q) => q.path.includes('meshconfigs'));
    assert.ok(meshConfigWatches.every((q) => q.path === P('MeshConfig')));
  });

  it('reports an invalid object once per version, keeps it out (or its last valid version in), and resolves it when fixed', async () => {
    server.apply(P('Namespace'), namespace('shop', 'skein'));
    server.apply(P('Namespace'), namespace('plain'));
    server.apply(P('TrafficTarget'), trafficTarget('shop', 'wrong-ns', 'elsewhere'));
    server.apply(P('TrafficTarget'), trafficTarget('plain', 'ignored', 'elsewhere'));
    server.apply(P('TrafficTarget'), trafficTarget('shop', 'fine'));
    const r = await start();
    assert.deepEqual(r.store.keys('TrafficTarget'), ['shop/fine']);
    assert.equal(problems.problems.length, 1, 'objects of unmonitored namespaces are not reported');
    const p = problems.problems[0];
    assert.equal(p?.kind, 'TrafficTarget');
    assert.equal(p?.namespace, 'shop');
    assert.equal(p?.name, 'wrong-ns');
    assert.equal(p?.code, 'InvalidObject');
    assert.equal(p?.apiVersion, 'access.smi-spec.io/v1alpha3');
    assert.match(p?.uid ?? '', /^[0-9a-f-]{36}$/);
    assert.match(p?.reason ?? '', /destination's namespace/);

    // A relist does not report it again.
    const before = problems.problems.length;
    server.dropWatches();
    server.apply(P('ServiceAccount'), { metadata: { name: 'sa', namespace: 'shop' } }, { quiet: true });
    server.compact();
    await eventually(() => assert.equal(r.stats()['TrafficTarget']?.lists, 2));
    assert.equal(r.stats()['TrafficTarget']?.expired, 1);
    assert.equal(problems.problems.length, before);

    // A valid object turning invalid keeps its last valid version in force, reported as such.
    server.apply(P('TrafficTarget'), trafficTarget('shop', 'fine', 'elsewhere'));
    await eventually(() =>
      assert.ok(
        problems.problems.some(
          (q) => q.name === 'fine' && q.reason.endsWith('; its last valid version stays in force'),
        ),
      ),
    );
    assert.deepEqual(r.store.keys('TrafficTarget'), ['shop/fine']);
    assert.equal(r.store.get('TrafficTarget', 'shop/fine')?.spec.destination.namespace, 'shop');
    // Fixed: in the store, problem resolved.
    server.apply(P('TrafficTarget'), trafficTarget('shop', 'wrong-ns'));
    server.apply(P('TrafficTarget'), trafficTarget('shop', 'fine'));
    await eventually(() =>
      assert.deepEqual(r.store.keys('TrafficTarget').sort(), ['shop/fine', 'shop/wrong-ns']),
    );
    assert.deepEqual(problems.problems, []);

    // Labelling a namespace reports the invalid objects it brings.
    server.apply(P('Namespace'), namespace('plain', 'skein'));
    await eventually(() =>
      assert.deepEqual(
        problems.problems.map((q) => q.source),
        [kubeSource('TrafficTarget', 'plain', 'ignored')],
      ),
    );
  });

  it('ends equal to the server after a dropped watch, compaction and changes meanwhile (relist)', async () => {
    server.apply(P('Namespace'), namespace('shop', 'skein'));
    server.apply(P('Service'), service('shop', 'web'));
    server.apply(P('EndpointSlice'), slice('shop', 'web', ['10.1.0.1', '10.1.0.2']));
    server.apply(P('TrafficTarget'), trafficTarget('shop', 'allow'));
    const r = await start();
    // The "API server restart": connections cut, watches refused for a while,
    // changes the watches never see, history compacted.
    server.dropWatches();
    for (const kind of ['Service', 'EndpointSlice', 'TrafficTarget'])
      server.failNext('GET', P(kind), 503, 3, true);
    server.apply(P('EndpointSlice'), slice('shop', 'web', ['10.1.0.2']), { quiet: true });
    server.remove(P('TrafficTarget'), 'shop/allow', { quiet: true });
    server.apply(P('TrafficTarget'), trafficTarget('shop', 'replacement'), { quiet: true });
    server.apply(P('Service'), service('shop', 'api'), { quiet: true });
    server.compact();
    await eventually(() => {
      assert.deepEqual(r.store.keys('Service').sort(), ['shop/api', 'shop/web']);
      assert.deepEqual(r.store.keys('TrafficTarget'), ['shop/replacement']);
      assert.deepEqual(
        r.store.get('EndpointSlice', 'shop/web-abc')?.endpoints.map((e) => e.addresses[0]),
        ['10.1.0.2'],
      );
    });
    assert.ok((r.stats()['EndpointSlice']?.expired ?? 0) >= 1);
  });

  it('is synced only once every type has listed', async () => {
    server.failNext('GET', P('Pod'), 500, 3, false);
    registry = new KubeRegistry({
      kubeConfig: server.kubeConfig(),
      meshName: 'skein',
      controlPlaneNamespace: CP,
      reporter: problems,
      logger: silentLogger(),
      qps: 1000,
      burst: 1000,
      backoff: { initialMs: 100, maxMs: 100 },
    });
    const started = registry.start();
    await eventually(() => assert.equal(server.requestsOf(P('Service'), 'watch').length, 1));
    assert.equal(registry.synced, false);
    await started;
    assert.equal(registry.synced, true);
    assert.equal(server.requestsOf(P('Pod'), 'list').length, 4);
  });

  it('opens exactly one list and one watch per resource type, all through one rate limiter', async () => {
    // Before the limiter exists: its tokens are counted from a moment no earlier than this.
    const t0 = performance.now();
    const r = await start({ qps: 100, burst: 4 });
    const paths = Object.values(PATH);
    await eventually(() => assert.equal(server.activeWatches(), paths.length));
    for (const path of paths) {
      assert.equal(server.requestsOf(path, 'list').length, 1, path);
      assert.equal(server.requestsOf(path, 'watch').length, 1, path);
    }
    // 2 requests per type at burst 4 then 100/s: the last no sooner than (2n - 4) x 10 ms
    // after the limiter was made. (Measured from the first request instead, a late first
    // request on a busy machine shortens the span while the bucket refills.)
    const last = Math.max(...server.requests.map((q) => q.at));
    const requests = 2 * paths.length;
    assert.ok(
      last - t0 >= (requests - 4) * 10 - 2,
      `${requests} requests within ${last - t0} ms of the start`,
    );
    assert.equal(r.synced, true);
  });

  it('stores the Ingresses of monitored namespaces only', async () => {
    server.apply(P('Namespace'), namespace('shop', 'skein'));
    const ingress = (ns: string): Obj => ({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { name: 'front', namespace: ns },
      spec: { ingressClassName: 'nginx', defaultBackend: { service: { name: 'web', port: { number: 80 } } } },
    });
    server.apply(P('Ingress'), ingress('shop'));
    server.apply(P('Ingress'), ingress('plain'));
    const r = await start();
    assert.deepEqual(
      r.store.list('Ingress').map((i) => [i.metadata.namespace, i.metadata.name, i.spec.ingressClassName]),
      [['shop', 'front', 'nginx']],
    );
  });

  it('a missing SMI CRD does not hold up the sync', async () => {
    server.notServed.add(P('TrafficSplit'));
    server.apply(P('Namespace'), namespace('shop', 'skein'));
    const r = await start();
    assert.equal(r.synced, true);
    assert.deepEqual(r.store.keys('Namespace'), ['shop']);
  });
});
