// Leader election (pkg/leader) against the real API server's Lease objects: one
// leader among candidates, a graceful handover within a retry period, a
// partitioned leader (its API connection cut by a TCP proxy) stepping down before
// its Lease can be taken over, and two live skein-controller processes of which
// only the leader patches the webhook's caBundle, the other taking that work over
// within the lease duration after the leader is killed (SIGKILL: no release).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { LeaseElector } from '../../pkg/leader/elector.js';
import { silentLogger } from '../../pkg/logger/logger.js';
import { KubeClient } from '../../pkg/registry/kube/client.js';
import { acquireCluster, type ClusterEndpoint, kubeConfigFor } from '../support/cluster.js';
import { createNamespace } from '../support/kube.js';
import { type KubeController, startKubeController } from '../support/kube-controller.js';
import { eventually, prepareMeshCluster } from '../support/kube-registry-fixture.js';
import { sleep } from '../support/processes.js';

const FAST = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500 };

/** A TCP proxy to the API server whose connections the test can cut (a network partition). */
async function cuttableProxy(target: URL): Promise<{ url: string; cut(): void; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let cut = false;
  const server: Server = createServer((client) => {
    if (cut) {
      client.destroy();
      return;
    }
    const upstream = connect(Number(target.port), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => s.destroy());
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no proxy address');
  return {
    url: `https://127.0.0.1:${address.port}`,
    cut() {
      cut = true;
      for (const s of sockets) s.destroy();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

interface Candidate {
  elector: LeaseElector;
  /** performance.now() of each start and stop of leading. */
  started: number[];
  stopped: number[];
}

function candidate(kubeConfig: KubeConfig, namespace: string, lease: string, name: string): Candidate {
  const c: Candidate = { started: [], stopped: [], elector: undefined as unknown as LeaseElector };
  c.elector = new LeaseElector({
    client: new KubeClient({ kubeConfig, requestTimeoutMs: 2 * FAST.retryPeriodMs }),
    namespace,
    name: lease,
    identity: name,
    ...FAST,
    logger: silentLogger(),
    onStartedLeading: () => c.started.push(performance.now()),
    onStoppedLeading: () => c.stopped.push(performance.now()),
  });
  return c;
}

describe('leader election with a real Lease', { timeout: 120_000 }, () => {
  let endpoint: ClusterEndpoint;
  let kc: KubeConfig;
  let release: () => Promise<void>;
  const sfx = randomBytes(3).toString('hex');
  const ns = `leader-${sfx}`;
  const cleanups: (() => Promise<void>)[] = [];

  before(async () => {
    ({ endpoint, kubeConfig: kc, release } = await acquireCluster());
    await createNamespace(kc.makeApiClient(CoreV1Api), ns);
  });

  after(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
    await release?.();
  });

  test('one leader among two candidates; a graceful stop releases the Lease and the other leads within a retry period', async () => {
    const a = candidate(kc, ns, 'graceful', 'a');
    const b = candidate(kc, ns, 'graceful', 'b');
    cleanups.push(
      () => a.elector.stop(),
      () => b.elector.stop(),
    );
    a.elector.start();
    await eventually('a leads', () => assert.equal(a.elector.isLeader, true), 10_000);
    b.elector.start();
    await sleep(4 * FAST.retryPeriodMs);
    assert.equal(b.elector.isLeader, false, 'b must not lead while a renews');
    assert.equal(a.elector.isLeader, true);
    const stoppedAt = performance.now();
    await a.elector.stop();
    await eventually('b leads after the release', () => assert.equal(b.elector.isLeader, true), 10_000);
    const handover = (b.started[0] ?? Number.NaN) - stoppedAt;
    process.stderr.write(`graceful handover: ${Math.round(handover)} ms\n`);
    // A released Lease is free at once: the next attempt, within one (jittered) retry period.
    assert.ok(handover < FAST.retryPeriodMs * 1.2 + 500, `handover took ${handover} ms`);
    const lease = (await new KubeClient({ kubeConfig: kc }).request(
      'GET',
      `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/graceful`,
    )) as { spec: { holderIdentity: string; leaseTransitions: number } };
    assert.equal(lease.spec.holderIdentity, 'b');
    assert.ok(lease.spec.leaseTransitions >= 1, JSON.stringify(lease.spec));
  });

  test('a partitioned leader steps down before its Lease can be taken over; the other takes over after it expires', async () => {
    const proxy = await cuttableProxy(new URL(endpoint.server));
    cleanups.push(() => proxy.close());
    const a = candidate(kubeConfigFor({ ...endpoint, server: proxy.url }), ns, 'partition', 'a');
    const b = candidate(kc, ns, 'partition', 'b');
    cleanups.push(
      () => a.elector.stop(),
      () => b.elector.stop(),
    );
    a.elector.start();
    await eventually('a leads', () => assert.equal(a.elector.isLeader, true), 10_000);
    b.elector.start();
    await sleep(4 * FAST.retryPeriodMs);
    assert.equal(b.elector.isLeader, false);
    const cutAt = performance.now();
    proxy.cut();
    await eventually('a steps down', () => assert.equal(a.elector.isLeader, false), 10_000);
    await eventually('b leads', () => assert.equal(b.elector.isLeader, true), 15_000);
    const aStopped = (a.stopped[0] ?? Number.NaN) - cutAt;
    const bStarted = (b.started[0] ?? Number.NaN) - cutAt;
    process.stderr.write(
      `partition: leader stepped down ${Math.round(aStopped)} ms after the cut, the other led at ${Math.round(bStarted)} ms\n`,
    );
    // Never two leaders: the partitioned one gave up (renew deadline) before the other took over
    // (lease duration, as the other observed it).
    assert.ok(aStopped < bStarted, `a stopped at ${aStopped} ms, b started at ${bStarted} ms`);
    assert.ok(aStopped <= FAST.renewDeadlineMs + 200, `a kept leading ${aStopped} ms without renewing`);
    assert.ok(bStarted >= FAST.leaseDurationMs - FAST.retryPeriodMs, `b took over after only ${bStarted} ms`);
  });

  describe('two live controllers', () => {
    const meshName = `ld-${sfx}`;
    const cp = `skein-system-ld-${sfx}`;
    const mwc = `skein-sidecar-injector-${meshName}`;
    const mwcPath = `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/${mwc}`;
    const controllers: KubeController[] = [];
    let api: KubeClient;

    const leaderMetric = async (c: KubeController): Promise<number> => {
      const res = await fetch(`http://127.0.0.1:${Number(c.ready['http'])}/metrics`);
      const m = /^skein_leader (\d)/m.exec(await res.text());
      return Number(m?.[1] ?? Number.NaN);
    };
    const caBundle = async () =>
      String(
        ((await api.request('GET', mwcPath)) as { webhooks: { clientConfig: { caBundle?: string } }[] })
          .webhooks[0]?.clientConfig.caBundle ?? '',
      );
    const clearCaBundle = () =>
      api.request('PATCH', mwcPath, {
        contentType: 'application/json-patch+json',
        body: [{ op: 'replace', path: '/webhooks/0/clientConfig/caBundle', value: '' }],
      });

    before(async () => {
      api = new KubeClient({ kubeConfig: kc });
      await prepareMeshCluster(kc, kc.makeApiClient(CoreV1Api), cp);
      await api.request('POST', '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations', {
        body: {
          metadata: { name: mwc },
          webhooks: [
            {
              name: 'sidecar-injector.skein.dev',
              clientConfig: { url: 'https://127.0.0.1:1/mutate' },
              rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
              // Matches no namespace: the test only watches who keeps the caBundle.
              namespaceSelector: { matchLabels: { 'skein.dev/monitored-by': `nobody-${sfx}` } },
              sideEffects: 'None',
              admissionReviewVersions: ['v1'],
              failurePolicy: 'Ignore',
            },
          ],
        },
      });
      cleanups.push(() => api.request('DELETE', mwcPath).then(() => undefined));
      const args = [
        ...['--leader-elect-lease-duration', '3s', '--leader-elect-renew-deadline', '2s'],
        ...['--leader-elect-retry-period', '500ms'],
      ];
      for (let i = 0; i < 2; i++) {
        const c = await startKubeController({
          kubeconfigPath: endpoint.kubeconfigPath,
          meshName,
          namespace: cp,
          args,
        });
        controllers.push(c);
        cleanups.push(() => c.stop());
      }
    });

    test('both serve xDS and admissions; only the leader patches the caBundle; killing it moves that work to the other within the lease duration', async () => {
      let leader: KubeController | undefined;
      await eventually('exactly one leader', async () => {
        const flags = await Promise.all(controllers.map(leaderMetric));
        assert.deepEqual([...flags].sort(), [0, 1], JSON.stringify(flags));
        leader = controllers[flags.indexOf(1)];
      });
      const follower = controllers.find((c) => c !== leader);
      assert.ok(leader && follower);
      for (const c of controllers) {
        const ready = await fetch(`http://127.0.0.1:${Number(c.ready['http'])}/readyz`);
        assert.equal(ready.status, 200, 'every replica is ready to serve xDS');
        assert.ok(Number(c.ready['ads']) > 0 && Number(c.ready['webhook']) > 0);
      }
      await eventually('the caBundle is set', async () => assert.notEqual(await caBundle(), ''));
      const patches = (c: KubeController) =>
        c.process.lines.filter((l) => l['msg'] === 'caBundle updated').length;
      assert.equal(patches(follower), 0, 'the follower never patched the caBundle');
      // The leader keeps it: cleared, it is restored, by the leader alone.
      const first = leader;
      const before = patches(first);
      await clearCaBundle();
      await eventually('the leader restores the caBundle', async () => {
        assert.notEqual(await caBundle(), '');
        // Its log line may trail the write by a moment.
        assert.equal(patches(first), before + 1);
      });
      assert.equal(patches(follower), 0);

      // A crash: no release, so the other waits out the Lease (as it observed it), then leads.
      const killedAt = performance.now();
      leader.process.child.kill('SIGKILL');
      await eventually(
        'the follower leads',
        async () => assert.equal(await leaderMetric(follower), 1),
        15_000,
      );
      const takeover = performance.now() - killedAt;
      process.stderr.write(
        `failover after SIGKILL: the other replica led after ${Math.round(takeover)} ms\n`,
      );
      assert.ok(takeover < 3000 + 2 * 500 + 1500, `takeover took ${takeover} ms`);
      await clearCaBundle();
      await eventually('the new leader restores the caBundle', async () => {
        assert.notEqual(await caBundle(), '');
        assert.ok(patches(follower) >= 1, 'the new leader patched it');
      });
    });
  });
});
