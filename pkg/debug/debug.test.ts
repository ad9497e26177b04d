import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildMeshView } from '../catalog/view.js';
import type { ManagedCertificateInfo } from '../certificate/manager.js';
import { TypeUrl } from '../envoy/types.js';
import { HealthServer } from '../health/server.js';
import type { ProxyIdentity } from '../mesh/identity.js';
import { ProblemBook } from '../registry/problem-book.js';
import { MeshStore } from '../registry/store.js';
import { encodeResource } from '../xds/cache/encoded.js';
import type { StreamStatus } from '../xds/server/types.js';
import { buildCerts } from './certs.js';
import { buildConfigDump } from './config-dump.js';
import { buildProxies, findStream, syncState } from './proxies.js';
import { mountDebugRoutes } from './routes.js';

function identity(uuid: string): ProxyIdentity {
  return {
    uuid,
    kind: 'sidecar',
    namespace: 'shop',
    serviceAccount: 'bookbuyer',
    trustDomain: 'cluster.local',
    cn: `${uuid}.sidecar.bookbuyer.shop.cluster.local`,
  };
}

function stream(
  streamId: string,
  uuid: string,
  connectedAt: string,
  types: StreamStatus['types'] = {},
): StreamStatus {
  return { streamId, identity: identity(uuid), connectedAt, received: { requests: 0, bytes: 0 }, types };
}

test('syncState: SYNCED, STALE, NACKED, NOT_SENT', () => {
  assert.equal(syncState({ subscribed: '*' }), 'NOT_SENT');
  assert.equal(syncState({ subscribed: '*', sentVersion: 'v1' }), 'STALE');
  assert.equal(syncState({ subscribed: '*', sentVersion: 'v2', ackedVersion: 'v1' }), 'STALE');
  assert.equal(syncState({ subscribed: '*', sentVersion: 'v1', ackedVersion: 'v1' }), 'SYNCED');
  assert.equal(
    syncState({ subscribed: '*', sentVersion: 'v2', ackedVersion: 'v1', nackedVersion: 'v2' }),
    'NACKED',
  );
  // An old NACK does not stick once a newer version is ACKed.
  assert.equal(
    syncState({ subscribed: '*', sentVersion: 'v3', ackedVersion: 'v3', nackedVersion: 'v2' }),
    'SYNCED',
  );
});

test('buildProxies adds the pod and each type sync state, oldest connection first', () => {
  const streams = [
    stream('s2', 'u2', '2026-01-01T00:00:02.000Z', {
      [TypeUrl.Cluster]: { subscribed: '*', sentVersion: 'a', ackedVersion: 'a' },
    }),
    stream('s1', 'u1', '2026-01-01T00:00:01.000Z', {
      [TypeUrl.Cluster]: { subscribed: '*', sentVersion: 'a' },
    }),
  ];
  const out = buildProxies(streams, (s) =>
    s.identity.uuid === 'u2' ? { namespace: 'shop', name: 'buyer-1' } : undefined,
  );
  assert.deepEqual(
    out.map((p) => [p.streamId, p.pod?.name, p.types[TypeUrl.Cluster]?.syncState, p.identity.serviceAccount]),
    [
      ['s1', undefined, 'STALE', 'bookbuyer'],
      ['s2', 'buyer-1', 'SYNCED', 'bookbuyer'],
    ],
  );
  assert.equal(out[0]?.connectedAt, '2026-01-01T00:00:01.000Z');
  assert.ok(!('pod' in (out[0] ?? {})));
});

test('findStream takes a stream id, or a proxy UUID (its newest stream)', () => {
  const streams = [
    stream('s1', 'u1', '2026-01-01T00:00:01.000Z'),
    stream('s2', 'u1', '2026-01-01T00:00:05.000Z'),
    stream('s3', 'u3', '2026-01-01T00:00:03.000Z'),
  ];
  assert.equal(findStream(streams, 's1')?.streamId, 's1');
  assert.equal(findStream(streams, 'u1')?.streamId, 's2');
  assert.equal(findStream(streams, 'u3')?.streamId, 's3');
  assert.equal(findStream(streams, 'nope'), undefined);
});

test('buildConfigDump decodes the encoded resources last sent, per type', () => {
  const cluster = (name: string) =>
    encodeResource({
      name,
      typeUrl: TypeUrl.Cluster,
      message: { name, type: 'EDS', lb_policy: 'RING_HASH' },
    });
  const st = stream('s1', 'u1', '2026-01-01T00:00:01.000Z', {
    [TypeUrl.Cluster]: { subscribed: '*', sentVersion: 'v9' },
  });
  const dump = buildConfigDump(
    st,
    new Map([
      [TypeUrl.Cluster, [cluster('shop/bookstore|14001'), cluster('shop/bookthief|14001')]],
      [TypeUrl.Listener, []],
    ]),
  );
  assert.equal(dump.streamId, 's1');
  assert.equal(dump.proxy, 'u1.sidecar.bookbuyer.shop.cluster.local');
  const cds = dump.types[TypeUrl.Cluster];
  assert.equal(cds?.version, 'v9');
  assert.deepEqual(
    cds?.resources.map((r) => [r['@type'], r.name, r.type, r.lb_policy]),
    [
      [TypeUrl.Cluster, 'shop/bookstore|14001', 'EDS', 'RING_HASH'],
      [TypeUrl.Cluster, 'shop/bookthief|14001', 'EDS', 'RING_HASH'],
    ],
  );
  assert.deepEqual(dump.types[TypeUrl.Listener], { resources: [] });
});

test('buildCerts lists names, SANs, serial and dates, nothing else', () => {
  const info: ManagedCertificateInfo & { keyPem: string } = {
    identityKey: 'shop/bookbuyer',
    commonName: 'bookbuyer.shop.cluster.local',
    uriSans: ['spiffe://cluster.local/ns/shop/sa/bookbuyer'],
    dnsSans: [],
    serialNumber: '0a1b',
    notBefore: new Date('2026-01-01T00:00:00Z'),
    notAfter: new Date('2026-01-02T00:00:00Z'),
    renewAt: new Date('2026-01-01T18:00:00Z'),
    keyPem: '-----BEGIN PRIVATE KEY-----',
  };
  const [c] = buildCerts([info]);
  assert.deepEqual(c, {
    identity: 'shop/bookbuyer',
    commonName: 'bookbuyer.shop.cluster.local',
    uriSans: ['spiffe://cluster.local/ns/shop/sa/bookbuyer'],
    dnsSans: [],
    serialNumber: '0a1b',
    notBefore: '2026-01-01T00:00:00.000Z',
    notAfter: '2026-01-02T00:00:00.000Z',
    renewAt: '2026-01-01T18:00:00.000Z',
  });
});

test('mountDebugRoutes: 404 while disabled (checked per request), JSON when enabled', async () => {
  let enabled = false;
  const health = new HealthServer([]);
  const store = new MeshStore();
  mountDebugRoutes(health, {
    enabled: () => enabled,
    streams: () => [stream('s1', 'u1', '2026-01-01T00:00:01.000Z')],
    sentResources: (id) => (id === 's1' ? new Map() : undefined),
    podOf: () => undefined,
    certificates: () => [],
    view: () => buildMeshView(store, { meshName: 'skein' }),
    problems: () => book.entries(),
  });
  const book = new ProblemBook(() => Date.parse('2026-01-01T00:00:02.000Z'));
  book.report({ source: 'a.yaml', kind: 'TrafficSplit', namespace: 'shop', name: 's', reason: 'bad weight' });
  const port = await health.listen(0, '127.0.0.1');
  const get = async (path: string) => {
    const res = await fetch(`http://127.0.0.1:${port}${path}`);
    return { status: res.status, body: await res.text() };
  };
  try {
    for (const path of [
      '/debug/proxies',
      '/debug/certs',
      '/debug/policies',
      '/debug/problems',
      '/debug/config_dump?proxy=s1',
    ])
      assert.equal((await get(path)).status, 404, path);
    enabled = true;
    assert.deepEqual(
      JSON.parse((await get('/debug/proxies')).body).map((p: { streamId: string }) => p.streamId),
      ['s1'],
    );
    assert.deepEqual(JSON.parse((await get('/debug/config_dump?proxy=u1')).body).types, {});
    assert.deepEqual(JSON.parse((await get('/debug/problems')).body), [
      {
        type: 'invalid-object',
        source: 'a.yaml',
        kind: 'TrafficSplit',
        namespace: 'shop',
        name: 's',
        reason: 'bad weight',
        since: '2026-01-01T00:00:02.000Z',
        inForce: 'nothing: the object is ignored',
      },
    ]);
    assert.equal((await get('/debug/config_dump')).status, 400);
    const unknown = await get('/debug/config_dump?proxy=zzz');
    assert.equal(unknown.status, 404);
    assert.match(unknown.body, /no connected proxy with stream id or UUID "zzz"/);
  } finally {
    await health.close();
  }
});
