import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { meshConfig } from '../../test/support/catalog-fixtures.js';
import { buildMeshView } from '../catalog/view.js';
import { NO_EXCLUSIONS } from '../injector/exclusions.js';
import { DEFAULT_SIDECAR_SETTINGS } from '../injector/sidecar-settings.js';
import { DEFAULT_CERT_VALIDITY_MS, DEFAULT_MIN_PUSH_INTERVAL_MS } from '../mesh/constants.js';
import { MeshStore } from '../registry/store.js';
import { meshSettings } from './settings.js';

function viewWith(spec: Parameters<typeof meshConfig>[2] | undefined) {
  const store = new MeshStore();
  if (spec) store.upsert(meshConfig('skein', 'skein-system', spec));
  return buildMeshView(store, { meshName: 'skein' });
}

describe('meshSettings', () => {
  it('uses the defaults without a MeshConfig', () => {
    const ignored: string[] = [];
    assert.deepEqual(
      meshSettings(viewWith(undefined), (f) => ignored.push(f)),
      {
        validityMs: DEFAULT_CERT_VALIDITY_MS,
        bootstrapValidityMs: DEFAULT_CERT_VALIDITY_MS,
        minPushIntervalMs: DEFAULT_MIN_PUSH_INTERVAL_MS,
        sidecar: { xdsTransport: 'sotw', maxDownstreamConnections: 50_000, logLevel: 'warn' },
        exclusions: NO_EXCLUSIONS,
      },
    );
    assert.deepEqual(ignored, []);
  });

  it('reads MeshConfig durations', () => {
    const s = meshSettings(
      viewWith({
        certificate: { validity: '90m', bootstrapValidity: '12h' },
        xds: { minPushInterval: '250ms' },
      }),
      () => assert.fail('nothing should be ignored'),
    );
    assert.deepEqual(s, {
      validityMs: 90 * 60_000,
      bootstrapValidityMs: 12 * 3_600_000,
      minPushIntervalMs: 250,
      sidecar: DEFAULT_SIDECAR_SETTINGS,
      exclusions: NO_EXCLUSIONS,
    });
  });

  it('reports an unparsable value by field and falls back to its default', () => {
    const ignored: [string, string][] = [];
    const s = meshSettings(
      viewWith({ certificate: { validity: 'a day' }, xds: { minPushInterval: '50ms' } }),
      (f, r) => ignored.push([f, r]),
    );
    assert.equal(s.validityMs, DEFAULT_CERT_VALIDITY_MS);
    assert.equal(s.minPushIntervalMs, 50);
    assert.equal(ignored.length, 1);
    assert.equal(ignored[0]?.[0], 'certificate.validity');
    assert.match(ignored[0]?.[1] ?? '', /a day/);
  });

  it('reads the sidecar defaults for the injector', () => {
    const s = meshSettings(
      viewWith({ sidecar: { xdsTransport: 'delta', maxDownstreamConnections: 1500, logLevel: 'debug' } }),
      () => assert.fail('nothing should be ignored'),
    );
    assert.deepEqual(s.sidecar, { xdsTransport: 'delta', maxDownstreamConnections: 1500, logLevel: 'debug' });
    assert.deepEqual(
      meshSettings(viewWith({ sidecar: { maxDownstreamConnections: 3 } }), () => assert.fail('ignored'))
        .sidecar,
      { xdsTransport: 'sotw', maxDownstreamConnections: 3, logLevel: 'warn' },
    );
  });

  it('falls back to the sidecar defaults for values Envoy would not take, naming the field', () => {
    const ignored: [string, string][] = [];
    const s = meshSettings(
      viewWith({ sidecar: { xdsTransport: 'incremental', maxDownstreamConnections: 0, logLevel: 'loud' } }),
      (f, r) => ignored.push([f, r]),
    );
    assert.deepEqual(s.sidecar, DEFAULT_SIDECAR_SETTINGS);
    assert.deepEqual(ignored, [
      ['sidecar.xdsTransport', '"incremental": use "sotw" or "delta"'],
      ['sidecar.maxDownstreamConnections', '0: use a whole number from 1 to 2147483647'],
      ['sidecar.logLevel', '"loud": use one of trace, debug, info, warning, warn, error, critical, off'],
    ]);
  });

  it('reads the interception lists for the injector', () => {
    const s = meshSettings(
      viewWith({
        traffic: {
          outboundIPRangeExclusionList: ['169.254.169.254'],
          outboundIPRangeInclusionList: ['10.96.0.0/12'],
          outboundPortExclusionList: [5432],
          inboundPortExclusionList: [8443],
        },
      }),
      () => assert.fail('nothing should be ignored'),
    );
    assert.deepEqual(s.exclusions, {
      outboundPorts: [5432],
      inboundPorts: [8443],
      outboundIpRanges: ['169.254.169.254/32'],
      outboundIpRangeInclusions: ['10.96.0.0/12'],
    });
  });

  it('a bad list entry that got this far is reported by field and value, and no list applies', () => {
    const ignored: [string, string][] = [];
    const s = meshSettings(
      viewWith({
        traffic: { outboundIPRangeExclusionList: ['10.0.0.0/8'], outboundPortExclusionList: [5432, 0] },
      }),
      (f, r) => ignored.push([f, r]),
    );
    assert.deepEqual(s.exclusions, NO_EXCLUSIONS);
    assert.deepEqual(ignored, [['traffic.outboundPortExclusionList[1]', '"0" is not a port in 1-65535']]);
  });
});
