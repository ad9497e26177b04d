import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  ListEntryError,
  mergeExclusions,
  NO_EXCLUSIONS,
  parseExclusions,
  parseMeshExclusions,
} from './exclusions.js';

const INCLUDE = 'skein.dev/outbound-ip-range-inclusion-list';

describe('parseMeshExclusions (MeshConfig spec.traffic)', () => {
  it('reads the four lists, normalising addresses to CIDRs and dropping duplicates', () => {
    assert.deepEqual(
      parseMeshExclusions({
        outboundIPRangeExclusionList: ['169.254.169.254', '10.0.0.0/8', '169.254.169.254/32'],
        outboundIPRangeInclusionList: ['10.96.0.0/12'],
        outboundPortExclusionList: [5432, 5432, 6379],
        inboundPortExclusionList: [8443],
      }),
      {
        outboundPorts: [5432, 6379],
        inboundPorts: [8443],
        outboundIpRanges: ['169.254.169.254/32', '10.0.0.0/8'],
        outboundIpRangeInclusions: ['10.96.0.0/12'],
      },
    );
  });

  it('no traffic section, or empty lists: nothing excluded and no inclusion list', () => {
    assert.deepEqual(parseMeshExclusions(undefined), NO_EXCLUSIONS);
    assert.deepEqual(parseMeshExclusions({ outboundIPRangeInclusionList: [] }), NO_EXCLUSIONS);
  });

  it('names the field, the index and the value of a bad entry', () => {
    const bad: [Parameters<typeof parseMeshExclusions>[0], string][] = [
      [
        { outboundIPRangeExclusionList: ['10.0.0.0/8', '10.0.0.0/33'] },
        'spec.traffic.outboundIPRangeExclusionList[1]: "10.0.0.0/33" has a prefix length outside 0-32',
      ],
      [
        { outboundIPRangeInclusionList: ['fd00::/8'] },
        'spec.traffic.outboundIPRangeInclusionList[0]: "fd00::/8" is IPv6; only IPv4 ranges are supported (the rules are IPv4 iptables)',
      ],
      [
        { outboundIPRangeExclusionList: ['metadata.google.internal'] },
        'spec.traffic.outboundIPRangeExclusionList[0]: "metadata.google.internal" is not an IPv4 address or CIDR',
      ],
      [
        { outboundPortExclusionList: [80, 0] },
        'spec.traffic.outboundPortExclusionList[1]: "0" is not a port in 1-65535',
      ],
      [
        { inboundPortExclusionList: [70000] },
        'spec.traffic.inboundPortExclusionList[0]: "70000" is not a port in 1-65535',
      ],
      [
        { inboundPortExclusionList: [80.5] },
        'spec.traffic.inboundPortExclusionList[0]: "80.5" is not a port number',
      ],
    ];
    for (const [traffic, message] of bad) {
      assert.throws(
        () => parseMeshExclusions(traffic),
        (err: unknown) => err instanceof ListEntryError && err.message === message,
        message,
      );
    }
  });
});

describe('the inclusion annotation', () => {
  it('absent: the pod has no inclusion list of its own', () => {
    assert.equal(parseExclusions({}).outboundIpRangeInclusions, undefined);
  });

  it('present: its ranges, validated like the exclusion annotations', () => {
    assert.deepEqual(
      parseExclusions({ [INCLUDE]: '10.96.0.0/12, 10.244.0.0/16,' }).outboundIpRangeInclusions,
      ['10.96.0.0/12', '10.244.0.0/16'],
    );
    assert.throws(() => parseExclusions({ [INCLUDE]: '10.96.0.0/40' }), {
      name: 'InjectionError',
      message:
        /^annotation skein\.dev\/outbound-ip-range-inclusion-list: "10\.96\.0\.0\/40" has a prefix length/,
    });
  });

  it('present but empty: an empty list of its own (it lifts the mesh list when merged)', () => {
    assert.deepEqual(parseExclusions({ [INCLUDE]: '' }).outboundIpRangeInclusions, []);
  });
});

describe('mergeExclusions', () => {
  const mesh = parseMeshExclusions({
    outboundIPRangeExclusionList: ['169.254.169.254/32'],
    outboundIPRangeInclusionList: ['10.96.0.0/12'],
    outboundPortExclusionList: [5432],
    inboundPortExclusionList: [8443],
  });

  it('exclusions are the union of the mesh and the pod (mesh first, no duplicates)', () => {
    const pod = parseExclusions({
      'skein.dev/outbound-ip-range-exclusion-list': '192.168.0.0/16,169.254.169.254',
      'skein.dev/outbound-port-exclusion-list': '6379,5432',
      'skein.dev/inbound-port-exclusion-list': '9000',
    });
    assert.deepEqual(mergeExclusions(mesh, pod), {
      outboundPorts: [5432, 6379],
      inboundPorts: [8443, 9000],
      outboundIpRanges: ['169.254.169.254/32', '192.168.0.0/16'],
      outboundIpRangeInclusions: ['10.96.0.0/12'],
    });
  });

  it("a pod's inclusion list replaces the mesh's; an empty one lifts it; none keeps it", () => {
    const merged = (a: Record<string, string>) => mergeExclusions(mesh, parseExclusions(a));
    assert.deepEqual(merged({ [INCLUDE]: '10.244.0.0/16' }).outboundIpRangeInclusions, ['10.244.0.0/16']);
    assert.equal(merged({ [INCLUDE]: '' }).outboundIpRangeInclusions, undefined);
    assert.deepEqual(merged({}).outboundIpRangeInclusions, ['10.96.0.0/12']);
    assert.deepEqual(mergeExclusions(NO_EXCLUSIONS, NO_EXCLUSIONS), NO_EXCLUSIONS);
  });
});
