// Envoy-sidecar configuration served by the real controller over real mTLS ADS,
// fetched the way Envoy subscribes, and checked against Envoy's protos, its
// cross-reference rules and its own validation rules (go-control-plane's
// ValidateAll over the bytes as received), in SMI and in permissive mode.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { BuiltinCA } from '../../pkg/certificate/builtin.js';
import type { ConfigDump } from '../../pkg/debug/config-dump.js';
import type { DebugPolicies } from '../../pkg/debug/policies.js';
import type { DebugProxy } from '../../pkg/debug/proxies.js';
import { TypeUrl } from '../../pkg/envoy/types.js';
import { spiffeId } from '../../pkg/mesh/identity.js';
import { crossReferenceProblems } from '../support/envoy/crossref.js';
import { resourceProblems } from '../support/envoy/roundtrip.js';
import {
  adsClient,
  type EnvoyLikeResources,
  fetchLikeEnvoy,
  proxyCredentials,
} from '../support/envoy-like.js';
import { validateWithEnvoy } from '../support/envoy-validate.js';
import { LocalMesh } from '../support/local-mesh.js';

const BUYER = {
  uuid: '00000000-0000-4000-8000-000000000011',
  serviceAccount: 'bookbuyer',
  namespace: 'bookbuyer',
};
const STORE_V1 = {
  uuid: '00000000-0000-4000-8000-000000000021',
  serviceAccount: 'bookstore',
  namespace: 'bookstore',
};
const THIEF = {
  uuid: '00000000-0000-4000-8000-000000000012',
  serviceAccount: 'bookthief',
  namespace: 'bookthief',
};

type Proxy = typeof BUYER;

describe('Envoy sidecar configuration over mTLS ADS', () => {
  let mesh: LocalMesh;
  before(async () => {
    mesh = await LocalMesh.start();
  });
  after(async () => {
    await mesh?.stop();
  });

  async function fetchFor(proxy: Proxy): Promise<EnvoyLikeResources> {
    const { credentials, cn } = await proxyCredentials(mesh.stateDir, proxy);
    const client = adsClient(mesh.ports.ads, credentials);
    try {
      return await fetchLikeEnvoy(client, cn);
    } finally {
      client.close();
    }
  }

  /** Every check a proxy's configuration must pass, Envoy's validation rules included. */
  async function assertValidConfig(proxy: Proxy, res: EnvoyLikeResources): Promise<void> {
    const all = [...res.listeners, ...res.routes, ...res.clusters, ...res.endpoints, ...res.secrets];
    assert.deepEqual(resourceProblems(all), []);
    assert.deepEqual(crossReferenceProblems(res), []);
    assert.equal(res.encoded.length, all.length);
    assert.deepEqual(await validateWithEnvoy(res.encoded), []);
    // Every proxy at least gets its own certificate (under the name every proxy uses for its own).
    const own = res.secrets.find((s) => s.name === 'service-cert:self');
    assert.match(
      JSON.stringify(own?.message),
      /BEGIN CERTIFICATE/,
      `${proxy.serviceAccount}: its certificate`,
    );
  }

  for (const proxy of [BUYER, STORE_V1, THIEF]) {
    test(`${proxy.serviceAccount}: every resource round-trips through Envoy's protos, passes Envoy's validation rules and every reference resolves`, async () => {
      await assertValidConfig(proxy, await fetchFor(proxy));
    });
  }

  test('bookbuyer may reach the split backends; bookthief gets no outbound config for bookstore', async () => {
    const buyer = await proxyCredentials(mesh.stateDir, BUYER);
    const thief = await proxyCredentials(mesh.stateDir, THIEF);
    const cb = adsClient(mesh.ports.ads, buyer.credentials);
    const ct = adsClient(mesh.ports.ads, thief.credentials);
    try {
      const b = await fetchLikeEnvoy(cb, buyer.cn);
      const t = await fetchLikeEnvoy(ct, thief.cn);
      const names = (rs: readonly { name: string }[]) => rs.map((r) => r.name);
      assert.ok(
        names(b.clusters).includes(`bookstore/bookstore-v1|${mesh.port(14001)}`),
        names(b.clusters).join(),
      );
      assert.ok(names(b.clusters).includes(`bookstore/bookstore-v2|${mesh.port(14001)}`));
      assert.equal(
        names(t.clusters).filter((n) => n.startsWith('bookstore/')).length,
        0,
        `bookthief got ${names(t.clusters).join()}`,
      );
      const route = JSON.stringify(b.routes);
      assert.match(route, /"weight":\{"value":75\}/);
      assert.match(route, /"weight":\{"value":25\}/);
    } finally {
      cb.close();
      ct.close();
    }
  });

  test("a proxy never gets another identity's service certificate", async () => {
    const { credentials, cn } = await proxyCredentials(mesh.stateDir, THIEF);
    const client = adsClient(mesh.ports.ads, credentials);
    try {
      client.send({
        typeUrl: TypeUrl.Secret,
        node: { id: cn, cluster: 'x' },
        resourceNames: ['service-cert:bookstore/bookstore', 'service-cert:bookthief/bookthief'],
      });
      // The own certificate may take a moment to issue; wait until it shows up.
      const deadline = Date.now() + 5000;
      const seen = new Set<string>();
      while (Date.now() < deadline && !seen.has('service-cert:bookthief/bookthief')) {
        const r = await client.next(deadline - Date.now());
        for (const n of r.names) seen.add(n);
        client.ack(r, ['service-cert:bookstore/bookstore', 'service-cert:bookthief/bookthief']);
      }
      assert.ok(seen.has('service-cert:bookthief/bookthief'));
      assert.ok(!seen.has('service-cert:bookstore/bookstore'), 'served another identity’s private key');
    } finally {
      client.close();
    }
  });

  test('a client certificate from another CA is refused', async () => {
    const rogue = await BuiltinCA.create({ commonName: 'rogue' });
    const cn = `${BUYER.uuid}.sidecar.bookbuyer.bookbuyer.cluster.local`;
    const cert = await rogue.issue({
      commonName: cn,
      uriSans: [spiffeId(BUYER, 'cluster.local')],
      validityMs: 60_000,
      usage: 'client',
    });
    const root = await readFile(`${mesh.stateDir}/ca/ca.crt`);
    const client = adsClient(
      mesh.ports.ads,
      grpc.credentials.createSsl(root, Buffer.from(cert.keyPem), Buffer.from(cert.certPem)),
    );
    try {
      client.send({ typeUrl: TypeUrl.Cluster, node: { id: cn, cluster: 'x' } });
      const status = await client.status;
      assert.equal(status.code, grpc.status.UNAVAILABLE, status.details);
    } finally {
      client.close();
    }
  });

  test('a certificate from our CA with a malformed CN is refused with UNAUTHENTICATED', async () => {
    const { credentials } = await proxyCredentials(mesh.stateDir, { ...BUYER, uuid: 'not-a-uuid' });
    const client = adsClient(mesh.ports.ads, credentials);
    try {
      client.send({ typeUrl: TypeUrl.Cluster, node: { id: 'x', cluster: 'x' } });
      const status = await client.status;
      assert.equal(status.code, grpc.status.UNAUTHENTICATED);
      assert.match(status.details, /not a UUID/);
    } finally {
      client.close();
    }
  });

  async function debugGet(path: string): Promise<{ status: number; body: string }> {
    const res = await fetch(`http://127.0.0.1:${mesh.ports.http}${path}`);
    return { status: res.status, body: await res.text() };
  }

  /** The /debug/proxies entry of a proxy UUID's newest stream, with its CDS sync state. */
  async function proxyEntry(uuid: string): Promise<DebugProxy | undefined> {
    const { status, body } = await debugGet('/debug/proxies');
    assert.equal(status, 200, body);
    const entries = JSON.parse(body) as DebugProxy[];
    return entries.filter((e) => e.identity.uuid === uuid).at(-1);
  }

  async function cdsSyncState(uuid: string): Promise<string | undefined> {
    return (await proxyEntry(uuid))?.types[TypeUrl.Cluster]?.syncState;
  }

  test('debug endpoints: proxies (SYNCED), config_dump, certs without keys, policies with their TrafficTarget', async () => {
    const { credentials, cn } = await proxyCredentials(mesh.stateDir, BUYER);
    const client = adsClient(mesh.ports.ads, credentials);
    try {
      const fetched = await fetchLikeEnvoy(client, cn);
      // The stream stays open: the controller reports it as connected and synced.
      const entry = await proxyEntry(BUYER.uuid);
      assert.equal(entry?.types[TypeUrl.Cluster]?.syncState, 'SYNCED');
      assert.equal(entry?.pod?.namespace, 'bookbuyer');
      assert.ok(entry?.connectedAt !== undefined && Date.parse(entry.connectedAt) <= Date.now());

      const dump = await debugGet(`/debug/config_dump?proxy=${BUYER.uuid}`);
      assert.equal(dump.status, 200, dump.body);
      const parsed = JSON.parse(dump.body) as ConfigDump;
      assert.equal(parsed.proxy, cn);
      assert.deepEqual(
        (parsed.types[TypeUrl.Cluster]?.resources ?? []).map((r) => r['name']).sort(),
        fetched.clusters.map((c) => c.name).sort(),
      );
      assert.ok(fetched.clusters.length > 0);
      const unknown = await debugGet('/debug/config_dump?proxy=no-such-proxy');
      assert.equal(unknown.status, 404);
      assert.match(unknown.body, /no connected proxy .*no-such-proxy/);

      const certs = await debugGet('/debug/certs');
      assert.equal(certs.status, 200);
      assert.ok(certs.body.includes(spiffeId(BUYER, 'cluster.local')), certs.body);
      assert.doesNotMatch(certs.body, /PRIVATE KEY/);

      const policies = await debugGet('/debug/policies');
      assert.equal(policies.status, 200);
      const view = JSON.parse(policies.body) as DebugPolicies;
      const rules = view.services
        .filter((s) => s.service.startsWith('bookstore/bookstore'))
        .flatMap((s) => s.ports.flatMap((p) => p.rules));
      assert.ok(
        rules.some(
          (r) =>
            r.origin === 'TrafficTarget bookstore/bookbuyer-access-bookstore' &&
            r.sources !== 'any' &&
            r.sources.includes('bookbuyer/bookbuyer'),
        ),
        JSON.stringify(rules),
      );
    } finally {
      client.close();
    }
  });

  test('debug endpoints: a proxy that rejected its clusters shows NACKED', async () => {
    const { credentials, cn } = await proxyCredentials(mesh.stateDir, THIEF);
    const client = adsClient(mesh.ports.ads, credentials);
    try {
      client.send({ typeUrl: TypeUrl.Cluster, node: { id: cn, cluster: 'x' } });
      const res = await client.next(5000);
      assert.equal(await cdsSyncState(THIEF.uuid), 'STALE');
      client.send({
        typeUrl: TypeUrl.Cluster,
        responseNonce: res.nonce,
        errorDetail: { code: 3, message: 'rejected by the test' },
      });
      const deadline = Date.now() + 5000;
      let state = await cdsSyncState(THIEF.uuid);
      while (state !== 'NACKED' && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
        state = await cdsSyncState(THIEF.uuid);
      }
      assert.equal(state, 'NACKED');
    } finally {
      client.close();
    }
  });

  // Last: it changes the mesh (and restores it).
  test("permissive mode: every sidecar's configuration passes Envoy's validation rules", async () => {
    const original = await mesh.readManifest('meshconfig.yaml');
    const setting = /^(\s+permissive:) false$/m;
    assert.match(original, setting);
    const reachesBookstore = (r: EnvoyLikeResources) =>
      r.clusters.some((c) => c.name.startsWith('bookstore/'));
    try {
      await mesh.writeManifest('meshconfig.yaml', original.replace(setting, '$1 true'));
      // Permissive mode has taken effect once bookthief, named by no TrafficTarget, may reach bookstore.
      const deadline = Date.now() + 15_000;
      let thief = await fetchFor(THIEF);
      while (!reachesBookstore(thief) && Date.now() < deadline) thief = await fetchFor(THIEF);
      assert.ok(reachesBookstore(thief), `bookthief got ${thief.clusters.map((c) => c.name).join()}`);
      await assertValidConfig(THIEF, thief);
      for (const proxy of [BUYER, STORE_V1]) await assertValidConfig(proxy, await fetchFor(proxy));
    } finally {
      await mesh.writeManifest('meshconfig.yaml', original);
    }
  });
});
