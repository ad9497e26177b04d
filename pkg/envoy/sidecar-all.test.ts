// Every sidecar resource of every type, for every pod of the bookstore mesh in
// every mode of bookstoreVariants, survives the Envoy protos unchanged and resolves
// every reference, when fetched the way Envoy subscribes (LDS/CDS wildcard,
// then RDS/EDS/SDS by the names they reference).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { crossReferenceProblems } from '../../test/support/envoy/crossref.js';
import { fetchSidecarConfig } from '../../test/support/envoy/fetch.js';
import {
  bookstoreMesh,
  bookstoreVariants,
  fakeSecrets,
  overrideView,
  POD_NAMES,
  proxyFor,
} from '../../test/support/envoy/mesh.js';
import { resourceProblems } from '../../test/support/envoy/roundtrip.js';
import type { SecretSource } from '../certificate/types.js';
import type { Resource } from './types.js';

test('every resource of every pod round-trips and resolves every reference', () => {
  let total = 0;
  for (const [mode, mesh] of bookstoreVariants()) {
    const ctx = { mesh, secrets: fakeSecrets('all') };
    for (const pod of POD_NAMES) {
      const proxy = proxyFor(mesh, pod);
      const res = fetchSidecarConfig(proxy, ctx);
      const all: Resource[] = [
        ...res.listeners,
        ...res.routes,
        ...res.clusters,
        ...res.endpoints,
        ...res.secrets,
      ];
      total += all.length;
      const where = `${mode} ${pod}`;
      assert.deepEqual(resourceProblems(all), [], where);
      assert.deepEqual(crossReferenceProblems(res), [], where);
    }
  }
  assert.ok(total > 50, `only ${total} resources generated`);
});

test('the cross-reference checker reports dangling names', () => {
  const mesh = bookstoreMesh();
  const ctx = { mesh, secrets: fakeSecrets('all') };
  const res = fetchSidecarConfig(proxyFor(mesh, 'bookbuyer-1'), ctx);
  const noRoutes = crossReferenceProblems({ ...res, routes: [] });
  assert.deepEqual(noRoutes, [
    'route config rds-outbound.14001.bookstore/bookstore is referenced but not served',
    'route config rds-outbound.14001.bookstore/bookstore-v1 is referenced but not served',
  ]);
  const [firstCluster, ...otherClusters] = res.clusters;
  assert.deepEqual(crossReferenceProblems({ ...res, clusters: otherClusters }), [
    `cluster ${firstCluster?.name} is referenced but not served`,
  ]);
  const [firstCla, ...otherClas] = res.endpoints;
  assert.deepEqual(crossReferenceProblems({ ...res, endpoints: otherClas }), [
    `EDS cluster ${firstCla?.name} has no ClusterLoadAssignment`,
  ]);
  const [firstSecret, ...otherSecrets] = res.secrets;
  assert.deepEqual(crossReferenceProblems({ ...res, secrets: otherSecrets }), [
    `secret ${firstSecret?.name} is referenced but not served`,
  ]);
  const [secondCluster, ...restClusters] = otherClusters;
  assert.ok(firstCluster && secondCluster);
  assert.deepEqual(
    crossReferenceProblems({ ...res, clusters: [secondCluster, firstCluster, ...restClusters] }),
    [`CDS: ${firstCluster.name} out of order (generators sort by name)`],
  );
});

test('with no certificate issued yet, only the service-cert secret is missing', () => {
  const mesh = bookstoreMesh();
  const none: SecretSource = fakeSecrets([]);
  const res = fetchSidecarConfig(proxyFor(mesh, 'bookstore-v1-1'), { mesh, secrets: none });
  assert.deepEqual(crossReferenceProblems(res), ['secret service-cert:self is referenced but not served']);
});

test('the five generators share one outbound computation per proxy identity and view', () => {
  const real = bookstoreMesh();
  let outboundCalls = 0;
  const mesh = overrideView(real, {
    outboundServices: (source) => {
      outboundCalls++;
      return real.outboundServices(source);
    },
  });
  const ctx = { mesh, secrets: fakeSecrets('all') };
  fetchSidecarConfig(proxyFor(mesh, 'bookbuyer-1'), ctx);
  fetchSidecarConfig(proxyFor(mesh, 'bookbuyer-1'), ctx);
  assert.equal(outboundCalls, 1);
});
