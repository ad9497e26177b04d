import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { HashOnSpec, UpstreamTrafficSetting, UpstreamTrafficSettingSpec } from '../model/objects.js';
import { validateManifest } from '../registry/validate.js';
import { compileHashOn, hashOnProblems } from './hash.js';
import { ProblemList } from './problems.js';
import { compileUpstreamSettings } from './upstream.js';

type LoadBalancer = NonNullable<UpstreamTrafficSettingSpec['loadBalancer']>;

const HOST = 'bookstore.shop.svc.cluster.local';

function uts(name: string, loadBalancer: LoadBalancer): UpstreamTrafficSetting {
  return {
    apiVersion: 'policy.skein.dev/v1alpha1',
    kind: 'UpstreamTrafficSetting',
    metadata: { namespace: 'shop', name },
    spec: { host: HOST, loadBalancer },
  };
}

test('compiles keys in order: header names lower-cased, cookie ttl in ms, terminal only when set', () => {
  assert.deepEqual(
    compileHashOn([
      { header: 'X-User', terminal: true },
      { cookie: { name: 'session', ttl: '1h', path: '/' } },
      { cookie: { name: 'plain' } },
      { sourceIP: true, terminal: false },
    ]),
    [
      { header: 'x-user', terminal: true },
      { cookie: 'session', ttlMs: 3_600_000, path: '/' },
      { cookie: 'plain' },
      { sourceIP: true },
    ],
  );
});

test('hashOn with RingHash and Maglev is fine; with another policy it is refused', () => {
  for (const policy of ['RingHash', 'Maglev'] as const)
    assert.deepEqual(hashOnProblems({ policy, hashOn: [{ header: 'x-user' }, { sourceIP: true }] }), []);
  assert.deepEqual(hashOnProblems({ policy: 'RoundRobin' }), []);
  for (const policy of ['RoundRobin', 'LeastRequest'] as const)
    assert.deepEqual(hashOnProblems({ policy, hashOn: [{ header: 'x-user' }] }), [
      `spec.loadBalancer.hashOn: only meaningful with policy RingHash or Maglev (not ${policy})`,
    ]);
});

test('bad keys are reported with their index and field', () => {
  assert.deepEqual(
    hashOnProblems({
      policy: 'RingHash',
      hashOn: [
        { header: 'x user' },
        { header: 'x-a', sourceIP: true },
        {},
        { cookie: { name: 'a=b', ttl: '1500ms', path: 'no-slash' } },
        { cookie: { name: 'c', ttl: 'soon' } },
        { sourceIP: false },
      ],
    }),
    [
      'spec.loadBalancer.hashOn[0].header: "x user" is not an HTTP header name',
      'spec.loadBalancer.hashOn[1]: needs exactly one of header, cookie, sourceIP (has header, sourceIP)',
      'spec.loadBalancer.hashOn[2]: needs exactly one of header, cookie, sourceIP (has none)',
      'spec.loadBalancer.hashOn[3].cookie.name: "a=b" is not a cookie name',
      'spec.loadBalancer.hashOn[3].cookie.path: "no-slash" is not a cookie path (/…, no \';\')',
      "spec.loadBalancer.hashOn[3].cookie.ttl: must be whole seconds (it becomes the cookie's Max-Age)",
      'spec.loadBalancer.hashOn[4].cookie.ttl: invalid duration "soon" (expected e.g. "90s", "1h30m", "250ms")',
      'spec.loadBalancer.hashOn[5].sourceIP: only true is meaningful',
    ],
  );
  assert.deepEqual(hashOnProblems({ policy: 'Maglev', hashOn: [] }), [
    'spec.loadBalancer.hashOn: empty (leave it out to hash nothing)',
  ]);
});

test('the registry refuses a bad hashOn; the catalog reports it and keeps no setting from it', () => {
  const bad = uts('a', { policy: 'LeastRequest', hashOn: [{ header: 'x-user' }] });
  const refused = validateManifest(bad);
  assert.equal(refused.ok, false);
  assert.match(refused.ok ? '' : refused.reason, /hashOn: only meaningful with policy RingHash or Maglev/);
  const good = uts('b', { policy: 'RingHash', hashOn: [{ header: 'X-User' }] });
  assert.ok(validateManifest(good).ok);
  // The CRD schema bounds the list (1 to 8 keys) and refuses misspelt keys.
  const reason = (hashOn: HashOnSpec[]) => {
    const r = validateManifest(uts('c', { policy: 'RingHash', hashOn }));
    return r.ok ? 'ok' : r.reason;
  };
  assert.equal(
    reason(Array.from({ length: 9 }, (_, i) => ({ header: `h${i}` }))),
    'spec.loadBalancer.hashOn: must NOT have more than 8 items',
  );
  assert.equal(reason([]), 'spec.loadBalancer.hashOn: must NOT have fewer than 1 items');
  assert.equal(reason([{ headr: 'x' } as HashOnSpec]), 'spec.loadBalancer.hashOn[0].headr: unknown field');
  const problems = new ProblemList();
  const out = compileUpstreamSettings([bad, good], () => true, problems);
  assert.deepEqual(out.get('shop/bookstore')?.loadBalancer, {
    policy: 'RingHash',
    hashOn: [{ header: 'x-user' }],
  });
  assert.equal(out.get('shop/bookstore')?.origin, 'UpstreamTrafficSetting shop/b');
  assert.deepEqual(
    problems.items.map((p) => `${p.name}: ${p.reason}`),
    ['a: spec.loadBalancer.hashOn: only meaningful with policy RingHash or Maglev (not LeastRequest)'],
  );
});
