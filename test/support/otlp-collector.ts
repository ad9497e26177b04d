// An OpenTelemetry collector for the tests: the OTLP/gRPC trace service
// (opentelemetry.proto.collector.trace.v1.TraceService/Export) that Envoy's
// OpenTelemetry tracer calls, kept in memory. Only the fields the tests read
// are declared (field numbers from opentelemetry-proto's trace.proto,
// common.proto, resource.proto and trace_service.proto); protobuf decoding
// skips the rest. The tracer under test is the real Envoy.
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';

const root = protobuf.Root.fromJSON({
  nested: {
    otlp: {
      nested: {
        ExportTraceServiceRequest: {
          fields: { resourceSpans: { rule: 'repeated', type: 'ResourceSpans', id: 1 } },
        },
        ResourceSpans: {
          fields: {
            resource: { type: 'Resource', id: 1 },
            scopeSpans: { rule: 'repeated', type: 'ScopeSpans', id: 2 },
          },
        },
        Resource: { fields: { attributes: { rule: 'repeated', type: 'KeyValue', id: 1 } } },
        KeyValue: { fields: { key: { type: 'string', id: 1 }, value: { type: 'AnyValue', id: 2 } } },
        AnyValue: { fields: { stringValue: { type: 'string', id: 1 } } },
        ScopeSpans: { fields: { spans: { rule: 'repeated', type: 'Span', id: 2 } } },
        Span: {
          fields: {
            traceId: { type: 'bytes', id: 1 },
            spanId: { type: 'bytes', id: 2 },
            parentSpanId: { type: 'bytes', id: 4 },
            name: { type: 'string', id: 5 },
            kind: { type: 'int32', id: 6 },
            attributes: { rule: 'repeated', type: 'KeyValue', id: 9 },
          },
        },
      },
    },
  },
});
const Request = root.lookupType('otlp.ExportTraceServiceRequest');

const EXPORT_PATH = '/opentelemetry.proto.collector.trace.v1.TraceService/Export';
/** SpanKind (trace.proto). */
const KINDS: Record<number, string> = { 1: 'INTERNAL', 2: 'SERVER', 3: 'CLIENT' };

interface KeyValue {
  key?: string;
  value?: { stringValue?: string };
}
interface DecodedRequest {
  resourceSpans?: {
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: {
      spans?: {
        traceId?: Uint8Array;
        spanId?: Uint8Array;
        name?: string;
        kind?: number;
        attributes?: KeyValue[];
      }[];
    }[];
  }[];
}

/** One span as the tests read it. */
export interface OtlpSpan {
  serviceName: string;
  traceId: string;
  spanId: string;
  kind: string;
  attributes: Record<string, string>;
}

const attrs = (kvs: KeyValue[] = []): Record<string, string> =>
  Object.fromEntries(kvs.map((kv) => [kv.key ?? '', kv.value?.stringValue ?? '']));
const hex = (b: Uint8Array | undefined) => Buffer.from(b ?? []).toString('hex');

export class OtlpCollector {
  private constructor(
    private readonly server: grpc.Server,
    readonly port: number,
    /** Every span received, in arrival order. */
    readonly spans: readonly OtlpSpan[],
  ) {}

  static async start(host: string): Promise<OtlpCollector> {
    const server = new grpc.Server();
    const spans: OtlpSpan[] = [];
    const raw = (b: Buffer) => b;
    server.addService(
      {
        Export: {
          path: EXPORT_PATH,
          requestStream: false,
          responseStream: false,
          requestSerialize: raw,
          requestDeserialize: raw,
          responseSerialize: raw,
          responseDeserialize: raw,
        },
      },
      {
        Export: (call: grpc.ServerUnaryCall<Buffer, Buffer>, done: grpc.sendUnaryData<Buffer>) => {
          const req = Request.toObject(Request.decode(call.request)) as DecodedRequest;
          for (const rs of req.resourceSpans ?? []) {
            const serviceName = attrs(rs.resource?.attributes)['service.name'] ?? '';
            for (const ss of rs.scopeSpans ?? [])
              for (const s of ss.spans ?? [])
                spans.push({
                  serviceName,
                  traceId: hex(s.traceId),
                  spanId: hex(s.spanId),
                  kind: KINDS[s.kind ?? 0] ?? String(s.kind),
                  attributes: attrs(s.attributes),
                });
          }
          // ExportTraceServiceResponse with no partial_success: the empty message.
          done(null, Buffer.alloc(0));
        },
      },
    );
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync(`${host}:0`, grpc.ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
    return new OtlpCollector(server, port, spans);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.tryShutdown(() => resolve()));
  }
}
