import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TypeUrl } from '../../envoy/types.js';
import { parseRestDiscoveryRequest, REST_XDS_PATHS, RestRequestError } from './request.js';

const CN = '00000000-0000-4000-8000-000000000001.sidecar.bookbuyer.bookbuyer.cluster.local';

test('every v3 REST path maps to its resource type', () => {
  assert.deepEqual(Object.fromEntries(REST_XDS_PATHS), {
    '/v3/discovery:listeners': TypeUrl.Listener,
    '/v3/discovery:routes': TypeUrl.RouteConfiguration,
    '/v3/discovery:clusters': TypeUrl.Cluster,
    '/v3/discovery:endpoints': TypeUrl.ClusterLoadAssignment,
    '/v3/discovery:secrets': TypeUrl.Secret,
  });
});

test('reads proto field names and their lowerCamelCase JSON names', () => {
  const snake = parseRestDiscoveryRequest(
    JSON.stringify({
      node: { id: CN },
      resource_names: ['a', 'b'],
      version_info: 'v1',
      type_url: TypeUrl.Cluster,
    }),
    TypeUrl.Cluster,
  );
  assert.deepEqual(snake, {
    typeUrl: TypeUrl.Cluster,
    nodeId: CN,
    resourceNames: ['a', 'b'],
    versionInfo: 'v1',
  });
  // Envoy's HTTP subscription sends the JSON names.
  const camel = parseRestDiscoveryRequest(
    JSON.stringify({
      node: { id: CN, cluster: 'x' },
      resourceNames: ['a'],
      versionInfo: 'v2',
      typeUrl: TypeUrl.Cluster,
    }),
    TypeUrl.Cluster,
  );
  assert.deepEqual(camel, { typeUrl: TypeUrl.Cluster, nodeId: CN, resourceNames: ['a'], versionInfo: 'v2' });
  assert.deepEqual(parseRestDiscoveryRequest(`{"node":{"id":"${CN}"}}`, TypeUrl.Secret), {
    typeUrl: TypeUrl.Secret,
    nodeId: CN,
    resourceNames: [],
    versionInfo: '',
  });
  // '*' asks for everything.
  assert.deepEqual(
    parseRestDiscoveryRequest(
      JSON.stringify({ node: { id: CN }, resource_names: ['*', 'a'] }),
      TypeUrl.Listener,
    ).resourceNames,
    [],
  );
});

test('malformed requests are refused with a message naming the problem', () => {
  const cases: [string, RegExp][] = [
    ['{"node":', /body is not JSON/],
    ['[1]', /must be a JSON object/],
    ['{}', /node\.id is required/],
    ['{"node":"x"}', /node must be an object/],
    ['{"node":{"id":7}}', /node\.id must be a string/],
    [`{"node":{"id":"${CN}"},"resource_names":"a"}`, /resource_names must be an array of strings/],
    [`{"node":{"id":"${CN}"},"resource_names":[1]}`, /resource_names must be an array of strings/],
    [`{"node":{"id":"${CN}"},"version_info":3}`, /version_info must be a string/],
    [`{"node":{"id":"${CN}"},"type_url":"${TypeUrl.Listener}"}`, /does not match this endpoint/],
  ];
  for (const [body, message] of cases)
    assert.throws(
      () => parseRestDiscoveryRequest(body, TypeUrl.Cluster),
      (e: unknown) => e instanceof RestRequestError && message.test(e.message),
      body,
    );
});
