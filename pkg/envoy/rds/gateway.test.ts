import assert from 'node:assert/strict';
import { test } from 'node:test';
import { gatewayContext, gatewayObjects, gatewayProxy } from '../../../test/support/envoy/gateway.js';
import { storeOf, viewOf } from '../../../test/support/envoy/mesh.js';
import { at, byNameIn, isProtoObject, list, named } from '../../../test/support/envoy/pick.js';
import type { ProtoObject, ProtoValue } from '../types.js';
import { gatewayRdsGenerator } from './gateway.js';

const SHOP = 'bookstore/shop-tls';
const WAREHOUSE = 'bookwarehouse/warehouse-tls';

function rds(opts: { permissive?: boolean; servable?: readonly string[] } = {}) {
  const mesh = viewOf(storeOf(gatewayObjects({ permissive: opts.permissive ?? false })));
  return gatewayRdsGenerator.generate(
    gatewayProxy(mesh),
    gatewayContext(mesh, opts.servable ?? []),
    new Set(['gateway-http', 'gateway-https']),
  );
}

function host(config: ProtoObject, name: string): ProtoObject {
  return byNameIn(list(config, 'virtual_hosts'), name);
}

function routes(config: ProtoObject, name: string): ProtoValue[] {
  return list(host(config, name), 'routes');
}

/** The `:authority` regex a wildcard host's routes carry. */
function authorityRegex(route: ProtoValue | undefined): RegExp {
  const headers = list(route, 'match', 'headers');
  assert.equal(headers.length, 1);
  assert.equal(at(headers[0], 'name'), ':authority');
  const re = at(headers[0], 'string_match', 'safe_regex', 'regex');
  assert.equal(typeof re, 'string');
  return new RegExp(String(re));
}

test('both route configurations, one virtual host per Ingress host, `*` last', () => {
  const out = rds();
  assert.deepEqual(
    out.map((r) => r.name),
    ['gateway-http', 'gateway-https'],
  );
  for (const r of out) {
    const hosts = list(r.message, 'virtual_hosts');
    assert.deepEqual(
      hosts.map((h) => [at(h, 'name'), at(h, 'domains')]),
      [
        ['*.shop.example.com', ['*.shop.example.com']],
        ['shop.example.com', ['shop.example.com']],
        ['warehouse.example.com', ['warehouse.example.com']],
        ['*', ['*']],
      ],
    );
  }
});

test('matches: Exact is `path`, Prefix is element-wise `path_separated_prefix`, `/` is every path', () => {
  const http = named(rds(), 'gateway-http');
  const shop = routes(http, 'shop.example.com');
  // Longest first; Exact before Prefix would apply at equal length.
  assert.deepEqual(
    shop.map((r) => at(r, 'match')),
    [{ path: '/about' }, { path_separated_prefix: '/books' }],
  );
  assert.deepEqual(at(routes(http, '*')[0], 'match'), { path_separated_prefix: '/status' });
  assert.deepEqual(at(routes(http, 'warehouse.example.com')[0], 'match'), { prefix: '/' });
});

test('a wildcard host matches exactly one DNS label (Envoy alone would match any depth)', () => {
  const wild = routes(named(rds(), 'gateway-http'), '*.shop.example.com');
  assert.equal(at(wild[0], 'match', 'prefix'), '/');
  const re = authorityRegex(wild[0]);
  assert.ok(re.test('a.shop.example.com'));
  assert.ok(re.test('x-1.shop.example.com'));
  assert.ok(!re.test('a.b.shop.example.com'), 'two labels');
  assert.ok(!re.test('shop.example.com'), 'no label');
  assert.ok(!re.test('ashop.example.com'), 'the dot is literal');
  assert.ok(!re.test('a.shop.example.com.evil.test'), 'anchored');
  // Exact hosts need no header match.
  assert.equal(
    at(routes(named(rds(), 'gateway-http'), 'shop.example.com')[0], 'match', 'headers'),
    undefined,
  );
});

test('SMI mode: a backend no TrafficTarget lets the gateway call answers 403 saying so; an allowed one routes', () => {
  for (const config of rds()) {
    const [denied] = routes(config.message, 'warehouse.example.com');
    assert.equal(at(denied, 'route'), undefined);
    assert.equal(at(denied, 'direct_response', 'status'), 403);
    assert.match(
      String(at(denied, 'direct_response', 'body', 'inline_string')),
      /no TrafficTarget allows the gateway \(skein-system\/skein-ingress-gateway\) to call bookwarehouse\/bookwarehouse \(Ingress bookwarehouse\/warehouse\)/,
    );
    const books = routes(config.message, 'shop.example.com')[1];
    assert.deepEqual(at(books, 'route'), { cluster: 'bookstore/bookstore-v1|14001' });
    assert.equal(at(books, 'direct_response'), undefined);
  }
});

test('permissive mode: every backend routes to its cluster (gRPC without a route timeout)', () => {
  const http = named(rds({ permissive: true }), 'gateway-http');
  const [wh] = routes(http, 'warehouse.example.com');
  assert.equal(at(wh, 'direct_response'), undefined);
  assert.deepEqual(at(wh, 'route'), {
    cluster: 'bookwarehouse/bookwarehouse|14001',
    timeout: { seconds: 0 },
  });
});

test('a TrafficSplit apex is weighted clusters over its backends', () => {
  for (const permissive of [false, true]) {
    const http = named(rds({ permissive }), 'gateway-http');
    const expected = {
      weighted_clusters: {
        clusters: [
          { name: 'bookstore/bookstore-v1|14001', weight: { value: 75 } },
          { name: 'bookstore/bookstore-v2|14001', weight: { value: 25 } },
        ],
      },
    };
    assert.deepEqual(at(routes(http, 'shop.example.com')[0], 'route'), expected);
    assert.deepEqual(at(routes(http, '*.shop.example.com')[0], 'route'), expected);
  }
});

test('require_tls (redirect to https) on the plaintext config only, for hosts whose Secret is servable', () => {
  const requireTls = (servable: readonly string[]) =>
    rds({ servable }).map((r) =>
      list(r.message, 'virtual_hosts')
        .filter((h) => isProtoObject(h) && h['require_tls'] !== undefined)
        .map((h) => `${String(at(h, 'name'))}=${String(at(h, 'require_tls'))}`),
    );
  // 2: VirtualHost.TlsRequirementType ALL.
  assert.deepEqual(requireTls([]), [[], []]);
  assert.deepEqual(requireTls([SHOP]), [['*.shop.example.com=2', 'shop.example.com=2'], []]);
  assert.deepEqual(requireTls([SHOP, WAREHOUSE]), [
    ['*.shop.example.com=2', 'shop.example.com=2', 'warehouse.example.com=2'],
    [],
  ]);
  // The routes themselves do not change with TLS.
  const [plain] = rds();
  const [withTls] = rds({ servable: [SHOP] });
  assert.ok(plain && withTls);
  assert.deepEqual(routes(withTls.message, 'shop.example.com'), routes(plain.message, 'shop.example.com'));
});

test('only the gateway kind gets these route configurations', () => {
  const mesh = viewOf(storeOf(gatewayObjects()));
  const sidecar = { ...gatewayProxy(mesh) };
  sidecar.identity = { ...sidecar.identity, kind: 'sidecar' };
  assert.deepEqual(gatewayRdsGenerator.generate(sidecar, gatewayContext(mesh, [SHOP]), undefined), []);
});
