import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Pod } from '../model/objects.js';
import { mergeExclusions, NO_EXCLUSIONS, parseExclusions, parseMeshExclusions } from './exclusions.js';
import { sameInterception, staleRules } from './stale-rules.js';

const pod = (name: string, annotations?: Record<string, string>): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'shop', ...(annotations ? { annotations } : {}) },
  spec: {},
});

/** A pod as the injector leaves it: its annotations plus the record of what its rules came from. */
const admitted = (
  name: string,
  mesh: Parameters<typeof parseMeshExclusions>[0],
  own: Record<string, string> = {},
) =>
  pod(name, {
    ...own,
    'skein.dev/interception': JSON.stringify(
      mergeExclusions(parseMeshExclusions(mesh), parseExclusions(own)),
    ),
  });

describe('staleRules', () => {
  const before = { outboundIPRangeExclusionList: ['169.254.169.254/32'] };
  const after = { outboundIPRangeExclusionList: ['169.254.169.254/32', '10.0.0.0/8'] };

  it('lists the pods admitted before a MeshConfig change, with what they have and would get', () => {
    const pods = [admitted('old', before), admitted('new', after)];
    const stale = staleRules(pods, parseMeshExclusions(after));
    assert.deepEqual(
      stale.map((s) => s.name),
      ['old'],
    );
    assert.deepEqual(stale[0]?.admitted.outboundIpRanges, ['169.254.169.254/32']);
    assert.deepEqual(stale[0]?.now?.outboundIpRanges, ['169.254.169.254/32', '10.0.0.0/8']);
    assert.deepEqual(
      staleRules(pods, parseMeshExclusions(before)).map((s) => s.name),
      ['new'],
    );
  });

  it('an annotation edited on a running pod makes it stale; one that no longer parses says why', () => {
    const p = admitted('edited', before);
    p.metadata.annotations = { ...p.metadata.annotations, 'skein.dev/outbound-port-exclusion-list': '5432' };
    const broken = admitted('broken', before);
    broken.metadata.annotations = {
      ...broken.metadata.annotations,
      'skein.dev/outbound-port-exclusion-list': 'pg',
    };
    const stale = staleRules([p, broken], parseMeshExclusions(before));
    assert.deepEqual(
      stale.map((s) => [s.name, s.now?.outboundPorts, s.problem]),
      [
        ['broken', undefined, 'annotation skein.dev/outbound-port-exclusion-list: "pg" is not a port number'],
        ['edited', [5432], undefined],
      ],
    );
  });

  it('pods without a readable record are left out (their rules are unknown)', () => {
    const pods = [pod('unrecorded'), pod('garbled', { 'skein.dev/interception': '{"outboundPorts":"x"}' })];
    assert.deepEqual(staleRules(pods, parseMeshExclusions(after)), []);
  });

  it('order within a list does not matter; an inclusion list does', () => {
    const a = { ...NO_EXCLUSIONS, outboundPorts: [1, 2] };
    assert.ok(sameInterception(a, { ...NO_EXCLUSIONS, outboundPorts: [2, 1] }));
    assert.ok(!sameInterception(a, { ...a, outboundIpRangeInclusions: ['10.0.0.0/8'] }));
  });
});
