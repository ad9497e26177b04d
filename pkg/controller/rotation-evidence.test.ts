import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TypeUrl } from '../envoy/types.js';
import { parseProxyCommonName } from '../mesh/identity.js';
import type { EncodedResource } from '../xds/cache/encoded.js';
import type { StreamStatus } from '../xds/server/types.js';
import { proxiesBehind } from './rotation-evidence.js';

const OLD = '-----BEGIN CERTIFICATE-----\nOLDROOT\n-----END CERTIFICATE-----\n';
const NEW = '-----BEGIN CERTIFICATE-----\nNEWROOT\n-----END CERTIFICATE-----\n';
const LEAF = '-----BEGIN CERTIFICATE-----\nLEAF2\n-----END CERTIFICATE-----\n';

function stream(id: string, sds?: { sent: string; acked?: string }): StreamStatus {
  return {
    streamId: id,
    identity: parseProxyCommonName(
      `0000000${'abcd'.indexOf(id)}-0000-4000-8000-000000000000.sidecar.web.shop.cluster.local`,
    ),
    connectedAt: '',
    received: { requests: 0, bytes: 0 },
    types: sds
      ? {
          [TypeUrl.Secret]: {
            sentVersion: sds.sent,
            ...(sds.acked !== undefined ? { ackedVersion: sds.acked } : {}),
            subscribed: [],
          },
        }
      : {},
  };
}

function res(name: string, text: string): EncodedResource {
  return {
    typeUrl: TypeUrl.Secret,
    name,
    hash: name,
    framed: new Uint8Array(Buffer.from(`\x12..${text}..`)),
  };
}

const distribute = { current: [OLD, NEW], retired: [], ownCertPem: () => undefined };
const retire = { current: [NEW], retired: [OLD], ownCertPem: () => LEAF };

test('a proxy holds the stage once it ACKed SDS carrying the stage bundle (and its current certificate)', () => {
  const sent = new Map<string, EncodedResource[]>([
    ['a', [res('root-cert-for-mtls-outbound:x', OLD + NEW)]],
    ['b', [res('root-cert-for-mtls-outbound:x', OLD)]],
    ['c', [res('root-cert-for-mtls-outbound:x', OLD + NEW)]],
  ]);
  const streams = [
    stream('a', { sent: 'v2', acked: 'v2' }),
    stream('b', { sent: 'v1', acked: 'v1' }), // an old bundle
    stream('c', { sent: 'v2', acked: 'v1' }), // sent, not ACKed yet
    stream('d'), // no SDS: proxyless reads files
  ];
  assert.equal(
    proxiesBehind(streams, (id) => sent.get(id), distribute),
    2,
  );
});

test('retire: a bundle still holding the old root, or an old workload certificate, is behind', () => {
  const sent = new Map<string, EncodedResource[]>([
    ['a', [res('root-cert-for-mtls-inbound:x', NEW), res('service-cert:shop/web', LEAF)]],
    ['b', [res('root-cert-for-mtls-inbound:x', NEW + OLD), res('service-cert:shop/web', LEAF)]],
    ['c', [res('root-cert-for-mtls-inbound:x', NEW), res('service-cert:shop/web', 'LEAF1')]],
  ]);
  const streams = ['a', 'b', 'c'].map((id) => stream(id, { sent: 'v', acked: 'v' }));
  assert.equal(
    proxiesBehind(streams, (id) => sent.get(id), retire),
    2,
  );
});
