import assert from 'node:assert/strict';
import { test } from 'node:test';
import { meshConfig } from '../../../test/support/catalog-fixtures.js';
import { egress, egressMesh } from '../../../test/support/envoy/egress-fixtures.js';
import { DEFAULT_MESH_NAME } from '../../mesh/constants.js';
import { type EgressDestination, matchEgress } from './match.js';
import { egressPlan } from './plan.js';

const buyer = { namespace: 'bookbuyer', serviceAccount: 'bookbuyer' };
const plan = egressPlan(egressMesh(), buyer);
const at = (d: EgressDestination) => matchEgress(plan, d);
const get = (path: string, method = 'GET') => ({ path, method, headers: {} });

test('http: host and route decide; another host 403 by RBAC, another path 403 by the routes', () => {
  const ok = at({ protocol: 'http', port: 80, host: 'api.example.com', request: get('/v1/books') });
  assert.equal(ok.result, 'http');
  assert.ok(ok.result === 'http' && ok.match !== 'all' && ok.match.name === 'get');
  assert.deepEqual(ok.result === 'http' && ok.host.origins, ['Egress bookbuyer/api']);
  assert.equal(at({ protocol: 'http', port: 80, host: 'evil.example.com' }).result, 'host');
  assert.equal(
    at({ protocol: 'http', port: 80, host: 'api.example.com', request: get('/v1/books', 'POST') }).result,
    'route',
  );
  // TLS or raw bytes on the http egress port never meet its chain.
  assert.equal(at({ protocol: 'tls', port: 80, host: 'api.example.com' }).result, 'protocol');
});

test('https: exact and wildcard SNI (any depth, not the bare suffix); no SNI is refused', () => {
  for (const sni of ['github.com', 'api.github.com', 'a.b.github.com'])
    assert.equal(at({ protocol: 'tls', port: 443, host: sni }).result, 'tls', sni);
  const other = at({ protocol: 'tls', port: 443, host: 'gitlab.com' });
  assert.equal(other.result, 'sni');
  assert.deepEqual(other.result === 'sni' && other.serverNames, ['*.github.com', 'github.com']);
  assert.equal(at({ protocol: 'tls', port: 443, address: '140.82.1.1' }).result, 'sni');
  assert.equal(at({ protocol: 'http', port: 443, host: 'github.com' }).result, 'protocol');
});

test('tcp: the address decides, whatever the client speaks; unknown address is outside the ranges', () => {
  assert.equal(at({ protocol: 'tcp', port: 5432, address: '10.1.2.3' }).result, 'tcp');
  assert.equal(at({ protocol: 'http', port: 5432, address: '10.1.2.3', host: 'db' }).result, 'tcp');
  const far = at({ protocol: 'tcp', port: 5432, address: '10.9.0.1' });
  assert.ok(far.result === 'address' && far.addressKnown);
  const unknown = at({ protocol: 'tcp', port: 5432, host: 'db.example.com' });
  assert.ok(unknown.result === 'address' && !unknown.addressKnown);
  assert.deepEqual(unknown.result === 'address' && unknown.origins, ['Egress bookbuyer/db']);
  const smtp = at({ protocol: 'tcp', port: 25, address: '10.2.0.9' });
  assert.ok(smtp.result === 'tcp' && smtp.chain.serverFirst);
  assert.equal(at({ protocol: 'tcp', port: 6379, address: '10.1.2.3' }).result, 'no-port');
});

test('an address-specific https chain wins over an address-less one and is not left for it', () => {
  const mesh = egressMesh([
    egress('bookbuyer', 'internal-git', {
      sources: [{ kind: 'ServiceAccount', name: 'bookbuyer', namespace: 'bookbuyer' }],
      hosts: ['git.internal'],
      ipAddresses: ['10.3.0.0/16'],
      ports: [{ number: 443, protocol: 'https' }],
    }),
  ]);
  const p = egressPlan(mesh, buyer);
  const internal = matchEgress(p, { protocol: 'tls', port: 443, host: 'git.internal', address: '10.3.0.4' });
  assert.deepEqual(internal.result === 'tls' && internal.chain.origins, ['Egress bookbuyer/internal-git']);
  // github.com at an address of the specific chain: Envoy does not fall back to the any-address chain.
  assert.equal(
    matchEgress(p, { protocol: 'tls', port: 443, host: 'github.com', address: '10.3.0.4' }).result,
    'sni',
  );
  assert.equal(
    matchEgress(p, { protocol: 'tls', port: 443, host: 'github.com', address: '140.82.1.1' }).result,
    'tls',
  );
});

test('enableEgress: everything passes; another identity without Egress has no port', () => {
  const mc = meshConfig(DEFAULT_MESH_NAME, 'skein-system', {
    traffic: { permissive: false, enableEgress: true },
  });
  const open = egressPlan(egressMesh([mc]), buyer);
  assert.equal(matchEgress(open, { protocol: 'tcp', port: 1, address: '1.1.1.1' }).result, 'passthrough');
  const thief = egressPlan(egressMesh(), { namespace: 'bookthief', serviceAccount: 'bookthief' });
  assert.equal(matchEgress(thief, { protocol: 'http', port: 80, host: 'api.example.com' }).result, 'no-port');
});
