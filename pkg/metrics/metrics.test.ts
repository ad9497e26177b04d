import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { seriesValue } from '../../test/support/metrics.js';
import { TypeUrl } from '../envoy/types.js';
import { MeshMetrics, typeLabel } from './metrics.js';

describe('MeshMetrics', () => {
  it('counts what the xDS observer reports, by kind and type', async () => {
    const m = new MeshMetrics({ processMetrics: false });
    const o = m.xdsObserver;
    o.onConnect?.('sidecar');
    o.onConnect?.('sidecar');
    o.onConnect?.('grpc');
    o.onDisconnect?.('sidecar');
    assert.equal(await seriesValue(m, 'skein_proxies_connected', { kind: 'sidecar' }), 1);
    assert.equal(await seriesValue(m, 'skein_proxies_connected', { kind: 'grpc' }), 1);

    o.onResponse?.(TypeUrl.Cluster, '1');
    o.onResponse?.(TypeUrl.Cluster, '2');
    o.onResponse?.(TypeUrl.Listener, '3');
    o.onNack?.(TypeUrl.Cluster);
    o.onAck?.(TypeUrl.Listener, '3', 0.2);
    o.onAck?.(TypeUrl.Listener, '4', 3);
    assert.equal(await seriesValue(m, 'skein_xds_pushes_total', { type: 'Cluster' }), 2);
    assert.equal(await seriesValue(m, 'skein_xds_pushes_total', { type: 'Listener' }), 1);
    assert.equal(await seriesValue(m, 'skein_xds_nacks_total', { type: 'Cluster' }), 1);
    assert.equal(await seriesValue(m, 'skein_xds_nacks_total', { type: 'Listener' }), 0);
    assert.equal(await seriesValue(m, 'skein_xds_change_to_ack_seconds_count', { type: 'Listener' }), 2);
    assert.equal(await seriesValue(m, 'skein_xds_change_to_ack_seconds_sum', { type: 'Listener' }), 3.2);
    assert.equal(
      await seriesValue(m, 'skein_xds_change_to_ack_seconds_bucket', { type: 'Listener', le: '0.25' }),
      1,
    );
  });

  it('reports the soonest certificate expiry at scrape time, 0 without certificates', async () => {
    const m = new MeshMetrics({ processMetrics: false });
    let certs: Date[] = [];
    m.watchCertificateExpiry(() => certs);
    assert.match(await m.text(), /^skein_certificate_soonest_expiry_timestamp_seconds 0$/m);
    certs = [new Date(2_000_000_000_000), new Date(1_900_000_000_500), new Date(2_100_000_000_000)];
    assert.match(await m.text(), /^skein_certificate_soonest_expiry_timestamp_seconds 1900000000.5$/m);
    certs = [];
    assert.match(await m.text(), /^skein_certificate_soonest_expiry_timestamp_seconds 0$/m);
  });

  it('serves the text format with conventional names, process metrics included by default', async () => {
    const m = new MeshMetrics();
    m.announcements.inc({ kind: 'store' });
    m.registryEvents.inc({ kind: 'Service', type: 'added' });
    m.certificatesIssued.inc();
    m.certificatesRotated.inc(3);
    const text = await m.text();
    assert.match(m.contentType, /^text\/plain; version=0\.0\.4/);
    assert.match(text, /^skein_announcements_total\{kind="store"\} 1$/m);
    assert.match(text, /^skein_registry_events_total\{kind="Service",type="added"\} 1$/m);
    assert.match(text, /^skein_certificates_issued_total 1$/m);
    assert.match(text, /^skein_certificates_rotated_total 3$/m);
    assert.match(text, /^# TYPE skein_xds_change_to_ack_seconds histogram$/m);
    assert.match(text, /^process_cpu_user_seconds_total /m);
    // Each instance has its own registry: another one starts from zero.
    assert.doesNotMatch(
      await new MeshMetrics({ processMetrics: false }).text(),
      /certificates_rotated_total 3/,
    );
  });

  it('counts webhook admissions by result, every result present from the start', async () => {
    const m = new MeshMetrics({ processMetrics: false });
    assert.match(await m.text(), /^skein_webhook_admissions_total\{result="error"\} 0$/m);
    m.webhookObserver.onAdmission('injected');
    m.webhookObserver.onAdmission('skipped');
    m.webhookObserver.onAdmission('skipped');
    m.webhookObserver.onAdmission('denied');
    assert.equal(await seriesValue(m, 'skein_webhook_admissions_total', { result: 'injected' }), 1);
    assert.equal(await seriesValue(m, 'skein_webhook_admissions_total', { result: 'skipped' }), 2);
    assert.equal(await seriesValue(m, 'skein_webhook_admissions_total', { result: 'denied' }), 1);
    assert.equal(await seriesValue(m, 'skein_webhook_admissions_total', { result: 'error' }), 0);
  });

  it('labels xDS types by their short message name', () => {
    assert.equal(typeLabel(TypeUrl.Cluster), 'Cluster');
    assert.equal(typeLabel(TypeUrl.ClusterLoadAssignment), 'ClusterLoadAssignment');
    assert.equal(typeLabel(TypeUrl.Secret), 'Secret');
  });
});
