// SMI HTTPRouteGroup matches as real grpc-js-xds servers enforce them (RBAC
// HTTP filter over xDS-managed mTLS), configured by the local-mode controller.
// The bookstore example's catch-all route group is replaced by one that allows
// Who, and Restock only with a role header. (A meshed caller no TrafficTarget
// names is denied too: bookthief, in proxyless.test.ts.)
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { adsClient, fetchLikeEnvoy, proxyCredentials } from '../support/envoy-like.js';
import { validateWithEnvoy } from '../support/envoy-validate.js';
import { LocalMesh } from '../support/local-mesh.js';

const BOOKSTORE = 'bookstore.bookstore.svc.cluster.local';
const RESTOCK = '/skein.test.Echo/Restock';
const STEAL = '/skein.test.Echo/Steal';

// grpc-js-xds RBAC sees every call as POST, and anchors header regexes
// (`^<regex>$`), so a value merely containing a match is refused.
const ACCESS = `apiVersion: specs.smi-spec.io/v1alpha4
kind: HTTPRouteGroup
metadata:
  name: bookstore-service-routes
  namespace: bookstore
spec:
  matches:
    - name: who
      pathRegex: '/skein\\.test\\.Echo/Who'
      methods: ["POST"]
    - name: restock
      pathRegex: '/skein\\.test\\.Echo/Restock'
      methods: ["*"]
      headers:
        x-role: "clerk|manager"
---
apiVersion: access.smi-spec.io/v1alpha3
kind: TrafficTarget
metadata:
  name: bookbuyer-access-bookstore
  namespace: bookstore
spec:
  destination: { kind: ServiceAccount, name: bookstore, namespace: bookstore }
  sources: [{ kind: ServiceAccount, name: bookbuyer, namespace: bookbuyer }]
  rules: [{ kind: HTTPRouteGroup, name: bookstore-service-routes }]
`;

interface Totals {
  ok: Record<string, number>;
  errors: Record<string, number>;
}

function sum(counts: Record<string, number>): number {
  return Object.values(counts).reduce((a, b) => a + b, 0);
}

describe('SMI route matches enforced by proxyless gRPC servers', () => {
  let mesh: LocalMesh;

  before(async () => {
    mesh = await LocalMesh.start({
      // Only bookstore's policy matters here; no bookwarehouse workload runs.
      prepare: (dir) => writeFile(path.join(dir, 'access.yaml'), ACCESS),
    });
    // Steal is served but in no route group: the denial must come from RBAC.
    const methods = ['--method', RESTOCK, '--method', STEAL];
    await Promise.all([
      mesh.startServer('bookstore', 'bookstore-v1', '127.0.0.21', 14021, false, methods),
      mesh.startServer('bookstore', 'bookstore-v2', '127.0.0.22', 14022, false, methods),
    ]);
  });
  after(async () => {
    await mesh?.stop();
  });

  /** Runs a bookbuyer caller for `count` calls with extra flags and returns its totals. */
  async function calls(count: number, args: string[] = []): Promise<Totals> {
    const c = mesh.startCaller('bookbuyer', 'bookbuyer', BOOKSTORE, mesh.port(14001), [
      '--count',
      String(count),
      '--interval-ms',
      '0',
      ...args,
    ]);
    const { ok, errors } = (await c.waitFor((l) => l['type'] === 'done', 30_000)) as unknown as Totals;
    return { ok, errors };
  }

  test('an allowed path succeeds over mTLS; a served path outside the route group is PERMISSION_DENIED', async () => {
    const [who, steal] = await Promise.all([calls(20), calls(5, ['--method', STEAL])]);
    assert.deepEqual(who.errors, {});
    assert.equal(sum(who.ok), 20);
    assert.deepEqual(steal, { ok: {}, errors: { PERMISSION_DENIED: 5 } });
  });

  test('a header-gated match allows only calls carrying a matching header, anchored', async () => {
    const restock = (header?: string) =>
      calls(4, ['--method', RESTOCK, ...(header ? ['--header', header] : [])]);
    // `clerk-trainee` and `head-clerk` each match one side of an ungrouped
    // `^clerk|manager$`: the regex must be matched as a whole.
    const [none, clerk, manager, other, partial, trainee] = await Promise.all([
      restock(),
      restock('x-role=clerk'),
      restock('x-role=manager'),
      restock('x-role=thief'),
      restock('x-role=head-clerk'),
      restock('x-role=clerk-trainee'),
    ]);
    assert.deepEqual(none, { ok: {}, errors: { PERMISSION_DENIED: 4 } });
    for (const allowed of [clerk, manager]) {
      assert.deepEqual(allowed.errors, {});
      assert.equal(sum(allowed.ok), 4);
    }
    assert.deepEqual(other, { ok: {}, errors: { PERMISSION_DENIED: 4 } });
    assert.deepEqual(partial, { ok: {}, errors: { PERMISSION_DENIED: 4 } });
    assert.deepEqual(trainee, { ok: {}, errors: { PERMISSION_DENIED: 4 } });
  });

  test('a plaintext caller cannot reach the mTLS-only servers', async () => {
    const r = await calls(2, ['--plaintext']);
    assert.deepEqual(r.ok, {});
    assert.deepEqual(Object.keys(r.errors), ['UNAVAILABLE'], JSON.stringify(r));
  });

  test("the sidecar configuration of this mesh's route matches passes Envoy's validation rules", async () => {
    const identities = [
      { uuid: '00000000-0000-4000-8000-000000000011', serviceAccount: 'bookbuyer', namespace: 'bookbuyer' },
      { uuid: '00000000-0000-4000-8000-000000000021', serviceAccount: 'bookstore', namespace: 'bookstore' },
    ];
    for (const proxy of identities) {
      const { credentials, cn } = await proxyCredentials(mesh.stateDir, proxy);
      const client = adsClient(mesh.ports.ads, credentials);
      try {
        const res = await fetchLikeEnvoy(client, cn);
        assert.ok(res.listeners.length > 0 && res.routes.length > 0, `${proxy.serviceAccount}: no config`);
        assert.deepEqual(await validateWithEnvoy(res.encoded), [], proxy.serviceAccount);
      } finally {
        client.close();
      }
    }
  });

  test('no workload rejected its configuration', () => {
    const nacks = mesh.controller.lines.filter((l) => l['msg'] === 'proxy rejected configuration (NACK)');
    assert.deepEqual(nacks, []);
  });
});
