import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  bookstoreMesh,
  bookstoreObjects,
  fakeSecrets,
  type PodName,
  proxyFor,
  rawSplit,
  storeOf,
  viewOf,
} from '../../../test/support/envoy/mesh.js';
import { at, byNameIn, list, named, names, outboundHosts } from '../../../test/support/envoy/pick.js';
import type { MeshView } from '../../catalog/types.js';
import { serviceDomains, sidecarRdsGenerator } from './sidecar.js';

function rds(mesh: MeshView, pod: PodName, requested?: string[]) {
  const req = requested ? new Set(requested) : undefined;
  return sidecarRdsGenerator.generate(proxyFor(mesh, pod), { mesh, secrets: fakeSecrets('all') }, req);
}

/** A MeshService as serviceDomains reads it. */
function apexService(ns = 'bookstore', name = 'bookstore') {
  return {
    namespace: ns,
    name,
    key: `${ns}/${name}`,
    fqdn: `${name}.${ns}.svc.cluster.local`,
    clusterIP: '10.96.0.10',
    ports: [],
    selector: {},
  };
}

test('bookbuyer: the apex splits 75/25 to the backends, bookstore-v1 goes straight to its cluster', () => {
  const routes = rds(bookstoreMesh(), 'bookbuyer-1');
  // One route config per service port, each referenced by the chain matching its clusterIP.
  assert.deepEqual(
    routes.map((r) => r.name),
    ['rds-outbound.14001.bookstore/bookstore', 'rds-outbound.14001.bookstore/bookstore-v1'],
  );
  const hosts = outboundHosts(routes, 14001);
  assert.deepEqual(names(hosts), ['bookstore/bookstore', 'bookstore/bookstore-v1']);
  const apex = byNameIn(hosts, 'bookstore/bookstore');
  assert.deepEqual(list(apex, 'routes'), [
    {
      match: { prefix: '/' },
      route: {
        weighted_clusters: {
          clusters: [
            { name: 'bookstore/bookstore-v1|14001', weight: { value: 75 } },
            { name: 'bookstore/bookstore-v2|14001', weight: { value: 25 } },
          ],
        },
      },
    },
  ]);
  // The chain matched the apex's address: whatever Host the app sent goes to it.
  assert.deepEqual(list(apex, 'domains'), ['*']);
  // Headless services share the port's Host-routed config; other namespace: no bare
  // service name (it would not resolve and could collide).
  assert.deepEqual(serviceDomains(apexService(), 14001, 'bookbuyer'), [
    'bookstore.bookstore',
    'bookstore.bookstore:14001',
    'bookstore.bookstore.svc',
    'bookstore.bookstore.svc:14001',
    'bookstore.bookstore.svc.cluster.local',
    'bookstore.bookstore.svc.cluster.local:14001',
    '10.96.0.10',
    '10.96.0.10:14001',
  ]);
  assert.deepEqual(at(byNameIn(hosts, 'bookstore/bookstore-v1'), 'routes', 0, 'route'), {
    cluster: 'bookstore/bookstore-v1|14001',
  });
});

test('zero-weight backends are left out; with none left the apex routes to itself', () => {
  // Through the policy engine (which drops them), and handed to the generator as they are.
  for (const zeroV2 of [
    bookstoreMesh({ weights: { v1: 100, v2: 0 } }),
    rawSplit(bookstoreMesh(), { v1: 100, v2: 0 }),
  ]) {
    const hosts = outboundHosts(rds(zeroV2, 'bookbuyer-1'), 14001);
    assert.deepEqual(at(byNameIn(hosts, 'bookstore/bookstore'), 'routes', 0, 'route', 'weighted_clusters'), {
      clusters: [{ name: 'bookstore/bookstore-v1|14001', weight: { value: 100 } }],
    });
  }
  for (const allZero of [
    bookstoreMesh({ weights: { v1: 0, v2: 0 } }),
    rawSplit(bookstoreMesh(), { v1: 0 }),
  ]) {
    const hosts2 = outboundHosts(rds(allZero, 'bookbuyer-1'), 14001);
    assert.deepEqual(at(byNameIn(hosts2, 'bookstore/bookstore'), 'routes', 0, 'route'), {
      cluster: 'bookstore/bookstore|14001',
    });
  }
});

test('same-namespace services get the bare name; gRPC routes disable the route timeout', () => {
  const host = byNameIn(
    outboundHosts(rds(bookstoreMesh(), 'bookstore-v1-1'), 14001),
    'bookwarehouse/bookwarehouse',
  );
  assert.deepEqual(
    serviceDomains(apexService('bookwarehouse', 'bookwarehouse'), 14001, 'bookwarehouse').slice(0, 2),
    ['bookwarehouse', 'bookwarehouse:14001'],
  );
  assert.deepEqual(at(host, 'routes', 0, 'route'), {
    cluster: 'bookwarehouse/bookwarehouse|14001',
    timeout: { seconds: 0 },
  });
  const own = named(rds(bookstoreMesh(), 'bookwarehouse-1'), 'rds-inbound.14001');
  assert.ok(list(own, 'virtual_hosts', 0, 'domains').includes('*'));
});

test('inbound route config: catch-all to the local cluster, one per service on a shared target port; TCP ports have none', () => {
  const configs = rds(bookstoreMesh(), 'bookstore-v1-1');
  assert.deepEqual(
    configs.map((r) => r.name),
    [
      'rds-inbound.14001.bookstore/bookstore',
      'rds-inbound.14001.bookstore/bookstore-v1',
      'rds-outbound.14001.bookwarehouse/bookwarehouse',
    ],
  );
  for (const svc of ['bookstore', 'bookstore-v1']) {
    const config = named(configs, `rds-inbound.14001.bookstore/${svc}`);
    assert.equal(list(config, 'virtual_hosts').length, 1);
    const vhost = at(config, 'virtual_hosts', 0);
    assert.equal(at(vhost, 'name'), 'inbound|14001');
    assert.deepEqual(at(vhost, 'domains'), ['*']);
    assert.deepEqual(at(vhost, 'routes'), [
      { match: { prefix: '/' }, route: { cluster: `bookstore/${svc}|14001|local` } },
    ]);
    // The service's SMI policy for the HCM's RBAC filter (lds/sidecar.test.ts checks its content).
    const perFilter = at(vhost, 'typed_per_filter_config');
    assert.deepEqual(Object.keys(perFilter as object), ['envoy.filters.http.rbac']);
    assert.equal(
      at(perFilter, 'envoy.filters.http.rbac', '@type'),
      'type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBACPerRoute',
    );
    assert.deepEqual(
      Object.keys(at(perFilter, 'envoy.filters.http.rbac', 'rbac', 'rules', 'policies') as object),
      ['TrafficTarget bookstore/bookstore'],
    );
  }
  // bookwarehouse's TCP port 13306 and outbound mysql (TCP) need no route config.
  assert.deepEqual(
    rds(bookstoreMesh(), 'bookwarehouse-1').map((r) => r.name),
    ['rds-inbound.14001'],
  );
});

test('only requested names are built; bookthief gets nothing in SMI mode', () => {
  assert.deepEqual(
    rds(bookstoreMesh(), 'bookstore-v1-1', [
      'rds-outbound.14001.bookwarehouse/bookwarehouse',
      'rds-outbound.14001',
      'rds-outbound.1',
    ]).map((r) => r.name),
    ['rds-outbound.14001.bookwarehouse/bookwarehouse'],
  );
  assert.deepEqual(rds(bookstoreMesh(), 'bookthief-1'), []);
  const mesh = bookstoreMesh({ permissive: true });
  const permissive = rds(mesh, 'bookthief-1');
  assert.ok(names(outboundHosts(permissive, 14001)).includes('bookstore/bookstore'));
  // Shared by every caller: the same message for another identity.
  const name = 'rds-outbound.14001.bookstore/bookstore';
  assert.equal(named(rds(mesh, 'bookbuyer-1'), name), named(permissive, name));
});

test('headless HTTP services keep the port-wide, Host-routed config their port-only chain references', () => {
  const objects = bookstoreObjects().map((o) =>
    o.kind === 'Service' && o.metadata.name === 'bookstore-v1'
      ? { ...o, spec: { ...o.spec, clusterIP: 'None' } }
      : o,
  );
  const mesh = viewOf(storeOf(objects));
  const routes = rds(mesh, 'bookbuyer-1');
  assert.deepEqual(
    routes.map((r) => r.name),
    ['rds-outbound.14001', 'rds-outbound.14001.bookstore/bookstore'],
  );
  // Every service of the port, by Host, as OSM routes: the chain matched the port alone.
  const port = list(named(routes, 'rds-outbound.14001'), 'virtual_hosts');
  assert.deepEqual(names(port), ['bookstore/bookstore', 'bookstore/bookstore-v1']);
  assert.ok(list(byNameIn(port, 'bookstore/bookstore-v1'), 'domains').includes('bookstore-v1.bookstore'));
});

test('IPv6 clusterIPs appear bracketed, as in Host headers', () => {
  const svc = {
    namespace: 'ns',
    name: 'v6',
    key: 'ns/v6',
    fqdn: 'v6.ns.svc.cluster.local',
    clusterIP: 'fd00::10',
    ports: [],
    selector: {},
  };
  assert.deepEqual(serviceDomains(svc, 80, 'ns'), [
    'v6',
    'v6:80',
    'v6.ns',
    'v6.ns:80',
    'v6.ns.svc',
    'v6.ns.svc:80',
    'v6.ns.svc.cluster.local',
    'v6.ns.svc.cluster.local:80',
    '[fd00::10]',
    '[fd00::10]:80',
  ]);
});
