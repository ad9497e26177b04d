import assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '../logger/logger.js';
import { KubeApiError, type RequestOptions } from '../registry/kube/client.js';
import type { ReplicaReport } from './replica-evidence.js';
import { EVIDENCE_ANNOTATION, KubeReplicaReports, replicaName } from './replica-reports.js';

const LEASES = '/apis/coordination.k8s.io/v1/namespaces/cp/leases';

/** The Leases collection of one namespace, as the API server answers the calls made here. */
class FakeLeases {
  readonly items = new Map<string, { metadata: Record<string, unknown>; spec: Record<string, unknown> }>();
  readonly calls: string[] = [];
  #rv = 0;
  async request(method: string, path: string, o: RequestOptions = {}): Promise<unknown> {
    this.calls.push(`${method} ${path.replace(LEASES, '')}`);
    const name = path.slice(LEASES.length + 1);
    const body = o.body as { metadata?: Record<string, unknown>; spec?: Record<string, unknown> } | undefined;
    if (method === 'GET') {
      assert.equal(
        o.query?.['labelSelector'],
        'app.kubernetes.io/managed-by=skein,app.kubernetes.io/component=replica-evidence',
      );
      return { items: [...this.items.values()] };
    }
    if (method === 'POST') {
      const n = String(body?.metadata?.['name']);
      if (this.items.has(n)) throw new KubeApiError(409, 'AlreadyExists', 'exists');
      this.items.set(n, {
        metadata: { ...body?.metadata, resourceVersion: String(++this.#rv) },
        spec: { ...body?.spec },
      });
      return {};
    }
    const item = this.items.get(name);
    if (!item) throw new KubeApiError(404, 'NotFound', `${name} not found`);
    if (method === 'PATCH') {
      item.metadata = { ...item.metadata, ...body?.metadata, resourceVersion: String(++this.#rv) };
      item.spec = { ...item.spec, ...body?.spec };
      return {};
    }
    if (method === 'DELETE') {
      const want = (o.body as { preconditions?: { resourceVersion?: string } } | undefined)?.preconditions
        ?.resourceVersion;
      if (want !== undefined && want !== item.metadata['resourceVersion'])
        throw new KubeApiError(409, 'Conflict', 'changed');
      this.items.delete(name);
      return {};
    }
    throw new Error(`unexpected ${method}`);
  }
}

const report = (replica: string, proxies = 0): ReplicaReport => ({
  replica,
  stage: 'distribute@1/1',
  proxies,
  leaves: 0,
  files: 0,
  connected: 1,
  ready: proxies === 0,
  waitingFor: '',
  observedAt: 0,
});

function replica(client: FakeLeases, name: string, clock: { now: number }) {
  return new KubeReplicaReports({
    client,
    namespace: 'cp',
    replica: name,
    leaseDurationMs: 3000,
    logger: silentLogger(),
    monotonic: () => clock.now,
  });
}

test('a report is created, rewritten on change, renewed every third of its duration, and otherwise left alone', async () => {
  const api = new FakeLeases();
  const clock = { now: 0 };
  const a = replica(api, 'a', clock);
  await a.publish(report('a', 1));
  assert.deepEqual(api.calls, ['PATCH /skein-replica-a', 'POST ']);
  await a.publish({ ...report('a', 1), observedAt: 5 });
  assert.equal(api.calls.length, 2, 'unchanged and not due: no write');
  await a.publish(report('a', 0));
  assert.equal(api.calls.at(-1), 'PATCH /skein-replica-a', 'changed: written at once');
  clock.now = 999;
  await a.publish(report('a', 0));
  assert.equal(api.calls.length, 3);
  clock.now = 1000;
  await a.publish(report('a', 0));
  assert.equal(api.calls.length, 4, 'renewed after a third of the duration');
  const stored = api.items.get('skein-replica-a');
  assert.equal(stored?.spec['holderIdentity'], 'a');
  assert.equal(stored?.spec['leaseDurationSeconds'], 3);
  const annotations = stored?.metadata['annotations'] as Record<string, string>;
  assert.equal(JSON.parse(annotations[EVIDENCE_ANNOTATION] ?? '').proxies, 0);
});

test('the others: own report left out, an unreadable one holds the rotation, a gone one is collected by the leader only', async () => {
  const api = new FakeLeases();
  const clock = { now: 0 };
  const [a, b, c] = ['a', 'b', 'c'].map((n) => replica(api, n, clock));
  assert.ok(a && b && c);
  await Promise.all([a.publish(report('a')), b.publish(report('b', 2)), c.publish(report('c'))]);
  const cLease = api.items.get('skein-replica-c');
  assert.ok(cLease);
  cLease.metadata['annotations'] = { [EVIDENCE_ANNOTATION]: '{"replica":' };
  const seen = await a.others({ collect: true });
  assert.deepEqual(
    seen.map((r) => [r.replica, r.proxies, r.ready]),
    [
      ['b', 2, false],
      ['c', 0, false],
    ],
  );
  assert.match(seen[1]?.stage ?? '', /^unreadable \(Lease cp\/skein-replica-c: the evidence is not JSON\)$/);
  // b keeps renewing; c stops. Three seconds later, as observed here, c is gone.
  clock.now = 1500;
  await b.publish(report('b', 2));
  await a.others({ collect: true });
  clock.now = 3000;
  await b.publish(report('b', 2));
  assert.deepEqual(
    (await a.others({ collect: false })).map((r) => r.replica),
    ['b'],
    'c is no longer counted',
  );
  assert.ok(api.items.has('skein-replica-c'), 'a follower does not collect');
  assert.deepEqual(
    (await a.others({ collect: true })).map((r) => r.replica),
    ['b'],
  );
  assert.ok(!api.items.has('skein-replica-c'), 'the leader collected it');
  await b.withdraw();
  await b.withdraw();
  assert.deepEqual([...api.items.keys()], ['skein-replica-a']);
});

test('a replica is named after its pod, or after the host with a random suffix', () => {
  assert.equal(replicaName('skein-controller-7d9f-x2', 'abc123'), 'skein-controller-7d9f-x2');
  assert.match(replicaName(undefined, 'abc123'), /^[a-z0-9-]+-abc123$/);
});
