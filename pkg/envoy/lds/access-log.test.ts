import assert from 'node:assert/strict';
import { test } from 'node:test';
import { meshConfig } from '../../../test/support/catalog-fixtures.js';
import {
  bookstoreObjects,
  fakeSecrets,
  type PodName,
  proxyFor,
  storeOf,
} from '../../../test/support/envoy/mesh.js';
import { at, list, named } from '../../../test/support/envoy/pick.js';
import type { MeshView } from '../../catalog/types.js';
import { buildMeshView } from '../../catalog/view.js';
import { DEFAULT_MESH_NAME } from '../../mesh/constants.js';
import type { AnyObject, MeshConfigSpec } from '../../model/objects.js';
import { HTTP_LOG_FIELDS } from '../common/access-log.js';
import type { ProtoValue } from '../types.js';
import { gatewayLdsGenerator } from './gateway.js';
import { sidecarLdsGenerator } from './sidecar.js';

function lds(mesh: MeshView, pod: PodName) {
  return sidecarLdsGenerator.generate(proxyFor(mesh, pod), { mesh, secrets: fakeSecrets('all') }, undefined);
}

/** Every access_log of every network filter of a listener, in order. */
function logsOf(listener: ProtoValue | undefined): ProtoValue[] {
  const chains = [...list(listener, 'filter_chains'), at(listener, 'default_filter_chain')];
  return chains.flatMap((c) => list(c, 'filters').flatMap((f) => list(f, 'typed_config', 'access_log')));
}

function withMeshConfig(spec: MeshConfigSpec | undefined) {
  const objects: AnyObject[] = bookstoreObjects().filter((o) => o.kind !== 'MeshConfig');
  if (spec) objects.push(meshConfig(DEFAULT_MESH_NAME, 'skein-system', spec));
  return objects;
}

test('by default every HCM and tcp_proxy of a sidecar logs JSON to stdout with the fields users grep for', () => {
  const mesh = buildMeshView(storeOf(withMeshConfig(undefined)), { meshName: DEFAULT_MESH_NAME });
  for (const name of ['outbound-listener', 'inbound-listener']) {
    const listener = named(lds(mesh, 'bookstore-v1-1'), name);
    const filters = [...list(listener, 'filter_chains'), at(listener, 'default_filter_chain')].flatMap((c) =>
      list(c, 'filters'),
    );
    const logged = filters.filter((f) => /http_connection_manager|tcp_proxy/.test(String(at(f, 'name'))));
    assert.ok(logged.length > 0, name);
    for (const f of logged) {
      const log = list(f, 'typed_config', 'access_log');
      assert.equal(log.length, 1, `${name}: ${String(at(f, 'name'))}`);
      assert.equal(at(log[0], 'name'), 'envoy.access_loggers.stdout');
    }
  }
  const http = logsOf(named(lds(mesh, 'bookstore-v1-1'), 'inbound-listener')).find(
    (l) => at(l, 'typed_config', 'log_format', 'json_format', 'fields', 'method') !== undefined,
  );
  const fields = at(http, 'typed_config', 'log_format', 'json_format', 'fields');
  for (const k of [
    'start_time',
    'method',
    'path',
    'authority',
    'response_code',
    'response_flags',
    'duration',
    'upstream_cluster',
    'upstream_host',
    'bytes_received',
    'bytes_sent',
    'request_id',
    'downstream_peer_uri_san',
  ])
    assert.deepEqual(at(fields, k), { stringValue: HTTP_LOG_FIELDS[k] }, k);
});

test('MeshConfig turns logs off or to text; listeners stay the same objects while the setting is unchanged', () => {
  const store = storeOf(withMeshConfig({ observability: { accessLog: { enabled: false } } }));
  const off = buildMeshView(store, { meshName: DEFAULT_MESH_NAME });
  assert.deepEqual(logsOf(named(lds(off, 'bookbuyer-1'), 'outbound-listener')), []);
  store.upsert(
    meshConfig(DEFAULT_MESH_NAME, 'skein-system', { observability: { accessLog: { format: 'text' } } }),
  );
  const text = buildMeshView(store, { meshName: DEFAULT_MESH_NAME, previous: off });
  const first = named(lds(text, 'bookbuyer-1'), 'outbound-listener');
  const logs = logsOf(first);
  assert.ok(logs.length > 0);
  for (const l of logs)
    assert.equal(at(l, 'typed_config', 'log_format'), undefined, "text: Envoy's default format");
  store.upsert(
    meshConfig(DEFAULT_MESH_NAME, 'skein-system', {
      observability: { accessLog: { format: 'text' }, logLevel: 'debug' },
    }),
  );
  const again = buildMeshView(store, { meshName: DEFAULT_MESH_NAME, previous: text });
  assert.equal(named(lds(again, 'bookbuyer-1'), 'outbound-listener'), first);
});

test("the ingress gateway's HCM logs too, and not when the MeshConfig turns logs off", () => {
  const identity = {
    uuid: 'gw-1',
    kind: 'gateway' as const,
    namespace: 'skein-system',
    serviceAccount: 'skein-ingress-gateway',
    trustDomain: 'cluster.local',
    cn: 'gw-1.gateway.skein-ingress-gateway.skein-system.cluster.local',
  };
  const proxy = { identity, services: [], groupKey: 'gateway' };
  for (const [spec, expected] of [
    [undefined, 1],
    [{ observability: { accessLog: { enabled: false } } }, 0],
  ] as const) {
    const mesh = buildMeshView(storeOf(withMeshConfig(spec)), { meshName: DEFAULT_MESH_NAME });
    const out = gatewayLdsGenerator.generate(proxy, { mesh, secrets: fakeSecrets('all') }, undefined);
    const logs = logsOf(named(out, 'gateway-http'));
    assert.equal(logs.length, expected, JSON.stringify(spec));
  }
});
