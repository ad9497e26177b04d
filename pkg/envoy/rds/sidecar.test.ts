import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { MeshView } from '../../catalog/types.js';
import { bookstoreMesh, fakeSecrets, type PodName, proxyFor, rawSplit } from '../testing/mesh.js';
import { at, byNameIn, list, named, names } from '../testing/pick.js';
import { serviceDomains, sidecarRdsGenerator } from './sidecar.js';

function rds(mesh: MeshView, pod: PodName, requested?: string[]) {
  const req = requested ? new Set(requested) : undefined;
  return sidecarRdsGenerator.generate(proxyFor(mesh, pod), { mesh, secrets: fakeSecrets('all') }, req);
}

test('bookbuyer: the apex splits 75/25 to the backends, bookstore-v1 goes straight to its cluster', () => {
  const config = named(rds(bookstoreMesh(), 'bookbuyer-1'), 'rds-outbound.14001');
  const hosts = list(config, 'virtual_hosts');
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
  // Other namespace: no bare service name (it would not resolve and could collide).
  assert.deepEqual(list(apex, 'domains'), [
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
    const hosts = list(named(rds(zeroV2, 'bookbuyer-1'), 'rds-outbound.14001'), 'virtual_hosts');
    assert.deepEqual(at(byNameIn(hosts, 'bookstore/bookstore'), 'routes', 0, 'route', 'weighted_clusters'), {
      clusters: [{ name: 'bookstore/bookstore-v1|14001', weight: { value: 100 } }],
    });
  }
  for (const allZero of [
    bookstoreMesh({ weights: { v1: 0, v2: 0 } }),
    rawSplit(bookstoreMesh(), { v1: 0 }),
  ]) {
    const hosts2 = list(named(rds(allZero, 'bookbuyer-1'), 'rds-outbound.14001'), 'virtual_hosts');
    assert.deepEqual(at(byNameIn(hosts2, 'bookstore/bookstore'), 'routes', 0, 'route'), {
      cluster: 'bookstore/bookstore|14001',
    });
  }
});

test('same-namespace services get the bare name; gRPC routes disable the route timeout', () => {
  const config = named(rds(bookstoreMesh(), 'bookstore-v1-1'), 'rds-outbound.14001');
  const host = byNameIn(list(config, 'virtual_hosts'), 'bookwarehouse/bookwarehouse');
  assert.deepEqual(list(host, 'domains').slice(0, 2), [
    'bookwarehouse.bookwarehouse',
    'bookwarehouse.bookwarehouse:14001',
  ]);
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
      'rds-outbound.14001',
    ],
  );
  for (const svc of ['bookstore', 'bookstore-v1'])
    assert.deepEqual(list(named(configs, `rds-inbound.14001.bookstore/${svc}`), 'virtual_hosts'), [
      {
        name: 'inbound|14001',
        domains: ['*'],
        routes: [{ match: { prefix: '/' }, route: { cluster: `bookstore/${svc}|14001|local` } }],
      },
    ]);
  // bookwarehouse's TCP port 13306 and outbound mysql (TCP) need no route config.
  assert.deepEqual(
    rds(bookstoreMesh(), 'bookwarehouse-1').map((r) => r.name),
    ['rds-inbound.14001'],
  );
});

test('only requested names are built; bookthief gets nothing in SMI mode', () => {
  assert.deepEqual(
    rds(bookstoreMesh(), 'bookstore-v1-1', ['rds-outbound.14001', 'rds-outbound.1']).map((r) => r.name),
    ['rds-outbound.14001'],
  );
  assert.deepEqual(rds(bookstoreMesh(), 'bookthief-1'), []);
  const permissive = named(rds(bookstoreMesh({ permissive: true }), 'bookthief-1'), 'rds-outbound.14001');
  assert.ok(names(list(permissive, 'virtual_hosts')).includes('bookstore/bookstore'));
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
