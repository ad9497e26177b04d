import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fetchSidecarConfig } from '../../../test/support/envoy/fetch.js';
import { ingressObjects } from '../../../test/support/envoy/ingress.js';
import {
  bookstoreObjects,
  generationContext,
  proxyFor,
  storeOf,
  viewOf,
} from '../../../test/support/envoy/mesh.js';
import { at, byNameIn, list, named, names } from '../../../test/support/envoy/pick.js';
import { upstreamSetting } from '../../../test/support/envoy/upstream.js';
import { policyProblems } from '../../catalog/view.js';
import type { AnyObject } from '../../model/objects.js';
import type { ProtoValue, Resource } from '../types.js';

const setting = upstreamSetting;

const STORE = setting('bookstore', 'bookstore-v1', {
  rateLimit: {
    local: {
      tcp: { connections: 5, unit: 'second', burst: 1 },
      http: {
        requests: 10,
        unit: 'minute',
        burst: 2,
        responseStatusCode: 503,
        responseHeadersToAdd: [{ name: 'x-skein-limited', value: 'yes' }],
      },
    },
  },
  httpRoutes: [
    { path: '/books-bought', rateLimit: { local: { requests: 1, unit: 'hour' } } },
    { path: '/cars', rateLimit: { local: { requests: 1, unit: 'hour' } } },
  ],
});
const WAREHOUSE = setting('bookwarehouse', 'bookwarehouse', {
  rateLimit: { local: { tcp: { connections: 3, unit: 'minute' } } },
});

function inbound(objects: readonly AnyObject[], pod: 'bookstore-v1-1' | 'bookwarehouse-1') {
  const mesh = viewOf(storeOf(objects));
  const s = fetchSidecarConfig(proxyFor(mesh, pod), generationContext(mesh));
  return { mesh, listener: named(s.listeners, 'inbound-listener'), routes: s.routes };
}

const filterNames = (chain: ProtoValue) => names(list(chain, 'filters'));

test("the destination's inbound chain: connection bucket before the HCM, HTTP filter after RBAC; buckets on the vhost and routes", () => {
  const { mesh, listener, routes } = inbound([...bookstoreObjects(), STORE], 'bookstore-v1-1');
  const chain = byNameIn(list(listener, 'filter_chains'), 'inbound_bookstore/bookstore-v1_14001_http');
  assert.deepEqual(filterNames(chain), [
    'envoy.filters.network.local_ratelimit',
    'envoy.filters.network.http_connection_manager',
  ]);
  assert.deepEqual(at(chain, 'filters', 0, 'typed_config', 'token_bucket'), {
    max_tokens: 6,
    tokens_per_fill: { value: 5 },
    fill_interval: { seconds: 1 },
  });
  assert.deepEqual(names(list(chain, 'filters', 1, 'typed_config', 'http_filters')), [
    'envoy.filters.http.rbac',
    'envoy.filters.http.local_ratelimit',
    'envoy.filters.http.router',
  ]);
  // The apex on the same target port has its own route config, without buckets.
  const apex = byNameIn(list(listener, 'filter_chains'), 'inbound_bookstore/bookstore_14001_http');
  assert.deepEqual(filterNames(apex), ['envoy.filters.network.http_connection_manager']);
  const apexRoutes = named(
    routes,
    String(at(apex, 'filters', 0, 'typed_config', 'rds', 'route_config_name')),
  );
  assert.ok(!JSON.stringify(apexRoutes).includes('token_bucket'));
  const vhost = at(named(routes, 'rds-inbound.14001.bookstore/bookstore-v1'), 'virtual_hosts', 0);
  const rl = at(vhost, 'typed_per_filter_config', 'envoy.filters.http.local_ratelimit');
  assert.deepEqual(at(rl, 'token_bucket'), {
    max_tokens: 12,
    tokens_per_fill: { value: 10 },
    fill_interval: { seconds: 60 },
  });
  assert.deepEqual(at(rl, 'status'), { code: 503 });
  assert.deepEqual(at(rl, 'filter_enforced', 'default_value'), { numerator: 100, denominator: 0 });
  assert.deepEqual(at(rl, 'response_headers_to_add'), [
    { header: { key: 'x-skein-limited', value: 'yes' }, append_action: 2 },
  ]);
  // Each entry is a route ahead of the catch-all, matched like an HTTPRouteGroup path.
  const rs = list(vhost, 'routes');
  assert.equal(rs.length, 3);
  assert.deepEqual(at(rs[0], 'match'), { safe_regex: { regex: '(?:/books-bought).*' } });
  assert.deepEqual(at(rs[0], 'typed_per_filter_config', 'envoy.filters.http.local_ratelimit', 'status'), {
    code: 429,
  });
  assert.deepEqual(at(rs[2], 'match'), { prefix: '/' });
  assert.equal(at(rs[2], 'typed_per_filter_config'), undefined);
  // '/cars' selects no route the TrafficTarget allows: reported on the setting.
  const reported = policyProblems(mesh).filter((p) => p.kind === 'UpstreamTrafficSetting');
  assert.deepEqual(
    reported.map((p) => `${p.namespace}/${p.name}: ${p.reason}`),
    [
      'bookstore/bookstore-v1: spec.httpRoutes[1].path "/cars" matches no route of bookstore/bookstore-v1' +
        ' (HTTPRouteGroup paths allowed there: .*a-book.*new, /books-bought); its limit waits for one',
    ],
  );
});

test('a TCP-only bucket: on every inbound chain of the service, after the network RBAC; no HTTP bucket', () => {
  const { listener, routes } = inbound([...bookstoreObjects(), WAREHOUSE], 'bookwarehouse-1');
  const grpc = byNameIn(list(listener, 'filter_chains'), 'inbound_bookwarehouse/bookwarehouse_14001_grpc');
  assert.deepEqual(filterNames(grpc), [
    'envoy.filters.network.local_ratelimit',
    'envoy.filters.network.http_connection_manager',
  ]);
  // The HTTP filter is there, idle: no bucket in the route config.
  assert.ok(!JSON.stringify(named(routes, 'rds-inbound.14001')).includes('token_bucket'));
  const db = byNameIn(list(listener, 'filter_chains'), 'inbound_bookwarehouse/bookwarehouse_13306_tcp');
  assert.deepEqual(filterNames(db), [
    'envoy.filters.network.rbac',
    'envoy.filters.network.local_ratelimit',
    'envoy.filters.network.tcp_proxy',
  ]);
  assert.equal(
    at(db, 'filters', 1, 'typed_config', 'stat_prefix'),
    'inbound_bookwarehouse/bookwarehouse_13306_tcp',
  );
});

test('adding limits changes no HTTP chain (open connections get them over RDS); callers are unchanged', () => {
  const chainsOf = (objects: readonly AnyObject[]) =>
    list(inbound(objects, 'bookstore-v1-1').listener, 'filter_chains').map((c) => JSON.stringify(c));
  const noTcp = setting('bookstore', 'bookstore-v1', {
    rateLimit: { local: { http: { requests: 1, unit: 'second' } } },
    httpRoutes: [{ path: '/x', rateLimit: { local: { requests: 1, unit: 'second' } } }],
  });
  assert.deepEqual(chainsOf([...bookstoreObjects(), noTcp]), chainsOf(bookstoreObjects()));
  const buyer = (objects: readonly AnyObject[]) => {
    const mesh = viewOf(storeOf(objects));
    return JSON.stringify(fetchSidecarConfig(proxyFor(mesh, 'bookbuyer-1'), generationContext(mesh)));
  };
  assert.equal(buyer([...bookstoreObjects(), STORE]), buyer(bookstoreObjects()));
});

test('traffic from outside the mesh meets the same limits: ingress and permissive plaintext chains', () => {
  const both = setting('bookwarehouse', 'bookwarehouse', {
    rateLimit: { local: { tcp: { connections: 3, unit: 'minute' }, http: { requests: 9, unit: 'second' } } },
    httpRoutes: [{ path: '/skein.Warehouse/Get', rateLimit: { local: { requests: 1, unit: 'second' } } }],
  });
  const check = (chain: ProtoValue, http: boolean, routes: readonly Resource[]) => {
    const filters = filterNames(chain);
    assert.equal(filters[0], 'envoy.filters.network.local_ratelimit', JSON.stringify(filters));
    if (!http) return;
    const hcm = at(chain, 'filters', 1, 'typed_config');
    assert.equal(names(list(hcm, 'http_filters')).at(-2), 'envoy.filters.http.local_ratelimit');
    // Ingress chains get their routes over RDS, permissive plaintext chains inline.
    const rdsName = at(hcm, 'rds', 'route_config_name');
    const config = rdsName === undefined ? at(hcm, 'route_config') : named(routes, String(rdsName));
    const vhost = at(config, 'virtual_hosts', 0);
    assert.equal(
      at(
        vhost,
        'typed_per_filter_config',
        'envoy.filters.http.local_ratelimit',
        'token_bucket',
        'max_tokens',
      ),
      9,
    );
    assert.deepEqual(at(list(vhost, 'routes')[0], 'match'), {
      safe_regex: { regex: '(?:/skein.Warehouse/Get).*' },
    });
  };
  const ingress = inbound([...ingressObjects(), both], 'bookwarehouse-1');
  const ingressChains = list(ingress.listener, 'filter_chains').filter((c) =>
    String(at(c, 'name')).startsWith('ingress_'),
  );
  assert.ok(ingressChains.length > 0);
  for (const c of ingressChains) check(c, true, ingress.routes);
  const permissive = inbound([...bookstoreObjects({ permissive: true }), both], 'bookwarehouse-1');
  const plaintext = (name: string) => byNameIn(list(permissive.listener, 'filter_chains'), name);
  check(plaintext('inbound-plaintext_14001'), true, permissive.routes);
  check(plaintext('inbound-plaintext_13306'), false, permissive.routes);
});

test('permissive mode: an HTTP limit edit changes the plaintext chain’s route config, not the inbound listener', () => {
  const limited = (requests: number) =>
    setting('bookwarehouse', 'bookwarehouse', {
      rateLimit: { local: { http: { requests, unit: 'second' } } },
    });
  const a = inbound([...bookstoreObjects({ permissive: true }), limited(9)], 'bookwarehouse-1');
  const b = inbound([...bookstoreObjects({ permissive: true }), limited(5)], 'bookwarehouse-1');
  const chain = byNameIn(list(a.listener, 'filter_chains'), 'inbound-plaintext_14001');
  assert.equal(
    at(chain, 'filters', 0, 'typed_config', 'rds', 'route_config_name'),
    'rds-inbound-plaintext.14001',
  );
  assert.deepEqual(b.listener, a.listener);
  const bucket = (routes: readonly Resource[]) =>
    at(
      named(routes, 'rds-inbound-plaintext.14001'),
      'virtual_hosts',
      0,
      'typed_per_filter_config',
      'envoy.filters.http.local_ratelimit',
      'token_bucket',
      'max_tokens',
    );
  assert.deepEqual([bucket(a.routes), bucket(b.routes)], [9, 5]);
});
