import assert from 'node:assert/strict';
import { test } from 'node:test';
import { roundTripProblems } from '../../test/support/envoy/roundtrip.js';
import { TypeUrl } from './types.js';

const cluster = {
  name: 'ns/svc|80',
  type: 3,
  connect_timeout: { seconds: 1 },
  eds_cluster_config: { eds_config: { ads: {}, resource_api_version: 2 } },
};

test('a well-formed cluster has no problems', () => {
  assert.deepEqual(roundTripProblems(TypeUrl.Cluster, cluster), []);
});

test('catches a misspelled field that protobufjs would silently drop', () => {
  const problems = roundTripProblems(TypeUrl.Cluster, { ...cluster, conect_timeout: { seconds: 1 } });
  assert.ok(
    problems.some((p) => p.includes('conect_timeout: no such field')),
    problems.join('\n'),
  );
});

test('catches a misspelled field inside an Any', () => {
  const problems = roundTripProblems(TypeUrl.Cluster, {
    ...cluster,
    transport_socket: {
      name: 'envoy.transport_sockets.tls',
      typed_config: {
        '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext',
        snii: 'x',
      },
    },
  });
  assert.ok(
    problems.some((p) => p.includes('snii: no such field')),
    problems.join('\n'),
  );
});

test('catches an unknown @type (which would encode as an empty Any)', () => {
  const problems = roundTripProblems(TypeUrl.Cluster, {
    ...cluster,
    transport_socket: { name: 'x', typed_config: { '@type': 'type.googleapis.com/envoy.Nope', sni: 'x' } },
  });
  assert.ok(
    problems.some((p) => p.includes('unknown @type')),
    problems.join('\n'),
  );
});

test('enums by name or number; catches unknown enum names and numbers, and two oneof members', () => {
  assert.deepEqual(roundTripProblems(TypeUrl.Cluster, { ...cluster, type: 'EDS' }), []);
  assert.ok(
    roundTripProblems(TypeUrl.Cluster, { ...cluster, type: 'EDSS' }).some((p) => p.includes('not a value')),
  );
  assert.ok(
    roundTripProblems(TypeUrl.Cluster, { ...cluster, type: 99 }).some((p) => p.includes('not a value')),
  );
  const both = roundTripProblems(TypeUrl.Cluster, {
    ...cluster,
    eds_cluster_config: { eds_config: { ads: {}, path: '/x', resource_api_version: 2 } },
  });
  assert.ok(
    both.some((p) => p.includes('oneof')),
    both.join('\n'),
  );
});

test('checks Envoy PGV rules: required fields and minimum lengths', () => {
  const noName = roundTripProblems(TypeUrl.Cluster, { ...cluster, name: '' });
  assert.ok(
    noName.some((p) => p.includes('.name: shorter than 1')),
    noName.join('\n'),
  );
  const hcm = roundTripProblems(TypeUrl.Listener, {
    name: 'l',
    address: { socket_address: { address: '0.0.0.0', port_value: 1 } },
    filter_chains: [
      {
        filters: [
          {
            name: 'hcm',
            typed_config: {
              '@type':
                'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
              rds: { route_config_name: 'r', config_source: { ads: {}, resource_api_version: 2 } },
            },
          },
        ],
      },
    ],
  });
  assert.ok(
    hcm.some((p) => p.includes('stat_prefix: shorter than 1')),
    hcm.join('\n'),
  );
});

test('catches a wrong scalar type', () => {
  const problems = roundTripProblems(TypeUrl.Cluster, { ...cluster, name: 5 });
  assert.ok(
    problems.some((p) => p.includes('expected a string')),
    problems.join('\n'),
  );
});
