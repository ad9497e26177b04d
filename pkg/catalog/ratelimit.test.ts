import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { UpstreamTrafficSetting, UpstreamTrafficSettingSpec } from '../model/objects.js';
import { validateManifest } from '../registry/validate.js';
import { compileLocalRateLimits, rateLimitProblems, routeSelects, unmatchedRoutes } from './ratelimit.js';
import type { InboundRule, MeshService } from './types.js';

const HOST = 'bookstore.shop.svc.cluster.local';
const spec = (extra: Partial<UpstreamTrafficSettingSpec>): UpstreamTrafficSettingSpec => ({
  host: HOST,
  ...extra,
});

test('compiles OSM token buckets: bucket = rate + burst, refilled with the rate every unit; 429 by default', () => {
  const out = compileLocalRateLimits(
    spec({
      rateLimit: {
        local: {
          tcp: { connections: 5, unit: 'minute', burst: 2 },
          http: { requests: 10, unit: 'second', responseHeadersToAdd: [{ name: 'x-limited', value: 'yes' }] },
        },
      },
      httpRoutes: [
        { path: '/books', rateLimit: { local: { requests: 1, unit: 'hour', responseStatusCode: 503 } } },
      ],
    }),
  );
  assert.deepEqual(out, {
    tcp: { maxTokens: 7, tokensPerFill: 5, fillSeconds: 60 },
    http: {
      bucket: { maxTokens: 10, tokensPerFill: 10, fillSeconds: 1 },
      statusCode: 429,
      headers: [{ name: 'x-limited', value: 'yes' }],
    },
    routes: [
      {
        path: '/books',
        limit: {
          bucket: { maxTokens: 1, tokensPerFill: 1, fillSeconds: 3600 },
          statusCode: 503,
          headers: [],
        },
      },
    ],
  });
  assert.equal(compileLocalRateLimits(spec({})), undefined);
});

test('refuses what Envoy would NACK, naming the field', () => {
  const problems = rateLimitProblems(
    spec({
      rateLimit: {
        local: {
          tcp: { connections: 4294967295, unit: 'second', burst: 1 },
          http: {
            requests: 1,
            unit: 'second',
            responseStatusCode: 418,
            responseHeadersToAdd: [
              { name: ':status', value: 'x' },
              { name: 'ok', value: 'a\r\nb' },
            ],
          },
        },
      },
      httpRoutes: [
        { path: '(a)\\1', rateLimit: { local: { requests: 1, unit: 'second' } } },
        { path: '/x' },
        { path: '/x', rateLimit: { local: { requests: 0, unit: 'second' } } },
      ],
    }),
  );
  assert.deepEqual(problems, [
    'spec.rateLimit.local.tcp.connections + burst: the bucket (rate + burst) must be a whole number up to 4294967295',
    'spec.rateLimit.local.http.responseStatusCode: 418 is not a 4xx/5xx status Envoy knows (envoy.type.v3.StatusCode)',
    'spec.rateLimit.local.http.responseHeadersToAdd[0].name: ":status" is not an HTTP header name',
    'spec.rateLimit.local.http.responseHeadersToAdd[1].value: control characters are not allowed',
    'spec.httpRoutes[0].path: backreferences are not supported (RE2)',
    'spec.httpRoutes[1].rateLimit.local: required (a route entry without a limit does nothing)',
    'spec.httpRoutes[2].path: "/x" is listed twice',
    'spec.httpRoutes[2].rateLimit.local.requests: must be a whole number from 1 to 4294967295',
  ]);
});

test('the CRD schema refuses a status outside 400-599 and more than 10 headers; the registry refuses the rest', () => {
  const obj = (s: UpstreamTrafficSettingSpec): UpstreamTrafficSetting => ({
    apiVersion: 'policy.skein.dev/v1alpha1',
    kind: 'UpstreamTrafficSetting',
    metadata: { namespace: 'shop', name: 'a' },
    spec: s,
  });
  const http = { requests: 1, unit: 'second' as const };
  const tooMany = Array.from({ length: 11 }, (_, i) => ({ name: `h${i}`, value: 'v' }));
  for (const bad of [
    spec({ rateLimit: { local: { http: { ...http, responseStatusCode: 200 } } } }),
    spec({ rateLimit: { local: { http: { ...http, responseHeadersToAdd: tooMany } } } }),
    spec({ rateLimit: { local: { tcp: { connections: 1, unit: 'day' as 'hour' } } } }),
    spec({ httpRoutes: [{ path: '/x' }] }),
    spec({ rateLimit: { local: { http: { ...http, responseStatusCode: 499 } } } }),
  ]) {
    const r = validateManifest(obj(bad));
    assert.equal(r.ok, false, JSON.stringify(bad));
  }
  const good = validateManifest(
    obj(
      spec({
        rateLimit: { local: { tcp: { connections: 1, unit: 'second' }, http } },
        httpRoutes: [{ path: '/x', rateLimit: { local: { ...http, responseStatusCode: 503 } } }],
      }),
    ),
  );
  assert.equal(good.ok, true, good.ok ? '' : good.reason);
});

test('routeSelects: the HTTPRouteGroup regex admits the path (OSM needed the same string); the same string still selects', () => {
  const m = (pathRegex?: string) => ({ name: 'm', pathRegex });
  assert.equal(routeSelects(m('/books/.*'), '/books/1'), true);
  assert.equal(routeSelects(m('/books/.*'), '/books/.*'), true);
  assert.equal(routeSelects(m('^/books/[0-9]+'), '/books/[0-9]+'), true);
  assert.equal(routeSelects(m('/books/[0-9]+'), '/books/12'), true);
  assert.equal(routeSelects(m('/books/[0-9]+'), '/books/abc'), false);
  assert.equal(routeSelects(m('/books'), '/cars'), false);
  assert.equal(routeSelects(m(undefined), '/anything'), true);
  assert.equal(routeSelects(m('.*'), '/anything'), true);
  // An entry for every path selects only a route for every path.
  assert.equal(routeSelects(m('/books'), '.*'), false);
});

test('unmatchedRoutes: reported per entry, with the paths that are allowed; permissive and TCPRoute rules select all', () => {
  const svc: MeshService = {
    namespace: 'shop',
    name: 'bookstore',
    key: 'shop/bookstore',
    fqdn: HOST,
    ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'http' }],
    selector: {},
  };
  const limit = { bucket: { maxTokens: 1, tokensPerFill: 1, fillSeconds: 1 }, statusCode: 429, headers: [] };
  const routes = [
    { path: '/books/1', limit },
    { path: '/cars', limit },
  ];
  const smi: InboundRule[] = [
    { sources: [], http: [{ name: 'b', pathRegex: '/books/.*' }], origin: 'TrafficTarget x' },
  ];
  assert.deepEqual(
    unmatchedRoutes(svc, routes, () => smi),
    [
      'spec.httpRoutes[1].path "/cars" matches no route of shop/bookstore (HTTPRouteGroup paths allowed there: /books/.*); its limit waits for one',
    ],
  );
  const all: InboundRule[] = [{ sources: 'any', http: 'all', origin: 'permissive' }];
  assert.deepEqual(
    unmatchedRoutes(svc, routes, () => all),
    [],
  );
  const tcpOnly: MeshService = { ...svc, ports: [{ name: 'tcp', port: 9, targetPort: 9, protocol: 'tcp' }] };
  assert.deepEqual(
    unmatchedRoutes(tcpOnly, routes, () => all),
    ['spec.httpRoutes: shop/bookstore has no HTTP or gRPC port'],
  );
});
