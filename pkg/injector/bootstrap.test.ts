import assert from 'node:assert/strict';
import { test } from 'node:test';
import protobuf from 'protobufjs';
import { fromObjectForm } from '../../test/support/envoy/json-form.js';
import { parsedType } from '../../test/support/envoy/proto-types.js';
import { roundTripProblems } from '../../test/support/envoy/roundtrip.js';
import type { ProtoObject, ProtoValue } from '../envoy/types.js';
import {
  ADS_CA_SECRET,
  ADS_CERT_SECRET,
  adsSdsFiles,
  BOOTSTRAP_TYPE_URL,
  type BootstrapOptions,
  controllerAddress,
  DEFAULT_MAX_DOWNSTREAM_CONNECTIONS,
  DISCOVERY_RESPONSE_TYPE_URL,
  envoyBootstrap,
} from './bootstrap.js';

const CN = '0b8a4c3e-8d1f-4c3a-9a53-2f2d7a1f6e10.sidecar.bookbuyer.bookstore.cluster.local';

function bootstrap(withProbes = true, extra: Partial<BootstrapOptions> = {}): ProtoObject {
  return envoyBootstrap({
    ...extra,
    nodeId: CN,
    nodeCluster: 'bookbuyer.bookstore',
    controller: controllerAddress('skein-system'),
    ...(withProbes
      ? {
          probes: {
            http: [
              {
                listenerPort: 15901,
                path: '/skein-probe/app/liveness',
                targetPort: 8080,
                targetPath: '/healthz',
              },
              {
                listenerPort: 15902,
                path: '/skein-probe/app/readiness',
                targetPort: 8080,
                targetPath: '/ready',
              },
              { listenerPort: 15901, path: '/skein-probe/side/liveness', targetPort: 9000, targetPath: '/' },
            ],
            tcp: [{ listenerPort: 15904, targetPort: 8443 }],
          },
        }
      : {}),
  });
}

function isObj(v: ProtoValue | undefined): v is ProtoObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Follows a path of keys/indexes; fails the test when a step is missing. */
function at(v: ProtoValue | undefined, ...path: (string | number)[]): ProtoValue {
  let cur: ProtoValue | undefined = v;
  for (const step of path) {
    if (typeof step === 'number') cur = Array.isArray(cur) ? cur[step] : undefined;
    else cur = isObj(cur) ? cur[step] : undefined;
    assert.notEqual(cur, undefined, `missing ${path.join('.')} at ${step}`);
  }
  return cur ?? null;
}

function byName(list: ProtoValue, name: string): ProtoObject {
  assert.ok(Array.isArray(list));
  const found = list.find((x) => isObj(x) && x['name'] === name);
  assert.ok(isObj(found), `no ${name}`);
  return found;
}

const DURATION = '.google.protobuf.Duration';
/** A Duration in proto3 JSON: seconds with up to nine fractional digits and an `s`. */
const DURATION_JSON = /^\d+(\.\d{1,9})?s$/;

/**
 * The bootstrap is written as JSON for Envoy: only valid if no field holds a
 * well-known type whose proto3 JSON differs from fromObject form (wrappers,
 * Struct, Timestamp...) — except Durations, written as proto3 JSON strings
 * ("0.25s") — and enums are names.
 */
function jsonProblems(type: protobuf.Type, value: ProtoValue, path: string, out: string[]): void {
  if (!isObj(value)) return;
  if (type.fullName === '.google.protobuf.Any') {
    const url = value['@type'];
    if (typeof url !== 'string') return;
    const { '@type': _t, ...body } = value;
    jsonProblems(parsedType(url), body, `${path}<${url.replace(/.*\./, '')}>`, out);
    return;
  }
  for (const [key, v] of Object.entries(value)) {
    const field = type.fields[key];
    if (!field) continue; // roundTripProblems reports unknown fields
    field.resolve();
    const rt = field.resolvedType;
    const items = Array.isArray(v)
      ? v
      : field instanceof protobuf.MapField && isObj(v)
        ? Object.values(v)
        : [v];
    for (const item of items) {
      if (rt instanceof protobuf.Type && rt.fullName === DURATION) {
        if (typeof item !== 'string' || !DURATION_JSON.test(item))
          out.push(
            `${path}.${key}: a Duration must be proto3 JSON like "0.25s", not ${JSON.stringify(item)}`,
          );
      } else if (rt instanceof protobuf.Type) {
        if (rt.fullName.startsWith('.google.protobuf.') && rt.fullName !== '.google.protobuf.Any')
          out.push(`${path}.${key}: ${rt.fullName} has a different JSON form`);
        jsonProblems(rt, item, `${path}.${key}`, out);
      } else if (rt instanceof protobuf.Enum && typeof item !== 'string') {
        out.push(`${path}.${key}: enum given as a number`);
      }
    }
  }
}

test('the bootstrap and its SDS files survive the Envoy protos and are valid proto3 JSON', () => {
  const variants = [
    bootstrap(),
    bootstrap(false),
    bootstrap(false, { xdsTransport: 'delta', maxDownstreamConnections: 7 }),
    bootstrap(true, { envoyReadiness: true }),
  ];
  for (const b of variants) {
    assert.deepEqual(roundTripProblems(BOOTSTRAP_TYPE_URL, fromObjectForm(BOOTSTRAP_TYPE_URL, b)), []);
    const problems: string[] = [];
    jsonProblems(parsedType(BOOTSTRAP_TYPE_URL), b, 'Bootstrap', problems);
    assert.deepEqual(problems, []);
    // What the Secret holds is exactly this object.
    assert.deepEqual(JSON.parse(JSON.stringify(b)), b);
  }
  const sds = adsSdsFiles();
  for (const file of [sds.cert, sds.ca]) {
    assert.deepEqual(roundTripProblems(DISCOVERY_RESPONSE_TYPE_URL, file), []);
    const problems: string[] = [];
    jsonProblems(parsedType(DISCOVERY_RESPONSE_TYPE_URL), file, 'DiscoveryResponse', problems);
    assert.deepEqual(problems, []);
  }
});

test('the checker would catch a misspelled bootstrap field', () => {
  // Guards the test above: protobufjs alone would drop this silently.
  const b = bootstrap(false);
  const broken = { ...b, admin: { adress: at(b, 'admin', 'address') } };
  assert.notDeepEqual(roundTripProblems(BOOTSTRAP_TYPE_URL, broken), []);
});

test('node id is the proxy CN; ADS goes over mTLS to the controller Service; admin on loopback', () => {
  const b = bootstrap();
  assert.equal(at(b, 'node', 'id'), CN);
  assert.equal(at(b, 'node', 'cluster'), 'bookbuyer.bookstore');
  assert.deepEqual(at(b, 'admin', 'address', 'socket_address'), { address: '127.0.0.1', port_value: 15000 });

  const dyn = at(b, 'dynamic_resources');
  assert.deepEqual(at(dyn, 'lds_config'), { ads: {}, resource_api_version: 'V3' });
  assert.deepEqual(at(dyn, 'cds_config'), { ads: {}, resource_api_version: 'V3' });
  assert.equal(at(dyn, 'ads_config', 'api_type'), 'GRPC', 'state of the world by default');
  assert.equal(at(dyn, 'ads_config', 'transport_api_version'), 'V3');
  assert.equal(at(dyn, 'ads_config', 'set_node_on_first_message_only'), true);
  assert.equal(at(dyn, 'ads_config', 'grpc_services', 0, 'envoy_grpc', 'cluster_name'), 'skein-controller');

  const host = 'skein-controller.skein-system.svc.cluster.local';
  const ads = byName(at(b, 'static_resources', 'clusters'), 'skein-controller');
  assert.equal(ads['type'], 'STRICT_DNS');
  assert.deepEqual(
    at(ads, 'load_assignment', 'endpoints', 0, 'lb_endpoints', 0, 'endpoint', 'address', 'socket_address'),
    { address: host, port_value: 15128 },
  );
  assert.ok(isObj(at(ads, 'typed_extension_protocol_options')), 'HTTP/2 for gRPC');
  const tls = at(ads, 'transport_socket', 'typed_config');
  assert.equal(
    at(tls, '@type'),
    'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext',
  );
  assert.equal(at(tls, 'sni'), host);
  const common = at(tls, 'common_tls_context');
  assert.equal(at(common, 'tls_certificate_sds_secret_configs', 0, 'name'), ADS_CERT_SECRET);
  assert.deepEqual(at(common, 'tls_certificate_sds_secret_configs', 0, 'sds_config', 'path_config_source'), {
    path: '/etc/skein/ads-cert-sds.json',
    watched_directory: { path: '/etc/skein' },
  });
  const validation = at(common, 'combined_validation_context');
  assert.deepEqual(at(validation, 'default_validation_context', 'match_typed_subject_alt_names'), [
    { san_type: 'DNS', matcher: { exact: host } },
  ]);
  assert.equal(at(validation, 'validation_context_sds_secret_config', 'name'), ADS_CA_SECRET);

  // The SDS files name the mounted Secret's files, and the names the bootstrap asks for.
  const sds = adsSdsFiles();
  assert.equal(at(sds.cert, 'resources', 0, 'name'), ADS_CERT_SECRET);
  assert.equal(
    at(sds.cert, 'resources', 0, 'tls_certificate', 'private_key', 'filename'),
    '/etc/skein/tls.key',
  );
  assert.equal(
    at(sds.cert, 'resources', 0, 'tls_certificate', 'certificate_chain', 'filename'),
    '/etc/skein/tls.crt',
  );
  assert.equal(at(sds.ca, 'resources', 0, 'name'), ADS_CA_SECRET);
  assert.equal(
    at(sds.ca, 'resources', 0, 'validation_context', 'trusted_ca', 'filename'),
    '/etc/skein/ca.crt',
  );
});

test('probe forwards become listeners on the probe ports that rewrite to the app path on 127.0.0.1', () => {
  const b = bootstrap();
  const listeners = at(b, 'static_resources', 'listeners');
  const clusters = at(b, 'static_resources', 'clusters');
  assert.ok(Array.isArray(listeners) && Array.isArray(clusters));
  assert.deepEqual(
    listeners.map((l) => at(l, 'address', 'socket_address', 'port_value')),
    [15010, 15901, 15902, 15904],
  );
  const routesOf = (name: string): ProtoValue =>
    at(
      byName(listeners, name),
      'filter_chains',
      0,
      'filters',
      0,
      'typed_config',
      'route_config',
      'virtual_hosts',
      0,
      'routes',
    );
  assert.deepEqual(routesOf('skein-probe-15901'), [
    {
      match: { path: '/skein-probe/app/liveness' },
      route: { cluster: 'skein-probe-local-8080', prefix_rewrite: '/healthz' },
    },
    {
      match: { path: '/skein-probe/side/liveness' },
      route: { cluster: 'skein-probe-local-9000', prefix_rewrite: '/' },
    },
  ]);
  assert.deepEqual(routesOf('skein-prometheus'), [
    { match: { path: '/stats/prometheus' }, route: { cluster: 'skein-envoy-admin' } },
  ]);
  const tcp = at(byName(listeners, 'skein-probe-15904'), 'filter_chains', 0, 'filters', 0, 'typed_config');
  assert.equal(at(tcp, 'cluster'), 'skein-probe-local-8443');
  for (const [name, port] of [
    ['skein-probe-local-8080', 8080],
    ['skein-probe-local-9000', 9000],
    ['skein-probe-local-8443', 8443],
    ['skein-envoy-admin', 15000],
  ] as const) {
    const c = byName(clusters, name);
    assert.deepEqual(
      at(c, 'load_assignment', 'endpoints', 0, 'lb_endpoints', 0, 'endpoint', 'address', 'socket_address'),
      { address: '127.0.0.1', port_value: port },
    );
  }
  // Every cluster a route or TCP proxy names exists.
  const names = new Set(clusters.map((c) => at(c, 'name')));
  for (const ref of JSON.stringify(listeners).matchAll(/"cluster":"([^"]+)"/g))
    assert.ok(names.has(ref[1] ?? ''), ref[1]);
});

test("envoyReadiness: a listener on 15900 whose one route reaches admin's /ready; absent unless asked for", () => {
  const listenersOf = (b: ProtoObject): ProtoValue => at(b, 'static_resources', 'listeners');
  const ports = (b: ProtoObject): ProtoValue => {
    const l = listenersOf(b);
    assert.ok(Array.isArray(l));
    return l.map((x) => at(x, 'address', 'socket_address', 'port_value'));
  };
  assert.deepEqual(ports(bootstrap()), [15010, 15901, 15902, 15904], 'classic bootstraps are unchanged');
  const b = bootstrap(false, { envoyReadiness: true });
  assert.deepEqual(ports(b), [15010, 15900]);
  const ready = byName(listenersOf(b), 'skein-envoy-ready');
  // Reachable by kubelet from the node: the pod IP, not loopback (admin stays on 127.0.0.1).
  assert.equal(at(ready, 'address', 'socket_address', 'address'), '0.0.0.0');
  assert.equal(at(b, 'admin', 'address', 'socket_address', 'address'), '127.0.0.1');
  assert.deepEqual(
    at(ready, 'filter_chains', 0, 'filters', 0, 'typed_config', 'route_config', 'virtual_hosts', 0, 'routes'),
    [
      {
        match: { path: '/skein-probe/envoy/ready' },
        route: { cluster: 'skein-envoy-admin', prefix_rewrite: '/ready' },
      },
    ],
  );
  assert.ok(byName(at(b, 'static_resources', 'clusters'), 'skein-envoy-admin'));
  // With app probes too: both, in port order.
  assert.deepEqual(ports(bootstrap(true, { envoyReadiness: true })), [15010, 15900, 15901, 15902, 15904]);
});

test('delta transport: DELTA_GRPC, still with the node on the first message only', () => {
  const ads = at(bootstrap(false, { xdsTransport: 'delta' }), 'dynamic_resources', 'ads_config');
  assert.equal(at(ads, 'api_type'), 'DELTA_GRPC');
  assert.equal(at(ads, 'set_node_on_first_message_only'), true);
  assert.equal(
    at(bootstrap(false, { xdsTransport: 'sotw' }), 'dynamic_resources', 'ads_config', 'api_type'),
    'GRPC',
  );
});

test('the overload manager limits downstream connections: 50,000 unless told otherwise', () => {
  const monitors = (b: ProtoObject): ProtoValue => at(b, 'overload_manager', 'resource_monitors');
  const expected = (limit: number): ProtoValue => [
    {
      name: 'envoy.resource_monitors.global_downstream_max_connections',
      typed_config: {
        '@type':
          'type.googleapis.com/envoy.extensions.resource_monitors.downstream_connections.v3.DownstreamConnectionsConfig',
        max_active_downstream_connections: limit,
      },
    },
  ];
  assert.equal(DEFAULT_MAX_DOWNSTREAM_CONNECTIONS, 50_000);
  assert.deepEqual(monitors(bootstrap()), expected(50_000));
  assert.deepEqual(monitors(bootstrap(false, { maxDownstreamConnections: 1200 })), expected(1200));
  // Only the monitor: no actions, so nothing but the connection limit changes Envoy's behaviour.
  const overload = at(bootstrap(), 'overload_manager');
  assert.ok(isObj(overload));
  assert.deepEqual(Object.keys(overload), ['resource_monitors']);
});
