import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ingressObjects } from '../../test/support/envoy/ingress.js';
import { storeOf } from '../../test/support/envoy/mesh.js';
import { DEFAULT_MESH_NAME } from '../mesh/constants.js';
import { ingressPath, routeAdmits } from './ingress.js';
import { buildMeshView, ingressPorts, policyProblems } from './view.js';

test('Kubernetes pathType: Exact as is, Prefix element-wise without a trailing slash, / is every path', () => {
  assert.deepEqual(ingressPath('Exact', '/foo/'), { type: 'Exact', value: '/foo/' });
  assert.deepEqual(ingressPath('Prefix', '/foo/'), { type: 'Prefix', value: '/foo' });
  assert.equal(ingressPath('Prefix', '/'), undefined);
  assert.equal(ingressPath('Prefix', undefined), undefined);
  // ImplementationSpecific is read as Prefix (docs/policy.md).
  assert.deepEqual(ingressPath('ImplementationSpecific', '/a'), { type: 'Prefix', value: '/a' });
});

test('routeAdmits: exact or one-label wildcard hosts (any case), Exact and element-wise Prefix paths', () => {
  const books = { host: 'shop.example.com', path: ingressPath('Prefix', '/books/') };
  assert.ok(routeAdmits(books, 'Shop.Example.com', '/books'));
  assert.ok(routeAdmits(books, 'shop.example.com', '/books/1'));
  assert.ok(!routeAdmits(books, 'shop.example.com', '/booksx'));
  assert.ok(!routeAdmits(books, 'evil.example.com', '/books'));
  assert.ok(!routeAdmits(books, undefined, '/books'), 'a host rule needs the host');
  const wild = { host: '*.example.com' };
  assert.ok(routeAdmits(wild, 'a.example.com', '/'));
  assert.ok(!routeAdmits(wild, 'a.b.example.com', '/'));
  assert.ok(!routeAdmits(wild, 'example.com', '/'));
  const exact = { path: ingressPath('Exact', '/health') };
  assert.ok(routeAdmits(exact, undefined, '/health'));
  assert.ok(!routeAdmits(exact, undefined, '/health/'));
  assert.ok(routeAdmits({}, undefined, '/anything'));
});

test('IngressBackend matches: the named matches of each group admitted, a name the group lacks reported and admitting nothing', () => {
  const objects = ingressObjects().map((o) =>
    o.kind === 'IngressBackend' && o.metadata.name === 'api'
      ? {
          ...o,
          spec: {
            ...o.spec,
            matches: [
              { kind: 'HTTPRouteGroup' as const, name: 'reads', matches: ['reads', 'writes'] },
              { kind: 'HTTPRouteGroup' as const, name: 'gone' },
            ],
          },
        }
      : o,
  );
  const view = buildMeshView(storeOf(objects), { meshName: DEFAULT_MESH_NAME });
  const policy = ingressPorts(view).get('bookwarehouse/bookwarehouse|14001')?.policies[0];
  assert.deepEqual(policy?.matches, [
    { name: 'reads', pathRegex: '/skein\\.Warehouse/Get.*', methods: ['POST'] },
  ]);
  assert.deepEqual(
    policyProblems(view)
      .filter((p) => p.kind === 'IngressBackend')
      .map((p) => p.reason),
    [
      'HTTPRouteGroup bookwarehouse/reads has no match named "writes"; it admits nothing',
      'HTTPRouteGroup bookwarehouse/gone does not exist; it admits nothing',
    ],
  );
  // No spec.matches: every request admitted ('all'); the other IngressBackend unaffected throughout.
  const plain = buildMeshView(storeOf(ingressObjects()), { meshName: DEFAULT_MESH_NAME });
  assert.equal(ingressPorts(plain).get('bookstore/bookstore-v1|14001')?.policies[0]?.matches, 'all');
  assert.equal(ingressPorts(view).get('bookstore/bookstore-v1|14001')?.policies[0]?.matches, 'all');
});
