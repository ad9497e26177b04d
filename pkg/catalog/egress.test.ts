import assert from 'node:assert/strict';
import { test } from 'node:test';
import { validateManifest } from '../registry/validate.js';
import { egressProblems, ipInRange, parseIpRange } from './egress.js';

const base = {
  apiVersion: 'policy.skein.dev/v1alpha1',
  kind: 'Egress',
  metadata: { namespace: 'shop', name: 'out' },
};

test('parseIpRange: CIDRs and bare addresses; junk refused', () => {
  assert.deepEqual(parseIpRange('10.1.0.0/16'), { address: '10.1.0.0', prefixLen: 16 });
  assert.deepEqual(parseIpRange('192.0.2.7'), { address: '192.0.2.7', prefixLen: 32 });
  assert.deepEqual(parseIpRange('2001:db8::/32'), { address: '2001:db8::', prefixLen: 32 });
  for (const bad of ['10.1.0.0/33', '300.1.1.1', 'example.com', '10.0.0.0/x'])
    assert.equal(parseIpRange(bad), undefined, bad);
});

test('an Egress is refused with the reasons: bad host, bad CIDR, http without hosts, a port twice', () => {
  const r = validateManifest({
    ...base,
    spec: {
      sources: [{ kind: 'ServiceAccount', name: 'web', namespace: 'shop' }],
      ipAddresses: ['10.0.0.0/40'],
      ports: [
        { number: 80, protocol: 'http' },
        { number: 80, protocol: 'tcp' },
      ],
    },
  });
  assert.equal(r.ok, false);
  if (r.ok) return;
  assert.match(r.reason, /ipAddresses\[0\]/);
  assert.match(r.reason, /an http port needs spec.hosts/);
  assert.match(r.reason, /port 80 is listed twice/);
  assert.deepEqual(
    egressProblems({
      ...base,
      kind: 'Egress',
      spec: { sources: [], hosts: ['bad_host'], ports: [{ number: 443, protocol: 'https' }] },
    }),
    ['spec.hosts[0]: "bad_host" is not a host name'],
  );
});

test('the CRD schema refuses an unknown protocol and a source without a namespace', () => {
  const r = validateManifest({
    ...base,
    spec: { sources: [{ kind: 'ServiceAccount', name: 'web' }], ports: [{ number: 80, protocol: 'udp' }] },
  });
  assert.equal(r.ok, false);
});

test('ipInRange: prefix bits of IPv4 and IPv6, never across families', () => {
  const r = (t: string) => parseIpRange(t) ?? assert.fail(t);
  assert.ok(ipInRange('10.1.200.3', r('10.1.0.0/16')));
  assert.ok(!ipInRange('10.2.0.1', r('10.1.0.0/16')));
  assert.ok(ipInRange('192.0.2.7', r('192.0.2.7')));
  assert.ok(!ipInRange('192.0.2.8', r('192.0.2.7')));
  assert.ok(ipInRange('8.8.8.8', r('0.0.0.0/0')));
  assert.ok(ipInRange('2001:db8::1', r('2001:db8::/32')));
  assert.ok(ipInRange('2001:db8:0:0:0:0:0:1', r('2001:db8::1/128')));
  assert.ok(!ipInRange('2001:db9::1', r('2001:db8::/32')));
  assert.ok(ipInRange('::ffff:10.1.0.1', r('::ffff:10.1.0.0/120')));
  assert.ok(!ipInRange('10.1.0.1', r('::/0')), 'IPv4 is not in an IPv6 range');
  assert.ok(!ipInRange('not-an-ip', r('0.0.0.0/0')));
});
