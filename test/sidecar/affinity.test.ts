// UpstreamTrafficSetting `loadBalancer.hashOn` cookie and sourceIP keys through
// real Envoy sidecars (the header key is proven in resilience.test.ts): a
// caller pod's app calls the service `sticky` (pods sticky-a and sticky-b)
// through its sidecar, which hashes each request onto a RingHash ring.
// Permissive mode; mesh-app opens a new connection per request, so nothing
// but the hash keeps a user on one pod.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { eventually } from '../support/kube-registry-fixture.js';
import { applyRingHash, pinned, podsByUser, usersOn } from './affinity.js';
import { callerAndPair, HTTP_PORT, type MeshClient, SidecarMesh, sidecarSuiteSkipReason } from './mesh.js';

const sfx = randomBytes(3).toString('hex');
const skip = await sidecarSuiteSkipReason();
// RingHash is a cluster change: in force once Envoy has warmed the rebuilt cluster
// (initial_fetch_timeout, 15 s; docs/policy.md "When it takes effect"). hashOn alone is a route change.
const WARM_MS = 60_000;
const USERS = 20;
const CALLS = 10;

describe('session affinity by cookie and source IP through real Envoy sidecars', {
  skip,
  timeout: 400_000,
}, () => {
  let mesh: SidecarMesh;
  let caller: MeshClient;
  const url = `http://sticky:${HTTP_PORT}/work`;
  const setting = (hashOn: Record<string, unknown>[]) => applyRingHash(mesh, 'sticky', hashOn);
  const withCookie = (u: number) => caller.http(url, CALLS, { headers: { cookie: `session=user-${u}` } });
  const anonymous = (u: number) => caller.http(url, CALLS, { headers: { 'x-user': `user-${u}` } });

  before(async () => {
    mesh = await SidecarMesh.start(`af${sfx}`);
    ({ caller } = await callerAndPair(
      mesh,
      'sticky',
      { a: [], b: [] },
      (c) => (c['200 sticky-a'] ?? 0) > 0 && (c['200 sticky-b'] ?? 0) > 0,
    ));
  });

  after(async () => {
    await caller?.close();
    await mesh?.stop();
  });

  test('hashOn cookie: each cookie value sticks to one pod, values spread over both; a request without the cookie is not pinned', async () => {
    // Round robin first: the same cookie reaches both pods.
    const rr = await podsByUser(USERS, CALLS, withCookie);
    assert.ok(pinned(rr) <= 2, JSON.stringify(rr));
    await setting([{ cookie: { name: 'session' } }]);
    const applied = Date.now();
    let hashed = rr;
    await eventually(
      'every cookie value sticks to one pod',
      async () => {
        hashed = await podsByUser(USERS, CALLS, withCookie);
        // No tolerance: while the endpoints stay, a key's ring position and so its pod is fixed.
        assert.equal(pinned(hashed), USERS, JSON.stringify(hashed));
      },
      WARM_MS,
    );
    const tookMs = Date.now() - applied;
    const a = usersOn(hashed, 'sticky-a');
    const b = usersOn(hashed, 'sticky-b');
    // Fewer than 3 of 20 values on one pod: p ≈ 4e-4 (binomial, p = 0.5).
    assert.ok(a >= 3 && b >= 3, `users per pod: sticky-a ${a}, sticky-b ${b}`);
    // Without ttl a missing cookie is skipped: no key, a random pick per request.
    const without = await podsByUser(USERS, CALLS, anonymous);
    // All 10 random picks of one user on one pod: p ≈ 0.002 per user.
    assert.ok(pinned(without) <= 2, JSON.stringify(without));
    console.log(
      `hashOn cookie session, ${USERS} users × ${CALLS} calls: round robin ${pinned(rr)}/${USERS} on one pod; RingHash + cookie ${pinned(hashed)}/${USERS} (sticky-a ${a}, sticky-b ${b}), in force ${tookMs} ms after the apply; no cookie ${pinned(without)}/${USERS}`,
    );
  });

  test("hashOn cookie with ttl: the caller's sidecar sets the cookie on the first answer; sent back, it keeps the user on that pod", async () => {
    await setting([{ cookie: { name: 'session', ttl: '1h' } }]);
    /** One user: a first call without the cookie, then CALLS - 1 calls with the cookie it was given. */
    const session = async (u: number) => {
      const first = await caller.http(url, 1, {
        showHeaders: ['set-cookie'],
        headers: { 'x-user': `user-${u}` },
      });
      // bodies holds the client's last body per outcome: read this call's own.
      const outcome = Object.keys(first.counts)[0];
      const body = outcome === undefined ? undefined : first.bodies[outcome];
      // Sent back as a browser would, quotes included (Envoy quotes the value it generates).
      const cookie = /session=([^;,\s]+)/.exec(body ?? '')?.[1];
      assert.ok(cookie, `user ${u}: no session cookie set: ${JSON.stringify(first)}`);
      assert.match(body ?? '', /Max-Age=3600/, 'the ttl is the cookie’s Max-Age');
      const rest = await caller.http(url, CALLS - 1, { headers: { cookie: `session=${cookie}` } });
      const counts = { ...rest.counts };
      if (outcome) counts[outcome] = (counts[outcome] ?? 0) + 1;
      return { ...rest, counts };
    };
    let users: string[][] = [];
    await eventually('the generated cookie pins each user', async () => {
      users = await podsByUser(USERS, CALLS, session);
      assert.equal(pinned(users), USERS, JSON.stringify(users));
    });
    const a = usersOn(users, 'sticky-a');
    const b = usersOn(users, 'sticky-b');
    console.log(
      `hashOn cookie session ttl 1h: ${pinned(users)}/${USERS} users kept on the pod of their first answer by the cookie it set (sticky-a ${a}, sticky-b ${b})`,
    );
    // Envoy derives each generated cookie from the downstream address (a new connection,
    // so a new port, per request here): users spread. Same bound as above.
    assert.ok(a >= 3 && b >= 3, `users per pod: sticky-a ${a}, sticky-b ${b}`);
  });

  test('hashOn sourceIP: every request of the caller pod reaches one pod, whatever its headers', async () => {
    await setting([{ sourceIP: true }]);
    let users: string[][] = [];
    await eventually('every request of the caller reaches one pod', async () => {
      users = await podsByUser(USERS, CALLS, anonymous);
      assert.equal(new Set(users.flat()).size, 1, JSON.stringify(users));
    });
    console.log(
      `hashOn sourceIP: ${USERS * CALLS} calls from one caller pod (${USERS} x-user values) all reached ${users[0]?.[0]}`,
    );
  });
});
