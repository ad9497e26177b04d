import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bookstoreMesh, fakeSecrets, proxyFor } from '../../../test/support/envoy/mesh.js';
import { resourceProblems } from '../../../test/support/envoy/roundtrip.js';
import { TypeUrl } from '../types.js';
import { edsGenerator, parseUpstreamClusterName } from './eds.js';

const mesh = bookstoreMesh();
const ctx = { mesh, secrets: fakeSecrets('all') };
const proxy = proxyFor(mesh, 'bookbuyer-1');

test('parses upstream cluster names and rejects others', () => {
  assert.deepEqual(parseUpstreamClusterName('bookstore/bookstore-v1|14001'), {
    serviceKey: 'bookstore/bookstore-v1',
    port: 14001,
  });
  for (const bad of ['bookstore/bookstore-v1|14001|local', 'passthrough-outbound', 'a|1', 'a/b|0', 'a/b|x']) {
    assert.equal(parseUpstreamClusterName(bad), undefined, bad);
  }
});

test('one CLA per known requested cluster, one weighted locality, healthy endpoints', () => {
  const requested = new Set([
    'bookstore/bookstore-v1|14001',
    'bookwarehouse/bookwarehouse|3306',
    'bookstore/nope|14001',
    'bookstore/bookstore-v1|9999',
    'garbage',
  ]);
  const out = edsGenerator.generate(proxy, ctx, requested);
  assert.deepEqual(
    out.map((r) => r.name),
    ['bookstore/bookstore-v1|14001', 'bookwarehouse/bookwarehouse|3306'],
  );
  assert.ok(out.every((r) => r.typeUrl === TypeUrl.ClusterLoadAssignment));
  assert.deepEqual(out[0]?.message, {
    cluster_name: 'bookstore/bookstore-v1|14001',
    endpoints: [
      {
        locality: {},
        load_balancing_weight: { value: 1 },
        lb_endpoints: [
          {
            endpoint: { address: { socket_address: { address: '10.244.1.10', port_value: 14001 } } },
            health_status: 1,
          },
          {
            endpoint: { address: { socket_address: { address: '10.244.1.11', port_value: 14001 } } },
            health_status: 1,
          },
        ],
      },
    ],
  });
  // The TCP port's endpoints use the target port, not the service port.
  assert.match(JSON.stringify(out[1]?.message), /"port_value":13306/);
  assert.deepEqual(resourceProblems(out), []);
});

test('no wildcard for EDS: undefined requested gives nothing', () => {
  assert.deepEqual(edsGenerator.generate(proxy, ctx, undefined), []);
});
