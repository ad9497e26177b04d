// UpstreamTrafficSetting `loadBalancer.hashOn` for proxyless gRPC: grpc-js-xds
// clients (each call batch its own process, so each its own channel and ring)
// against two bookstore-v1 endpoints, the controller in local mode. With
// RingHash and hashOn header x-user every user's calls reach one endpoint and
// users spread over both; without hashOn calls spread.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eventually } from '../support/kube-registry-fixture.js';
import { LocalMesh } from '../support/local-mesh.js';

const V1 = 'bookstore-v1.bookstore.svc.cluster.local';
const USERS = 20;
const CALLS = 10;

const setting = (hashOn: boolean) => `apiVersion: policy.skein.dev/v1alpha1
kind: UpstreamTrafficSetting
metadata: { name: bookstore-v1, namespace: bookstore }
spec:
  host: ${V1}
  loadBalancer: { policy: RingHash${hashOn ? ', hashOn: [{ header: x-user }]' : ''} }
`;

describe('proxyless gRPC: RingHash with hashOn gives session affinity', () => {
  let mesh: LocalMesh;

  before(async () => {
    mesh = await LocalMesh.start();
    await Promise.all([
      mesh.startServer('bookstore', 'bookstore-v1', '127.0.0.21', 14021),
      // A second bookstore-v1 endpoint (labels of the example's bookstore-v1 pod).
      mesh.addBookstoreV1Endpoint('bookstore-v1b', '127.0.0.24', '24'),
    ]);
  });
  after(async () => {
    await mesh?.stop();
  });

  /** The endpoints each user's CALLS calls reached, user by user (one caller process per user). */
  async function byUser(): Promise<string[][]> {
    const out: string[][] = [];
    for (let u = 0; u < USERS; u++) {
      const c = mesh.startCaller('bookbuyer', 'bookbuyer', V1, mesh.port(14001), [
        '--count',
        String(CALLS),
        // Spaced so round robin has both endpoints connected after the first calls.
        '--interval-ms',
        '20',
        '--header',
        `x-user=user-${u}`,
      ]);
      const done = (await c.waitFor((l) => l['type'] === 'done', 60_000)) as unknown as {
        ok: Record<string, number>;
        errors: Record<string, number>;
      };
      assert.deepEqual(done.errors, {});
      out.push(Object.keys(done.ok));
    }
    return out;
  }
  const pinned = (users: string[][]) => users.filter((pods) => pods.length === 1).length;
  const usersOn = (users: string[][], pod: string) =>
    users.filter((p) => p.length === 1 && p[0] === pod).length;

  test('each user sticks to one endpoint, users spread over both; without hashOn calls spread', async () => {
    // Round robin: a user's 10 calls alternate over both endpoints.
    let rr: string[][] = [];
    await eventually('both endpoints answer', async () => {
      rr = await byUser();
      assert.ok(pinned(rr) <= 2, JSON.stringify(rr));
    });
    await mesh.writeManifest('uts.yaml', setting(true));
    let hashed = rr;
    await eventually(
      'every user sticks to one endpoint',
      async () => {
        hashed = await byUser();
        // No tolerance: grpc-js hashes the header with xxhash onto a ring fixed by the endpoints.
        assert.equal(pinned(hashed), USERS, JSON.stringify(hashed));
      },
      60_000,
    );
    const a = usersOn(hashed, 'bookstore-v1');
    const b = usersOn(hashed, 'bookstore-v1b');
    // Fewer than 3 of 20 users on one endpoint: p ≈ 4e-4 (binomial, p = 0.5).
    assert.ok(a >= 3 && b >= 3, `users per endpoint: bookstore-v1 ${a}, bookstore-v1b ${b}`);
    // RingHash without hashOn: grpc-js hashes a random number per call (route-action.js).
    await mesh.writeManifest('uts.yaml', setting(false));
    let random = hashed;
    await eventually(
      'without hashOn one user reaches both endpoints',
      async () => {
        random = await byUser();
        // All 10 random picks of one user on one endpoint: p ≈ 0.002 per user.
        assert.ok(pinned(random) <= 2, JSON.stringify(random));
      },
      60_000,
    );
    console.log(
      `proxyless hash affinity, ${USERS} users × ${CALLS} calls: round robin ${pinned(rr)}/${USERS} users on one endpoint; RingHash + hashOn x-user ${pinned(hashed)}/${USERS} (bookstore-v1 ${a}, bookstore-v1b ${b} users); RingHash without hashOn ${pinned(random)}/${USERS}`,
    );
  });
});
