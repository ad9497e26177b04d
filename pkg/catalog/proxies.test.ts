import assert from 'node:assert/strict';
import { test } from 'node:test';
import { namespace, pod, service } from '../../test/support/catalog-fixtures.js';
import { type ProxyIdentity, parseProxyCommonName } from '../mesh/identity.js';
import { objectKey } from '../model/objects.js';
import { MeshStore } from '../registry/store.js';
import {
  type ConnectedProxy,
  type DisconnectedProxy,
  ProxyRegistry,
  proxyContext,
  proxyGroup,
} from './proxies.js';
import type { MeshView } from './types.js';
import { buildMeshView } from './view.js';

const UUID_A = 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa';
const UUID_B = 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb';

function ident(uuid: string, kind = 'sidecar', sa = 'web', ns = 'shop'): ProxyIdentity {
  return parseProxyCommonName(`${uuid}.${kind}.${sa}.${ns}.cluster.local`);
}

test('registry tracks streams, overlapping streams of one proxy, and emits events', () => {
  const reg = new ProxyRegistry();
  const events: string[] = [];
  reg.on('connect', (p: ConnectedProxy) => events.push(`+${p.streamId}`));
  reg.on('disconnect', (p: DisconnectedProxy) => events.push(`-${p.streamId}`));

  const t0 = new Date(1_000);
  const s1 = reg.connect(ident(UUID_A), { streamId: 's1', connectedAt: t0, remoteAddress: '10.0.0.1:5555' });
  assert.equal(s1.remoteAddress, '10.0.0.1:5555');
  reg.connect(ident(UUID_A), { streamId: 's2', connectedAt: new Date(2_000) });
  reg.connect(ident(UUID_B), { streamId: 's3', connectedAt: new Date(3_000) });
  assert.throws(() => reg.connect(ident(UUID_B), { streamId: 's3', connectedAt: t0 }), /already registered/);

  assert.equal(reg.size, 3);
  assert.deepEqual(
    reg.byProxyUuid(UUID_A.toUpperCase()).map((p) => p.streamId),
    ['s1', 's2'],
  );
  assert.equal(reg.stream('s3')?.identity.uuid, UUID_B);

  assert.equal(reg.disconnect('s1')?.streamId, 's1');
  assert.equal(reg.disconnect('s1'), undefined, 'second disconnect is a no-op');
  assert.deepEqual(
    reg.byProxyUuid(UUID_A).map((p) => p.streamId),
    ['s2'],
  );
  assert.deepEqual(
    reg.connected().map((p) => p.streamId),
    ['s2', 's3'],
  );
  assert.deepEqual(events, ['+s1', '+s2', '+s3', '-s1']);
});

test('recently disconnected streams are kept for the retention window and bounded in number', () => {
  let now = 0;
  const reg = new ProxyRegistry({ retainMs: 1_000, maxRetained: 2, now: () => now });
  for (const id of ['a', 'b', 'c']) reg.connect(ident(UUID_A), { streamId: id, connectedAt: new Date(now) });
  reg.disconnect('a');
  now = 500;
  reg.disconnect('b');
  now = 600;
  reg.disconnect('c');
  // Bounded: only the two most recent remain.
  assert.deepEqual(
    reg.recentlyDisconnected().map((d) => d.streamId),
    ['b', 'c'],
  );
  assert.equal(reg.recentlyDisconnected()[1]?.disconnectedAt.getTime(), 600);
  now = 1_550;
  // b (500) is older than the window; c (600) is not.
  assert.deepEqual(
    reg.recentlyDisconnected().map((d) => d.streamId),
    ['c'],
  );
  now = 1_700;
  assert.deepEqual(reg.recentlyDisconnected(), []);
});

function mesh() {
  const store = new MeshStore();
  store.upsert(namespace('shop', 'skein'));
  store.upsert(service('shop', 'web', [{ name: 'http', port: 80 }]));
  store.upsert(service('shop', 'all', [{ name: 'http', port: 80 }], { tier: 'front' }));
  store.upsert(
    pod('shop', 'web-1', { sa: 'web', uuid: UUID_A, ip: '10.0.0.5', labels: { app: 'web', tier: 'front' } }),
  );
  store.upsert(
    pod('shop', 'web-2', { sa: 'web', uuid: UUID_B, ip: '10.0.0.6', labels: { app: 'web', tier: 'front' } }),
  );
  return buildMeshView(store, { meshName: 'skein' });
}

test('proxyContext finds the pod by UUID label and its services; sidecars of one identity share a group', () => {
  const view = mesh();
  const a = proxyContext(ident(UUID_A), view);
  assert.equal(a.pod?.metadata.name, 'web-1');
  assert.equal(a.podIP, '10.0.0.5');
  assert.deepEqual(
    a.services.map((s) => s.key),
    ['shop/all', 'shop/web'],
  );
  assert.equal(a.groupKey, 'sidecar|shop/web|shop/all:80,shop/web:80|');
  assert.equal(proxyContext(ident(UUID_B), view).groupKey, a.groupKey);
});

test('proxyless servers group per pod IP', () => {
  const view = mesh();
  const a = proxyContext(ident(UUID_A, 'grpc'), view);
  const b = proxyContext(ident(UUID_B, 'grpc'), view);
  assert.equal(a.groupKey, 'grpc|shop/web|shop/all:80,shop/web:80|10.0.0.5');
  assert.notEqual(a.groupKey, b.groupKey);
});

test('proxyContext attaches no pod when none carries the UUID or the pod runs as another identity', () => {
  const view = mesh();
  const unknown = proxyContext(ident('cccccccc-cccc-4ccc-8ccc-cccccccccccc'), view);
  assert.equal(unknown.pod, undefined);
  assert.equal(unknown.podIP, undefined);
  assert.deepEqual(unknown.services, []);
  assert.equal(unknown.groupKey, 'sidecar|shop/web||');

  // Same UUID, but the certificate claims another service account.
  const spoof = proxyContext(ident(UUID_A, 'sidecar', 'admin'), view);
  assert.equal(spoof.pod, undefined);
  assert.deepEqual(spoof.services, []);
  assert.equal(spoof.groupKey, 'sidecar|shop/admin||');
});

test('a proxy whose pod object is gone keeps the last pod it had, but not outside the mesh nor over a pod of another identity', () => {
  const store = new MeshStore();
  store.upsert(namespace('shop', 'skein'));
  const svc = service('shop', 'web', [{ name: 'http', port: 80 }]);
  store.upsert(svc);
  const web1 = pod('shop', 'web-1', { sa: 'web', uuid: UUID_A, ip: '10.0.0.5', labels: { app: 'web' } });
  store.upsert(web1);
  const before = proxyContext(ident(UUID_A), buildMeshView(store, { meshName: 'skein' }));
  store.delete('Pod', objectKey(web1));
  const gone = buildMeshView(store, { meshName: 'skein' });
  assert.equal(proxyContext(ident(UUID_A), gone).pod, undefined, 'a new stream gets no pod');
  const kept = proxyContext(ident(UUID_A), gone, before.pod);
  assert.equal(kept.pod, before.pod);
  assert.equal(kept.podIP, '10.0.0.5');
  assert.deepEqual(
    kept.services.map((s) => s.key),
    ['shop/web'],
  );
  assert.equal(kept.groupKey, before.groupKey);
  // The services are those of the current view: a deleted Service goes.
  store.delete('Service', objectKey(svc));
  assert.deepEqual(
    proxyContext(ident(UUID_A), buildMeshView(store, { meshName: 'skein' }), before.pod).services,
    [],
  );
  // A pod carrying the UUID now is the one that counts, even when it may not be attached.
  store.upsert(pod('shop', 'web-x', { sa: 'admin', uuid: UUID_A, ip: '10.0.0.9', labels: { app: 'web' } }));
  assert.equal(
    proxyContext(ident(UUID_A), buildMeshView(store, { meshName: 'skein' }), before.pod).pod,
    undefined,
  );
  // A namespace that left the mesh takes its pods along.
  store.upsert(namespace('shop', 'other-mesh'));
  const left = proxyContext(ident(UUID_A), buildMeshView(store, { meshName: 'skein' }), before.pod);
  assert.equal(left.pod, undefined);
  assert.equal(left.outsideMesh, true);
});

test('a namespace leaving the mesh gives its proxies another group, and proxyGroup notices the flip', () => {
  const store = new MeshStore();
  store.upsert(namespace('shop', 'skein'));
  store.upsert(pod('shop', 'web-1', { sa: 'web', uuid: UUID_A, ip: '10.0.0.5', labels: { app: 'web' } }));
  const inMesh = buildMeshView(store, { meshName: 'skein' });
  const before = proxyGroup(ident(UUID_A), inMesh);
  assert.equal(proxyContext(ident(UUID_A), inMesh).outsideMesh, undefined);
  store.upsert(namespace('shop', 'other-mesh'));
  const left = buildMeshView(store, { meshName: 'skein' });
  const ctx = proxyContext(ident(UUID_A), left);
  assert.equal(ctx.outsideMesh, true);
  assert.equal(ctx.pod, undefined);
  // Not the group of a proxy whose pod is merely not known yet.
  assert.equal(ctx.groupKey, 'sidecar|shop/web|||outside');
  const after = proxyGroup(ident(UUID_A), left, before);
  assert.notEqual(after, before);
  assert.equal(after.groupKey, ctx.groupKey);
  assert.equal(proxyGroup(ident(UUID_A), left, after), after);
  // A caller that keeps contexts passes them: the group key is read from the one it gives.
  const asked: MeshView[] = [];
  const kept = proxyGroup(ident(UUID_A), inMesh, after, (id, view) => {
    asked.push(view);
    return proxyContext(id, view);
  });
  assert.deepEqual(asked, [inMesh]);
  assert.equal(kept.groupKey, before.groupKey);
});

/** One service with a named target port, backed by two pods listening on different numbers for it. */
function namedPortView() {
  const store = new MeshStore();
  store.upsert(namespace('shop', 'skein'));
  store.upsert(service('shop', 'api', [{ name: 'grpc-api', port: 14001, targetPort: 'grpc-api' }]));
  const ports = (n: number) => ({
    labels: { app: 'api' },
    sa: 'web',
    containerPorts: [{ name: 'grpc-api', containerPort: n }],
  });
  store.upsert(pod('shop', 'api-1', { ...ports(14021), uuid: UUID_A, ip: '10.0.0.5' }));
  store.upsert(pod('shop', 'api-2', { ...ports(14022), uuid: UUID_B, ip: '10.0.0.6' }));
  return buildMeshView(store, { meshName: 'skein' });
}

test('a named target port is resolved against the proxy’s own pod', () => {
  const view = namedPortView();
  const a = proxyContext(ident(UUID_A), view);
  const b = proxyContext(ident(UUID_B), view);
  assert.equal(a.services[0]?.ports[0]?.targetPort, 14021);
  assert.equal(b.services[0]?.ports[0]?.targetPort, 14022);
  // Different listening ports mean different inbound config: different groups.
  assert.notEqual(a.groupKey, b.groupKey);
});

test('the per-pod view of a service is the same object on every call', () => {
  const view = namedPortView();
  const first = proxyContext(ident(UUID_B), view).services[0];
  assert.equal(first?.ports[0]?.targetPort, 14022);
  assert.equal(proxyContext(ident(UUID_B), view).services[0], first);
});
