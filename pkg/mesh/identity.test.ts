import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseProxyCommonName, proxyCommonName, spiffeId } from './identity.js';

const uuid = '6d1f3c58-0b0e-4c8a-9a43-3f6f0c2b9a11';

test('parses a proxy CN; the trust domain may contain dots', () => {
  const id = parseProxyCommonName(`${uuid}.sidecar.bookbuyer.bookstore.cluster.local`);
  assert.deepEqual(
    { ...id },
    {
      uuid,
      kind: 'sidecar',
      serviceAccount: 'bookbuyer',
      namespace: 'bookstore',
      trustDomain: 'cluster.local',
      cn: `${uuid}.sidecar.bookbuyer.bookstore.cluster.local`,
    },
  );
  assert.equal(proxyCommonName(id), id.cn);
  assert.equal(spiffeId(id, 'cluster.local'), 'spiffe://cluster.local/ns/bookstore/sa/bookbuyer');
});

test('rejects malformed CNs with a reason', () => {
  assert.throws(() => parseProxyCommonName('bookbuyer.bookstore'), /expected/);
  assert.throws(() => parseProxyCommonName(`not-a-uuid.sidecar.sa.ns.td`), /not a UUID/);
  assert.throws(() => parseProxyCommonName(`${uuid}.mesh-gateway.sa.ns.td`), /unknown proxy kind/);
  assert.throws(() => parseProxyCommonName(`${uuid}.grpc.Bad_SA.ns.td`), /service account/);
});
