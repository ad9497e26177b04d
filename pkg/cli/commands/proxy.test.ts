import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TypeUrl } from '../../envoy/types.js';
import { parseDebugProxies, proxyStatusText } from './proxy.js';

const body = [
  {
    streamId: 's-1',
    identity: { cn: 'u1.sidecar.buyer.shop.cluster.local', uuid: 'u1' },
    connectedAt: '2026-01-01T00:00:00.000Z',
    pod: { namespace: 'shop', name: 'buyer-1' },
    types: {
      [TypeUrl.Listener]: { sentVersion: '3', ackedVersion: '2', syncState: 'STALE', subscribed: '*' },
      [TypeUrl.Cluster]: { sentVersion: '4', ackedVersion: '4', syncState: 'SYNCED', subscribed: '*' },
      [TypeUrl.RouteConfiguration]: {
        sentVersion: '5',
        ackedVersion: '4',
        nackedVersion: '5',
        lastNackMessage: 'bad regex',
        syncState: 'NACKED',
        subscribed: ['rds-inbound.8080'],
      },
    },
  },
];

test('proxy status: header lines, then one row per type in push order', () => {
  const streams = parseDebugProxies(body);
  assert.equal(
    proxyStatusText(streams),
    [
      'PROXY   u1.sidecar.buyer.shop.cluster.local',
      'POD     shop/buyer-1',
      'STREAM  s-1 (state of the world), connected 2026-01-01T00:00:00.000Z',
      '',
      'TYPE  SENT  ACKED  STATE   LAST NACK',
      'CDS   4     4      SYNCED',
      'LDS   3     2      STALE',
      'RDS   5     4      NACKED  bad regex',
      '',
    ].join('\n'),
  );
});

test('/debug/proxies that is not a list is refused; missing fields do not crash', () => {
  assert.throws(() => parseDebugProxies({}), /did not answer a list/);
  const [s] = parseDebugProxies([{ streamId: 'x', protocol: 'delta' }]);
  assert.equal(s?.protocol, 'delta');
  assert.match(proxyStatusText(s ? [s] : []), /Delta xDS[\s\S]*no xDS type requested yet/);
});
