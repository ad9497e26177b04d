// envoy.service.metrics.v3.MetricsService on the ADS server's mTLS port: the
// sidecars' stats sink streams StreamMetricsMessages; each stream reports for
// the proxy whose client certificate opened it, and for nothing else.
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../logger/logger.js';
import type { ProxyIdentity } from '../mesh/identity.js';
import type { AuthenticatedService } from '../xds/server/types.js';
import type { EdgeStats } from './collector.js';
import { isEdgeStat } from './sample.js';
import { decodeStreamMetrics } from './wire.js';

export const METRICS_SERVICE = 'envoy.service.metrics.v3.MetricsService';
export const METRICS_STREAM_PATH = `/${METRICS_SERVICE}/StreamMetrics`;

/** Client-streaming; messages stay bytes until the handler decodes the few families it keeps. */
export const metricsServiceDefinition: grpc.ServiceDefinition = {
  StreamMetrics: {
    path: METRICS_STREAM_PATH,
    requestStream: true,
    responseStream: false,
    requestSerialize: (msg: Uint8Array): Buffer => Buffer.from(msg),
    requestDeserialize: (bytes: Buffer): Buffer => bytes,
    // StreamMetricsResponse has no fields: its encoding is empty.
    responseSerialize: (): Buffer => Buffer.alloc(0),
    responseDeserialize: (): Record<string, never> => ({}),
  },
};

export function metricsService(stats: EdgeStats, logger: Logger): AuthenticatedService {
  const log = logger.child({ component: 'edge-stats' });
  return {
    definition: metricsServiceDefinition,
    implementation: (authenticate) => ({
      StreamMetrics: (
        call: grpc.ServerReadableStream<Buffer, Record<string, never>>,
        done: grpc.sendUnaryData<Record<string, never>>,
      ) => {
        let identity: ProxyIdentity;
        try {
          identity = authenticate(call);
        } catch (err) {
          log.warn({ remote: call.getPeer() }, `refused metrics stream: ${String(err)}`);
          done({ code: grpc.status.UNAUTHENTICATED, details: String(err) });
          return;
        }
        const reporter = stats.open(identity);
        let finished = false;
        const finish = (err?: grpc.ServerErrorResponse): void => {
          if (finished) return;
          finished = true;
          reporter.close();
          done(err ?? null, {});
        };
        call.on('data', (bytes: Buffer) => {
          try {
            reporter.report(decodeStreamMetrics(bytes, isEdgeStat));
          } catch (err) {
            log.warn({ proxy: identity.cn }, `metrics stream ended: undecodable message (${String(err)})`);
            finish({
              name: 'InvalidArgument',
              message: 'undecodable StreamMetricsMessage',
              code: grpc.status.INVALID_ARGUMENT,
            });
          }
        });
        call.on('end', () => finish());
        call.on('cancelled', () => finish());
        call.on('error', () => finish());
      },
    }),
  };
}
