// A test process speaking envoy.service.metrics.v3.MetricsService to the
// controller's mTLS port, as a sidecar's stats sink does (the real-Envoy proof
// is test/sidecar/stats.test.ts): for checks that need figures on demand.
import * as grpc from '@grpc/grpc-js';
import { METRICS_STREAM_PATH } from '../../pkg/stats/service.js';
import { encodeStreamMetrics, type MetricFamily } from '../../pkg/stats/wire.js';

export interface ClientCert {
  caPem: string;
  certPem: string;
  keyPem: string;
}

export class MetricsClient {
  private readonly client: grpc.Client;
  private readonly call: grpc.ClientWritableStream<Uint8Array>;

  constructor(address: string, cert: ClientCert) {
    this.client = new grpc.Client(
      address,
      grpc.credentials.createSsl(
        Buffer.from(cert.caPem),
        Buffer.from(cert.keyPem),
        Buffer.from(cert.certPem),
      ),
      { 'grpc.ssl_target_name_override': 'localhost' },
    );
    this.call = this.client.makeClientStreamRequest(
      METRICS_STREAM_PATH,
      (m: Uint8Array) => Buffer.from(m),
      () => ({}),
      () => undefined,
    );
  }

  /** One flush: cumulative counters of one upstream cluster (`<ns>/<svc>|<port>`). */
  send(cluster: string, requests: number, ok: number, failed: number): void {
    const c = (suffix: string, value: number): MetricFamily => ({
      name: `cluster.${cluster}.${suffix}`,
      type: 'COUNTER',
      metrics: [{ labels: {}, counter: value }],
    });
    this.call.write(
      encodeStreamMetrics([
        c('upstream_rq_total', requests),
        c('upstream_rq_2xx', ok),
        c('upstream_rq_5xx', failed),
      ]),
    );
  }

  close(): void {
    this.call.end();
    this.client.close();
  }
}
