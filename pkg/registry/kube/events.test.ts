import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { namespace, service } from '../../../test/support/catalog-fixtures.js';
import { FakeApiServer, metaField } from '../../../test/support/kube/fake-apiserver.js';
import { silentLogger } from '../../logger/logger.js';
import { teeReporter } from '../problems.js';
import { MeshStore } from '../store.js';
import { KubeClient } from './client.js';
import { KubeEventReporter, storeLookup } from './events.js';

const SHOP_EVENTS = '/api/v1/namespaces/shop/events';

describe('KubeEventReporter', () => {
  let server: FakeApiServer;
  let reporter: KubeEventReporter;

  beforeEach(async () => {
    server = await FakeApiServer.start();
  });
  afterEach(async () => {
    await reporter.flush();
    await server.close();
  });

  function make(store?: MeshStore): KubeEventReporter {
    reporter = new KubeEventReporter({
      client: new KubeClient({ kubeConfig: server.kubeConfig() }),
      logger: silentLogger(),
      ...(store ? { lookup: storeLookup(store) } : {}),
    });
    return reporter;
  }

  const problem = {
    source: 'kubernetes:TrafficTarget/shop/tt',
    kind: 'TrafficTarget',
    namespace: 'shop',
    name: 'tt',
    reason: 'a TrafficTarget must live in its destination namespace',
    apiVersion: 'access.smi-spec.io/v1alpha3',
    uid: '1b4e28ba-2fa1-11d2-883f-0016d3cca427',
  };

  it('posts a Warning Event on the object, then bumps its count on repeats', async () => {
    const r = make();
    r.report(problem);
    await r.flush();
    const [event] = server.list(SHOP_EVENTS);
    assert.ok(event);
    assert.deepEqual(event['involvedObject'], {
      kind: 'TrafficTarget',
      name: 'tt',
      namespace: 'shop',
      apiVersion: 'access.smi-spec.io/v1alpha3',
      uid: problem.uid,
    });
    assert.equal(event['type'], 'Warning');
    assert.equal(event['reason'], 'InvalidObject');
    assert.equal(event['message'], problem.reason);
    assert.deepEqual(event['source'], { component: 'skein-controller' });
    assert.equal(event['count'], 1);
    assert.match(metaField(event, 'name'), /^tt\.[0-9a-f]+$/);

    r.report(problem);
    r.report(problem);
    await r.flush();
    assert.equal(server.list(SHOP_EVENTS).length, 1, 'no second Event');
    assert.equal(server.list(SHOP_EVENTS)[0]?.['count'], 3);
    assert.equal(server.requestsOf(SHOP_EVENTS, 'POST').length, 1);

    // Another reason is another Event.
    r.report({ ...problem, reason: 'something else' });
    await r.flush();
    assert.equal(server.list(SHOP_EVENTS).length, 2);
  });

  it('posts afresh after resolved(), and when the Event expired', async () => {
    const r = make();
    r.report(problem);
    await r.flush();
    r.resolved(problem.source);
    r.report(problem);
    await r.flush();
    assert.equal(server.list(SHOP_EVENTS).length, 2);
    for (const e of server.list(SHOP_EVENTS)) server.remove(SHOP_EVENTS, `shop/${metaField(e, 'name')}`);
    r.report(problem);
    await r.flush();
    const events = server.list(SHOP_EVENTS);
    assert.equal(events.length, 1);
    assert.equal(events[0]?.['count'], 1);
  });

  it('fills apiVersion and uid from the store for policy problems; cluster-scoped objects go to default', async () => {
    const store = new MeshStore();
    store.upsert({
      ...service('shop', 'web', [{ port: 80 }]),
      metadata: { name: 'web', namespace: 'shop', uid: 'u-web' },
    });
    store.upsert({ ...namespace('shop', 'skein'), metadata: { name: 'shop', uid: 'u-ns' } });
    const r = make(store);
    r.report({
      source: 'policy',
      kind: 'Service',
      namespace: 'shop',
      name: 'web',
      reason: 'x',
      code: 'PolicyProblem',
    });
    r.report({ source: 'policy', kind: 'Namespace', name: 'shop', reason: 'y' });
    await r.flush();
    const [svcEvent] = server.list(SHOP_EVENTS);
    assert.equal(svcEvent?.['reason'], 'PolicyProblem');
    assert.deepEqual(svcEvent?.['involvedObject'], {
      kind: 'Service',
      name: 'web',
      namespace: 'shop',
      apiVersion: 'v1',
      uid: 'u-web',
    });
    const [nsEvent] = server.list('/api/v1/namespaces/default/events');
    assert.deepEqual(nsEvent?.['involvedObject'], {
      kind: 'Namespace',
      name: 'shop',
      apiVersion: 'v1',
      uid: 'u-ns',
    });
  });

  it('never throws when the API refuses, and ignores problems without an object', async () => {
    const r = make();
    server.failNext('POST', SHOP_EVENTS, 403);
    r.report(problem);
    r.report({ source: 'file.yaml', reason: 'cannot read' });
    await r.flush();
    assert.equal(server.list(SHOP_EVENTS).length, 0);
    r.report(problem);
    await r.flush();
    assert.equal(server.list(SHOP_EVENTS).length, 1, 'retried on the next report');
  });

  it('teeReporter forwards reports and resolutions to every reporter', () => {
    const seen: string[] = [];
    const a = { report: () => seen.push('a'), resolved: () => seen.push('a-resolved') };
    const b = { report: () => seen.push('b') };
    const t = teeReporter(a, b);
    t.report({ source: 's', reason: 'r' });
    t.resolved?.('s');
    assert.deepEqual(seen, ['a', 'b', 'a-resolved']);
    reporter = make();
  });
});
