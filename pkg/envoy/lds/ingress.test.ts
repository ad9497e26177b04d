import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pod, service } from '../../../test/support/catalog-fixtures.js';
import { ingress, ingressBackend, ingressObjects } from '../../../test/support/envoy/ingress.js';
import {
  bookstoreObjects,
  fakeSecrets,
  type PodName,
  proxyFor,
  storeOf,
  viewOf,
} from '../../../test/support/envoy/mesh.js';
import { at, byNameIn, list, named, names } from '../../../test/support/envoy/pick.js';
import { buildMeshView, ingressPorts, policyProblems } from '../../catalog/view.js';
import { DEFAULT_MESH_NAME } from '../../mesh/constants.js';
import type { AnyObject } from '../../model/objects.js';
import { deriveEndpointSlices } from '../../registry/local/endpoints.js';
import { RbacAction } from '../common/enums.js';
import { sidecarRdsGenerator } from '../rds/sidecar.js';
import { sdsGenerator } from '../sds/sds.js';
import { sidecarLdsGenerator } from './sidecar.js';

function meshOf(objects: AnyObject[]) {
  return viewOf(storeOf(objects));
}
function inboundChains(objects: AnyObject[], pod: PodName) {
  const mesh = meshOf(objects);
  const out = sidecarLdsGenerator.generate(
    proxyFor(mesh, pod),
    { mesh, secrets: fakeSecrets('all') },
    undefined,
  );
  return list(named(out, 'inbound-listener'), 'filter_chains');
}
/**
 * The ingress chain's RBAC policy: the chain's own filter denies all, and its
 * route config's virtual host carries the policy (RBACPerRoute), so an edit
 * reaches open connections over RDS.
 */
function rbacOf(objects: AnyObject[], pod: PodName, chain: ReturnType<typeof byNameIn>) {
  const hcm = at(
    byNameIn(list(chain, 'filters'), 'envoy.filters.network.http_connection_manager'),
    'typed_config',
  );
  assert.deepEqual(
    at(byNameIn(list(hcm, 'http_filters'), 'envoy.filters.http.rbac'), 'typed_config', 'rules'),
    {
      action: RbacAction.ALLOW,
      policies: {},
    },
  );
  assert.equal(at(hcm, 'route_config'), undefined);
  const mesh = meshOf(objects);
  const name = String(at(hcm, 'rds', 'route_config_name'));
  const routes = sidecarRdsGenerator.generate(
    proxyFor(mesh, pod),
    { mesh, secrets: fakeSecrets('all') },
    new Set([name]),
  );
  const vhost = at(named(routes, name), 'virtual_hosts', 0);
  return at(vhost, 'typed_per_filter_config', 'envoy.filters.http.rbac', 'rbac', 'rules');
}

test('http IngressBackend + Ingress: a plaintext chain from the sources, the Ingress host/paths in RBAC', () => {
  const chains = inboundChains(ingressObjects(), 'bookstore-v1-1');
  const chain = byNameIn(chains, 'ingress_14001_http');
  assert.equal(at(chain, 'filters', 0, 'typed_config', 'rds', 'route_config_name'), 'rds-ingress.14001.http');
  assert.deepEqual(at(chain, 'filter_chain_match'), {
    destination_port: { value: 14001 },
    transport_protocol: 'raw_buffer',
    source_prefix_ranges: [
      { address_prefix: '10.0.9.0', prefix_len: { value: 24 } },
      { address_prefix: '10.244.9.10', prefix_len: { value: 32 } },
    ],
  });
  assert.equal(at(chain, 'transport_socket'), undefined);
  const policy = at(
    rbacOf(ingressObjects(), 'bookstore-v1-1', chain),
    'policies',
    'IngressBackend bookstore/shop',
  );
  const perms = JSON.stringify(at(policy, 'permissions'));
  // Host with any port, Prefix element-wise (/books or /books/…), Exact /about.
  assert.match(perms, /"\(\?i\)shop\\\\.example\\\\.com\(:\[0-9\]\+\)\?"/);
  assert.match(perms, /"exact":"\/books"/);
  assert.match(perms, /"prefix":"\/books\/"/);
  assert.match(perms, /"exact":"\/about"/);
  assert.match(JSON.stringify(at(policy, 'principals')), /direct_remote_ip/);
  // The mesh chain is still there, unchanged (tls).
  assert.equal(
    at(
      byNameIn(chains, 'inbound_bookstore/bookstore-v1_14001_http'),
      'filter_chain_match',
      'transport_protocol',
    ),
    'tls',
  );
});

test('https IngressBackend: the backend cert, the client cert required and checked, principals and SNI in RBAC', () => {
  const chains = inboundChains(ingressObjects(), 'bookwarehouse-1');
  const chain = byNameIn(chains, 'ingress_14001_https');
  assert.equal(at(chain, 'filter_chain_match', 'transport_protocol'), 'tls');
  const tls = at(chain, 'transport_socket', 'typed_config');
  assert.deepEqual(at(tls, 'require_client_certificate'), { value: true });
  assert.equal(
    at(tls, 'common_tls_context', 'validation_context_sds_secret_config', 'name'),
    'root-cert-for-mtls-ingress:bookwarehouse/bookwarehouse',
  );
  const policy = at(
    rbacOf(ingressObjects(), 'bookwarehouse-1', chain),
    'policies',
    'IngressBackend bookwarehouse/api',
  );
  const who = JSON.stringify(at(policy, 'principals'));
  assert.match(who, /"and_ids"/);
  // Exactly the SAN, nothing appended (OSM's trust-domain bug).
  assert.match(who, /"principal_name":\{"exact":"ingress-nginx\.ingress-nginx\.cluster\.local"\}/);
  const what = JSON.stringify(at(policy, 'permissions'));
  assert.match(what, /"requested_server_name":\{"exact":"warehouse\.example\.com"\}/);
  assert.match(what, /skein\\\\.Warehouse\/Get/);
  // SDS serves the ingress validation context: the CA, no SAN pinned.
  const mesh = meshOf(ingressObjects());
  const secrets = sdsGenerator.generate(
    proxyFor(mesh, 'bookwarehouse-1'),
    { mesh, secrets: fakeSecrets('all') },
    undefined,
  );
  const root = named(secrets, 'root-cert-for-mtls-ingress:bookwarehouse/bookwarehouse');
  assert.equal(at(root, 'validation_context', 'match_typed_subject_alt_names'), undefined);
});

test('skipClientCertValidation: TLS without a client certificate demanded', () => {
  const objects = ingressObjects().filter((o) => !(o.kind === 'IngressBackend' && o.metadata.name === 'api'));
  objects.push(
    ingressBackend('bookwarehouse', 'api', {
      backends: [
        {
          name: 'bookwarehouse',
          port: { number: 14001, protocol: 'https' },
          tls: { skipClientCertValidation: true },
        },
      ],
      sources: [{ kind: 'IPRange', name: '10.0.9.9/32' }],
    }),
  );
  const tls = at(
    byNameIn(inboundChains(objects, 'bookwarehouse-1'), 'ingress_14001_https'),
    'transport_socket',
    'typed_config',
  );
  assert.deepEqual(at(tls, 'require_client_certificate'), { value: false });
  assert.equal(at(tls, 'common_tls_context', 'validation_context_sds_secret_config'), undefined);
});

test('SMI mode: an Ingress without IngressBackend opens nothing and is reported; permissive mode admits plaintext', () => {
  const objects = ingressObjects().filter((o) => o.kind !== 'IngressBackend');
  const chains = inboundChains(objects, 'bookstore-v1-1');
  assert.ok(!chains.some((c) => String(at(c, 'name')).startsWith('ingress_')));
  assert.ok(!chains.some((c) => String(at(c, 'name')).startsWith('inbound-plaintext_')));
  const reasons = policyProblems(meshOf(objects)).filter((p) => p.kind === 'Ingress');
  assert.equal(reasons.length, 1);
  assert.match(reasons[0]?.reason ?? '', /no IngressBackend admits a source/);
  const permissive = inboundChains(
    ingressObjects({ permissive: true }).filter((o) => o.kind !== 'IngressBackend'),
    'bookwarehouse-1',
  );
  // gRPC (14001) and TCP (13306) get plaintext chains to the app.
  assert.deepEqual(
    permissive.map((c) => String(at(c, 'name'))).filter((n) => n.startsWith('inbound-plaintext_')),
    ['inbound-plaintext_13306', 'inbound-plaintext_14001'],
  );
});

test('conflicting IngressBackends: the first by name wins, the other is reported; others unaffected', () => {
  const objects = [
    ...ingressObjects(),
    ingressBackend('bookstore', 'zz-other', {
      backends: [{ name: 'bookstore-v1', port: { number: 14001, protocol: 'https' } }],
      sources: [{ kind: 'IPRange', name: '10.1.0.0/16' }],
    }),
    ingressBackend('bookstore', 'missing', {
      backends: [{ name: 'nope', port: { number: 80, protocol: 'http' } }],
      sources: [{ kind: 'IPRange', name: '10.1.0.0/16' }],
    }),
  ];
  const mesh = meshOf(objects);
  const port = ingressPorts(mesh).get('bookstore/bookstore-v1|14001');
  assert.equal(port?.protocol, 'http');
  const reasons = policyProblems(mesh)
    .filter((p) => p.kind === 'IngressBackend')
    .map((p) => `${p.name}: ${p.reason}`);
  assert.ok(
    reasons.some((r) =>
      r.startsWith('zz-other: backend bookstore-v1 port 14001: conflicts with IngressBackend bookstore/shop'),
    ),
  );
  assert.ok(reasons.some((r) => r.startsWith('missing: backend Service bookstore/nope does not exist')));
  assert.ok(ingressPorts(mesh).get('bookwarehouse/bookwarehouse|14001'));
});

/** Ingress bookstore/shop edited: every path (Prefix `/`), no host, the same backend. */
function shopOnEveryPath() {
  return ingress('bookstore', 'shop', {
    rules: [
      {
        http: {
          paths: [
            {
              path: '/',
              pathType: 'Prefix',
              backend: { service: { name: 'bookstore-v1', port: { number: 14001 } } },
            },
          ],
        },
      },
    ],
  });
}

test('an unchanged ingress answer is the same object in the next view; an Ingress edit changes only its backend', () => {
  const store = storeOf(ingressObjects());
  const v1 = viewOf(store);
  const a1 = ingressPorts(v1).get('bookstore/bookstore-v1|14001');
  const w1 = ingressPorts(v1).get('bookwarehouse/bookwarehouse|14001');
  store.upsert(shopOnEveryPath());
  const v2 = buildMeshView(store, { meshName: DEFAULT_MESH_NAME, previous: v1 });
  assert.notEqual(ingressPorts(v2).get('bookstore/bookstore-v1|14001'), a1);
  assert.equal(ingressPorts(v2).get('bookstore/bookstore-v1|14001')?.routes, 'all');
  assert.equal(ingressPorts(v2).get('bookwarehouse/bookwarehouse|14001'), w1);
});

test('an Ingress edit that keeps the sources changes the route config, not the inbound listener (no chain drained)', () => {
  const store = storeOf(ingressObjects());
  const generate = (mesh: ReturnType<typeof viewOf>) => {
    const proxy = proxyFor(mesh, 'bookstore-v1-1');
    const ctx = { mesh, secrets: fakeSecrets('all') };
    return {
      listener: named(sidecarLdsGenerator.generate(proxy, ctx, undefined), 'inbound-listener'),
      route: named(
        sidecarRdsGenerator.generate(proxy, ctx, new Set(['rds-ingress.14001.http'])),
        'rds-ingress.14001.http',
      ),
    };
  };
  const v1 = viewOf(store);
  const before = generate(v1);
  store.upsert(shopOnEveryPath());
  const after = generate(buildMeshView(store, { meshName: DEFAULT_MESH_NAME, previous: v1 }));
  assert.equal(after.listener, before.listener, 'the same inbound listener message');
  assert.notDeepEqual(after.route, before.route);
  // Before: the Ingress paths; after: every path (Prefix `/`).
  assert.match(JSON.stringify(before.route), /"prefix":"\/books\/"/);
  assert.match(JSON.stringify(after.route), /"permissions":\[\{"any":true\}\]/);
});

test('ingress compiled once while its inputs stand: an unrelated change reuses the table, a source Service moving recompiles it', () => {
  const store = storeOf(ingressObjects());
  const v1 = viewOf(store);
  const t1 = ingressPorts(v1);
  const problems1 = policyProblems(v1).filter((p) => p.kind.startsWith('Ingress'));
  // Unrelated: a Service in a namespace the compilation never read.
  store.upsert(service('bookthief', 'decoy', [{ name: 'http', port: 80 }]));
  const v2 = buildMeshView(store, { meshName: DEFAULT_MESH_NAME, previous: v1 });
  assert.equal(ingressPorts(v2), t1, 'the same table object: nothing recompiled');
  assert.deepEqual(
    policyProblems(v2).filter((p) => p.kind.startsWith('Ingress')),
    problems1,
  );
  // The ingress controller's pod (a Service source of bookstore's IngressBackend) moves.
  const moved = pod('ingress-nginx', 'ingress-nginx-1', {
    ip: '10.244.9.11',
    labels: { app: 'ingress-nginx' },
  });
  const controllerSvc = service('ingress-nginx', 'ingress-nginx', [{ name: 'http', port: 80 }], {
    app: 'ingress-nginx',
  });
  store.upsert(moved);
  for (const s of deriveEndpointSlices([controllerSvc], [moved])) store.upsert(s);
  const v3 = buildMeshView(store, { meshName: DEFAULT_MESH_NAME, previous: v2 });
  const shop = ingressPorts(v3).get('bookstore/bookstore-v1|14001');
  assert.ok(shop?.cidrs.includes('10.244.9.11/32'), JSON.stringify(shop?.cidrs));
  assert.ok(!shop?.cidrs.includes('10.244.9.10/32'));
  // The other backend read nothing that changed: still its earlier answer.
  assert.equal(
    ingressPorts(v3).get('bookwarehouse/bookwarehouse|14001'),
    t1.get('bookwarehouse/bookwarehouse|14001'),
  );
});

test('a mesh without Ingress or IngressBackend: no ingress answers, no ingress chain', () => {
  assert.equal(ingressPorts(meshOf(bookstoreObjects())).size, 0);
  const chains = names(inboundChains(bookstoreObjects(), 'bookstore-v1-1'));
  assert.ok(chains.length > 0 && chains.every((n) => !n.startsWith('ingress')), JSON.stringify(chains));
});
