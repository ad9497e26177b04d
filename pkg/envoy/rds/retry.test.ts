import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  bookstoreObjects,
  fakeSecrets,
  proxyFor,
  storeOf,
  viewOf,
} from '../../../test/support/envoy/mesh.js';
import { at, byNameIn, list, named, outboundHosts } from '../../../test/support/envoy/pick.js';
import { bookbuyerRetries, retry } from '../../../test/support/envoy/retry.js';
import { buildMeshView, policyProblems } from '../../catalog/view.js';
import { DEFAULT_MESH_NAME } from '../../mesh/constants.js';
import { sidecarCdsGenerator } from '../cds/sidecar.js';
import { sidecarRdsGenerator } from './sidecar.js';

const ctx = (mesh: ReturnType<typeof viewOf>) => ({ mesh, secrets: fakeSecrets('all') });
const rds = (mesh: ReturnType<typeof viewOf>, pod: 'bookbuyer-1' | 'bookthief-1') =>
  sidecarRdsGenerator.generate(proxyFor(mesh, pod), ctx(mesh), undefined);
const cds = (mesh: ReturnType<typeof viewOf>, pod: 'bookbuyer-1' | 'bookthief-1') =>
  sidecarCdsGenerator.generate(proxyFor(mesh, pod), ctx(mesh), undefined);

test("a Retry puts retry_policy on the source's routes to its destinations and a retry budget on their clusters", () => {
  const mesh = viewOf(storeOf([...bookstoreObjects(), ...bookbuyerRetries()]));
  const hosts = outboundHosts(rds(mesh, 'bookbuyer-1'), 14001);
  const expected = {
    retry_on: '5xx,reset,retriable-status-codes,unavailable',
    num_retries: { value: 3 },
    retry_host_predicate: [
      {
        name: 'envoy.retry_host_predicates.previous_hosts',
        typed_config: {
          '@type': 'type.googleapis.com/envoy.extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate',
        },
      },
    ],
    host_selection_retry_max_attempts: 3,
    per_try_timeout: { seconds: 0, nanos: 250_000_000 },
    retry_back_off: {
      base_interval: { seconds: 0, nanos: 10_000_000 },
      max_interval: { seconds: 0, nanos: 100_000_000 },
    },
    retriable_status_codes: [409],
  };
  for (const vh of ['bookstore/bookstore', 'bookstore/bookstore-v1'])
    assert.deepEqual(at(byNameIn(hosts, vh), 'routes', 0, 'route', 'retry_policy'), expected, vh);
  const clusters = cds(mesh, 'bookbuyer-1');
  assert.deepEqual(at(named(clusters, 'bookstore/bookstore-v1|14001'), 'circuit_breakers'), {
    thresholds: [{ retry_budget: { budget_percent: { value: 20 }, min_retry_concurrency: { value: 2 } } }],
  });
  // bookstore-v2 is not named: no budget (the apex's Retry is a route setting).
  assert.equal(at(named(clusters, 'bookstore/bookstore-v2|14001'), 'circuit_breakers'), undefined);
  assert.deepEqual(policyProblems(mesh), []);
});

test('without a Retry, and for other sources, there is no retry_policy', () => {
  for (const mesh of [
    viewOf(storeOf(bookstoreObjects())),
    viewOf(storeOf([...bookstoreObjects(), ...bookbuyerRetries()])),
  ]) {
    for (const r of rds(mesh, 'bookthief-1'))
      for (const vh of list(r.message, 'virtual_hosts'))
        assert.equal(at(vh, 'routes', 0, 'route', 'retry_policy'), undefined);
  }
  const plain = viewOf(storeOf(bookstoreObjects()));
  const vh = byNameIn(outboundHosts(rds(plain, 'bookbuyer-1'), 14001), 'bookstore/bookstore');
  assert.equal(at(vh, 'routes', 0, 'route', 'retry_policy'), undefined);
});

test('messages stay the same objects while the Retry is unchanged, and change when it does', () => {
  const store = storeOf([...bookstoreObjects(), ...bookbuyerRetries()]);
  const v1 = buildMeshView(store, { meshName: DEFAULT_MESH_NAME });
  const V1 = 'rds-outbound.14001.bookstore/bookstore-v1';
  const r1 = named(rds(v1, 'bookbuyer-1'), V1);
  const c1 = named(cds(v1, 'bookbuyer-1'), 'bookstore/bookstore-v1|14001');
  // An unrelated change (another source's Retry) and an equal rewrite of the same Retry.
  store.upsert(retry('bookthief', 'other', 'bookthief', ['bookstore/bookstore'], { retryOn: 'reset' }));
  const [same] = bookbuyerRetries();
  if (same) store.upsert(structuredClone(same));
  const v2 = buildMeshView(store, { meshName: DEFAULT_MESH_NAME, previous: v1 });
  assert.notEqual(v2, v1);
  assert.equal(named(rds(v2, 'bookbuyer-1'), V1), r1);
  assert.equal(named(cds(v2, 'bookbuyer-1'), 'bookstore/bookstore-v1|14001'), c1);
  store.upsert(
    retry('bookbuyer', 'to-bookstore', 'bookbuyer', ['bookstore/bookstore-v1'], {
      retryOn: '5xx',
      numRetries: 9,
    }),
  );
  const v3 = buildMeshView(store, { meshName: DEFAULT_MESH_NAME, previous: v2 });
  const r3 = named(rds(v3, 'bookbuyer-1'), V1);
  assert.notEqual(r3, r1);
  assert.deepEqual(
    at(byNameIn(list(r3, 'virtual_hosts'), 'bookstore/bookstore-v1'), 'routes', 0, 'route', 'retry_policy'),
    {
      retry_on: '5xx',
      num_retries: { value: 9 },
      retry_host_predicate: [
        {
          name: 'envoy.retry_host_predicates.previous_hosts',
          typed_config: {
            '@type':
              'type.googleapis.com/envoy.extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate',
          },
        },
      ],
      host_selection_retry_max_attempts: 3,
    },
  );
  assert.notEqual(named(cds(v3, 'bookbuyer-1'), 'bookstore/bookstore-v1|14001'), c1);
});
