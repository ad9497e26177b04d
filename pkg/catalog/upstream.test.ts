import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { UpstreamTrafficSetting, UpstreamTrafficSettingSpec } from '../model/objects.js';
import { validateManifest } from '../registry/validate.js';
import { ProblemList } from './problems.js';
import { compileUpstreamSettings, upstreamTrafficSettingProblems } from './upstream.js';

function uts(ns: string, name: string, spec: UpstreamTrafficSettingSpec): UpstreamTrafficSetting {
  return {
    apiVersion: 'policy.skein.dev/v1alpha1',
    kind: 'UpstreamTrafficSetting',
    metadata: { namespace: ns, name },
    spec,
  };
}

const HOST = 'bookstore.shop.svc.cluster.local';

test('compiles every field to numbers (durations in ms), absent fields left out', () => {
  const problems = new ProblemList();
  const out = compileUpstreamSettings(
    [
      uts('shop', 'a', {
        host: HOST,
        connectionSettings: {
          tcp: { maxConnections: 10, connectTimeout: '250ms' },
          http: { maxRequests: 5, maxPendingRequests: 2, maxRetries: 1, maxRequestsPerConnection: 100 },
        },
        outlierDetection: {
          consecutive5xx: 3,
          interval: '1s',
          baseEjectionTime: '1m',
          maxEjectionPercent: 50,
        },
        loadBalancer: { policy: 'LeastRequest', choiceCount: 3 },
        requestTimeout: '1.5s',
      }),
    ],
    () => true,
    problems,
  );
  assert.deepEqual(problems.items, []);
  assert.deepEqual(out.get('shop/bookstore'), {
    origin: 'UpstreamTrafficSetting shop/a',
    connectTimeoutMs: 250,
    maxConnections: 10,
    maxRequestsPerConnection: 100,
    maxPendingRequests: 2,
    maxRequests: 5,
    maxRetries: 1,
    outlierDetection: {
      consecutive5xx: 3,
      intervalMs: 1000,
      baseEjectionTimeMs: 60_000,
      maxEjectionPercent: 50,
    },
    loadBalancer: { policy: 'LeastRequest', choiceCount: 3 },
    requestTimeoutMs: 1500,
  });
});

test('two settings for one host: the first by namespace/name wins, the other is reported', () => {
  const problems = new ProblemList();
  const out = compileUpstreamSettings(
    [
      uts('shop', 'zeta', { host: HOST, requestTimeout: '9s' }),
      uts('shop', 'alpha', { host: HOST, requestTimeout: '1s' }),
    ],
    () => true,
    problems,
  );
  assert.equal(out.get('shop/bookstore')?.origin, 'UpstreamTrafficSetting shop/alpha');
  assert.equal(out.get('shop/bookstore')?.requestTimeoutMs, 1000);
  assert.deepEqual(problems.items, [
    {
      kind: 'UpstreamTrafficSetting',
      namespace: 'shop',
      name: 'zeta',
      reason:
        'spec.host bookstore.shop.svc.cluster.local is also set by UpstreamTrafficSetting shop/alpha, which applies (the first by namespace/name wins); this one is ignored',
    },
  ]);
});

test('a setting for a missing service is reported and kept for when it appears', () => {
  const problems = new ProblemList();
  const out = compileUpstreamSettings([uts('shop', 'a', { host: HOST })], () => false, problems);
  assert.ok(out.has('shop/bookstore'));
  assert.match(problems.items[0]?.reason ?? '', /no such Service/);
});

test('semantic problems: host form and namespace, bad durations, choiceCount without LeastRequest', () => {
  assert.deepEqual(upstreamTrafficSettingProblems(uts('shop', 'a', { host: 'bookstore' })), [
    'spec.host: "bookstore" is not <service>.<namespace>.svc.cluster.local',
  ]);
  assert.deepEqual(upstreamTrafficSettingProblems(uts('other', 'a', { host: HOST })), [
    'spec.host: "bookstore.shop.svc.cluster.local" is in namespace shop; an UpstreamTrafficSetting must live in its service\'s namespace (other)',
  ]);
  assert.deepEqual(
    upstreamTrafficSettingProblems(
      uts('shop', 'a', {
        host: HOST,
        connectionSettings: { tcp: { connectTimeout: '0' } },
        outlierDetection: { interval: 'soon' },
        requestTimeout: '-1s',
        loadBalancer: { policy: 'RoundRobin', choiceCount: 2 },
      }),
    ),
    [
      'spec.connectionSettings.tcp.connectTimeout: must be longer than 0',
      'spec.outlierDetection.interval: invalid duration "soon" (expected e.g. "90s", "1h30m", "250ms")',
      'spec.requestTimeout: invalid duration "-1s" (expected e.g. "90s", "1h30m", "250ms")',
      'spec.loadBalancer.choiceCount: only meaningful with policy LeastRequest (not RoundRobin)',
    ],
  );
});

test('the registry refuses negative numbers (CRD schema) and bad durations, with the field named', () => {
  const neg = validateManifest(
    uts('shop', 'a', { host: HOST, connectionSettings: { http: { maxRequests: -1 } } }),
  );
  assert.equal(neg.ok, false);
  assert.match(neg.ok ? '' : neg.reason, /maxRequests/);
  const bad = validateManifest(uts('shop', 'a', { host: HOST, requestTimeout: '5 seconds' }));
  assert.equal(bad.ok, false);
  assert.match(bad.ok ? '' : bad.reason, /spec\.requestTimeout: invalid duration/);
  const lb = validateManifest({
    ...uts('shop', 'a', { host: HOST }),
    spec: { host: HOST, loadBalancer: { policy: 'Random' } },
  });
  assert.equal(lb.ok, false);
  assert.ok(validateManifest(uts('shop', 'a', { host: HOST, requestTimeout: '2s' })).ok);
});
