import assert from 'node:assert/strict';
import { test } from 'node:test';
import { gatewayContext, gatewayObjects, gatewayProxy } from '../../../test/support/envoy/gateway.js';
import {
  bookstoreObjects,
  fakeSecrets,
  proxyFor,
  storeOf,
  viewOf,
} from '../../../test/support/envoy/mesh.js';
import { named, outboundHosts } from '../../../test/support/envoy/pick.js';
import { upstreamSetting } from '../../../test/support/envoy/upstream.js';
import type { MeshView } from '../../catalog/types.js';
import type { AnyObject } from '../../model/objects.js';
import { gatewayRdsGenerator } from '../rds/gateway.js';
import { proxylessRouteGenerator } from '../rds/proxyless.js';
import { sidecarRdsGenerator } from '../rds/sidecar.js';

const HASH_ON = [
  { header: 'X-User', terminal: true },
  { cookie: { name: 'session', ttl: '1h', path: '/' } },
  { header: 'x-trace-bin' },
  { sourceIP: true },
];

/** Envoy's hash_policy for these keys, in order. */
const ENVOY_POLICY = [
  { header: { header_name: 'x-user' }, terminal: true },
  { cookie: { name: 'session', ttl: { seconds: 3600 }, path: '/' } },
  { header: { header_name: 'x-trace-bin' } },
  { connection_properties: { source_ip: true } },
];

function meshWith(...settings: AnyObject[]): MeshView {
  return viewOf(storeOf([...bookstoreObjects(), ...settings]));
}

type VirtualHost = { name: string; routes: { route?: { hash_policy?: unknown } }[] };

function sidecarHosts(mesh: MeshView): VirtualHost[] {
  const out = sidecarRdsGenerator.generate(
    proxyFor(mesh, 'bookbuyer-1'),
    { mesh, secrets: fakeSecrets('all') },
    undefined,
  );
  return outboundHosts(out, 14001) as VirtualHost[];
}

test("hashOn becomes hash_policy on the callers' sidecar route to that host only, keys in order", () => {
  const hosts = sidecarHosts(
    meshWith(
      upstreamSetting('bookstore', 'bookstore-v1', { loadBalancer: { policy: 'Maglev', hashOn: HASH_ON } }),
    ),
  );
  assert.deepEqual(
    hosts.find((h) => h.name === 'bookstore/bookstore-v1')?.routes[0]?.route?.hash_policy,
    ENVOY_POLICY,
  );
  for (const h of hosts.filter((h) => h.name !== 'bookstore/bookstore-v1'))
    assert.equal(h.routes[0]?.route?.hash_policy, undefined, h.name);
});

test('RingHash without hashOn sets no hash_policy (Envoy then picks at random)', () => {
  const hosts = sidecarHosts(
    meshWith(upstreamSetting('bookstore', 'bookstore-v1', { loadBalancer: { policy: 'RingHash' } })),
  );
  for (const h of hosts) assert.equal(h.routes[0]?.route?.hash_policy, undefined, h.name);
});

test('the ingress gateway route to the host hashes alike', () => {
  const mesh = viewOf(
    storeOf([
      ...gatewayObjects(),
      upstreamSetting('bookstore', 'bookstore-v1', { loadBalancer: { policy: 'RingHash', hashOn: HASH_ON } }),
    ]),
  );
  const http = named(
    gatewayRdsGenerator.generate(gatewayProxy(mesh), gatewayContext(mesh, []), new Set(['gateway-http'])),
    'gateway-http',
  );
  const shop = (http['virtual_hosts'] as VirtualHost[]).find((h) => h.name === 'shop.example.com');
  // Exact /about → the apex (no setting) comes first and does not hash; /books → bookstore-v1 does.
  assert.deepEqual(
    shop?.routes.map((r) => r.route?.hash_policy),
    [undefined, ENVOY_POLICY],
  );
});

test('proxyless routes get only the header keys grpc-js-xds 1.14 hashes on, and only for RingHash', () => {
  const rds = (mesh: MeshView) =>
    named(
      proxylessRouteGenerator.generate(
        proxyFor(mesh, 'bookbuyer-1', 'grpc'),
        { mesh, secrets: fakeSecrets('all') },
        new Set(['bookstore-v1.bookstore.svc.cluster.local:14001']),
      ),
      'bookstore-v1.bookstore.svc.cluster.local:14001',
    );
  const route = (mesh: MeshView) =>
    (rds(mesh)['virtual_hosts'] as VirtualHost[])[0]?.routes[0]?.route?.hash_policy;
  const ring = meshWith(
    upstreamSetting('bookstore', 'bookstore-v1', { loadBalancer: { policy: 'RingHash', hashOn: HASH_ON } }),
  );
  assert.deepEqual(route(ring), [{ header: { header_name: 'x-user' }, terminal: true }]);
  const maglev = meshWith(
    upstreamSetting('bookstore', 'bookstore-v1', { loadBalancer: { policy: 'Maglev', hashOn: HASH_ON } }),
  );
  assert.equal(route(maglev), undefined);
});
