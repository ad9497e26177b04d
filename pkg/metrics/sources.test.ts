// The counters fed by other parts of skein through hooks (not by the ADS
// observer): coalesced announcements from the real Coalescer, watch restarts
// from the real Reflector against the fake API server.
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { eventually } from '../../test/support/kube/eventually.js';
import { FakeApiServer, type Obj } from '../../test/support/kube/fake-apiserver.js';
import { seriesValue } from '../../test/support/metrics.js';
import { AnnouncementBus } from '../announcements/bus.js';
import { Coalescer } from '../announcements/coalescer.js';
import { silentLogger } from '../logger/logger.js';
import { KubeClient } from '../registry/kube/client.js';
import { Reflector, type ReflectorOptions } from '../registry/kube/reflector.js';
import { MeshMetrics } from './metrics.js';

const logger = silentLogger();
const PODS = '/api/v1/pods';

describe('skein_announcements_coalesced_total', () => {
  it('counts the announcements folded into a push round already pending', async () => {
    const metrics = new MeshMetrics({ processMetrics: false });
    const bus = new AnnouncementBus({ logger });
    const batches: number[] = [];
    // The push planner's coalescer, fed by the bus the way PushPlanner wires it.
    const coalescer = new Coalescer(0, (b) => void batches.push(b.length), {
      logger,
      onCoalesced: (n) => metrics.announcementsCoalesced.inc(n),
    });
    const unsubscribe = bus.subscribe((a) => coalescer.push(a));
    const coalesced = () => seriesValue(metrics, 'skein_announcements_coalesced_total');
    assert.equal(await coalesced(), 0);

    // A synchronous burst of 4 becomes one round: 3 folded into it.
    for (const r of ['a', 'b', 'c', 'd']) bus.announce('store', r);
    await sleep(10);
    assert.deepEqual(batches, [4]);
    assert.equal(await coalesced(), 3);

    // One announcement on its own is a round of its own: nothing folded.
    bus.announce('store', 'e');
    await sleep(10);
    assert.deepEqual(batches, [4, 1]);
    assert.equal(await coalesced(), 3);
    assert.match(await metrics.text(), /^skein_announcements_coalesced_total 3$/m);
    unsubscribe();
    coalescer.close();
  });
});

describe('skein_watch_restarts_total', () => {
  let server: FakeApiServer | undefined;
  let reflector: Reflector<string> | undefined;
  afterEach(async () => {
    await reflector?.stop();
    await server?.close();
  });

  function pod(name: string): Obj {
    return { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'a' }, spec: {}, status: {} };
  }

  async function start(metrics: MeshMetrics, options: Partial<ReflectorOptions<string>> = {}) {
    server = await FakeApiServer.start();
    const api = server;
    reflector = new Reflector<string>({
      name: 'Pod',
      client: new KubeClient({ kubeConfig: api.kubeConfig(), requestTimeoutMs: 2000 }),
      path: PODS,
      decode: () => 'pod',
      handler: { upsert: () => undefined, delete: () => undefined },
      logger,
      backoff: { initialMs: 10, maxMs: 50 },
      onRestart: (reason) => metrics.watchRestarts.inc({ type: 'Pod', reason }),
      ...options,
    });
    reflector.start();
    await reflector.whenSynced();
    await eventually(() => assert.equal(api.activeWatches(PODS), 1));
    return { api, r: reflector };
  }

  const value = (m: MeshMetrics, reason: string) =>
    seriesValue(m, 'skein_watch_restarts_total', { type: 'Pod', reason });

  it('counts relists after 410 Gone, silent watches and failed watches, by reason', async () => {
    const metrics = new MeshMetrics({ processMetrics: false });
    const { api, r } = await start(metrics, { idleTimeoutMs: 300 });
    for (const reason of ['timeout', 'expired', 'idle', 'error'])
      assert.equal(await value(metrics, reason), 0);

    // An in-stream ERROR (not 410): one failed watch, then a relist.
    api.errorWatches(500);
    await eventually(async () => assert.equal(await value(metrics, 'error'), 1));
    await eventually(() => assert.equal(api.activeWatches(PODS), 1));

    // A half-open watch: restarted once it has been silent for idleTimeoutMs.
    api.deafenWatches();
    await eventually(async () => assert.equal(await value(metrics, 'idle'), 1));
    await eventually(() => assert.equal(api.activeWatches(PODS), 1));

    // History compacted while the watch is cut: the re-watch gets 410 and relists.
    api.apply(PODS, pod('x'));
    await eventually(() => assert.equal(r.size, 1));
    api.compact();
    api.errorWatches(410, 'Expired');
    await eventually(async () => assert.equal(await value(metrics, 'expired'), 1));
    await eventually(() => assert.equal(api.activeWatches(PODS), 1));

    assert.equal(await value(metrics, 'error'), 1);
    assert.equal(await value(metrics, 'idle'), 1);
    assert.equal(await value(metrics, 'timeout'), 0);
    assert.equal(r.stats.expired, 1);
    assert.equal(r.stats.idle, 1);
  });

  it('counts a watch the server ended at its timeout as a routine restart', async () => {
    const metrics = new MeshMetrics({ processMetrics: false });
    const { api } = await start(metrics, { watchTimeoutSeconds: [1, 1], minWatchMs: 100 });
    await eventually(async () => assert.equal(await value(metrics, 'timeout'), 1), 3000);
    await eventually(() => assert.equal(api.activeWatches(PODS), 1));
    assert.equal(await value(metrics, 'error'), 0);
    assert.match(await metrics.text(), /^skein_watch_restarts_total\{type="Pod",reason="timeout"\} 1$/m);
  });
});
