// envoy.service.metrics.v3.StreamMetricsMessage on the wire. Its metric
// families are Prometheus client_model messages (io.prometheus.client), whose
// .proto is not among @grpc/grpc-js-xds's deps, so the few fields skein reads
// are described here by number. Families are filtered by name before their
// body is decoded: a sidecar sends every stat it has used, skein keeps a few.
import protobuf from 'protobufjs';

export type MetricType = 'COUNTER' | 'GAUGE' | 'SUMMARY' | 'UNTYPED' | 'HISTOGRAM';

export interface Bucket {
  /** Inclusive upper bound (Envoy: milliseconds for `*_time` histograms). */
  upperBound: number;
  cumulativeCount: number;
}

export interface Metric {
  labels: Record<string, string>;
  counter?: number;
  gauge?: number;
  histogram?: { count: number; sum: number; buckets: Bucket[] };
}

export interface MetricFamily {
  name: string;
  type: MetricType;
  metrics: Metric[];
}

const root = protobuf.Root.fromJSON({
  nested: {
    m: {
      nested: {
        LabelPair: { fields: { name: { type: 'string', id: 1 }, value: { type: 'string', id: 2 } } },
        Value: { fields: { value: { type: 'double', id: 1 } } },
        Bucket: {
          fields: { cumulative_count: { type: 'uint64', id: 1 }, upper_bound: { type: 'double', id: 2 } },
        },
        Histogram: {
          fields: {
            sample_count: { type: 'uint64', id: 1 },
            sample_sum: { type: 'double', id: 2 },
            bucket: { rule: 'repeated', type: 'Bucket', id: 3 },
          },
        },
        Metric: {
          fields: {
            label: { rule: 'repeated', type: 'LabelPair', id: 1 },
            gauge: { type: 'Value', id: 2 },
            counter: { type: 'Value', id: 3 },
            untyped: { type: 'Value', id: 5 },
            histogram: { type: 'Histogram', id: 7 },
          },
        },
        MetricFamily: {
          fields: {
            name: { type: 'string', id: 1 },
            type: { type: 'int32', id: 3 },
            metric: { rule: 'repeated', type: 'Metric', id: 4 },
          },
        },
        Node: { fields: { id: { type: 'string', id: 1 }, cluster: { type: 'string', id: 2 } } },
        Identifier: { fields: { node: { type: 'Node', id: 1 } } },
        StreamMetricsMessage: {
          fields: {
            identifier: { type: 'Identifier', id: 1 },
            envoy_metrics: { rule: 'repeated', type: 'MetricFamily', id: 2 },
          },
        },
      },
    },
  },
});
const FamilyType = root.lookupType('m.MetricFamily');
const MessageType = root.lookupType('m.StreamMetricsMessage');
const TYPES: readonly MetricType[] = ['COUNTER', 'GAUGE', 'SUMMARY', 'UNTYPED', 'HISTOGRAM'];

interface RawFamily {
  name?: string;
  type?: number;
  metric?: {
    label?: { name?: string; value?: string }[];
    gauge?: { value?: number };
    counter?: { value?: number };
    untyped?: { value?: number };
    histogram?: {
      sample_count?: number;
      sample_sum?: number;
      bucket?: { cumulative_count?: number; upper_bound?: number }[];
    };
  }[];
}

function familyOf(raw: RawFamily): MetricFamily {
  return {
    name: raw.name ?? '',
    type: TYPES[raw.type ?? 0] ?? 'UNTYPED',
    metrics: (raw.metric ?? []).map((m) => {
      const out: Metric = { labels: {} };
      for (const l of m.label ?? []) out.labels[l.name ?? ''] = l.value ?? '';
      if (m.counter) out.counter = m.counter.value ?? 0;
      if (m.gauge) out.gauge = m.gauge.value ?? 0;
      if (m.untyped && !m.counter) out.counter = m.untyped.value ?? 0;
      if (m.histogram)
        out.histogram = {
          count: m.histogram.sample_count ?? 0,
          sum: m.histogram.sample_sum ?? 0,
          buckets: (m.histogram.bucket ?? []).map((b) => ({
            upperBound: b.upper_bound ?? 0,
            cumulativeCount: b.cumulative_count ?? 0,
          })),
        };
      return out;
    }),
  };
}

const WIRE_LEN = 2;

/**
 * The metric families of one StreamMetricsMessage whose name `wanted` accepts.
 * Each family's name is its first field (Envoy writes fields in order); a family
 * whose name comes later, or is unwanted, is skipped by its length prefix.
 * Throws on malformed bytes.
 */
export function decodeStreamMetrics(bytes: Uint8Array, wanted: (name: string) => boolean): MetricFamily[] {
  const r = protobuf.Reader.create(bytes);
  const out: MetricFamily[] = [];
  while (r.pos < r.len) {
    const tag = r.uint32();
    if (tag >>> 3 !== 2 || (tag & 7) !== WIRE_LEN) {
      r.skipType(tag & 7);
      continue;
    }
    const len = r.uint32();
    const end = r.pos + len;
    if (end > r.len) throw new Error('metric family runs past the message');
    const start = r.pos;
    let name: string | undefined;
    if (len > 0 && r.uint32() === ((1 << 3) | WIRE_LEN)) name = r.string();
    if (name === undefined || wanted(name)) {
      r.pos = start;
      out.push(familyOf(FamilyType.toObject(FamilyType.decode(r, len), { longs: Number }) as RawFamily));
    }
    r.pos = end;
  }
  return out;
}

/** Encodes a StreamMetricsMessage (test clients and tools; Envoy writes the real ones). */
export function encodeStreamMetrics(families: readonly MetricFamily[], nodeId?: string): Uint8Array {
  const msg = {
    ...(nodeId !== undefined ? { identifier: { node: { id: nodeId } } } : {}),
    envoy_metrics: families.map((f) => ({
      name: f.name,
      type: TYPES.indexOf(f.type),
      metric: f.metrics.map((m) => ({
        label: Object.entries(m.labels).map(([name, value]) => ({ name, value })),
        ...(m.counter !== undefined ? { counter: { value: m.counter } } : {}),
        ...(m.gauge !== undefined ? { gauge: { value: m.gauge } } : {}),
        ...(m.histogram
          ? {
              histogram: {
                sample_count: m.histogram.count,
                sample_sum: m.histogram.sum,
                bucket: m.histogram.buckets.map((b) => ({
                  cumulative_count: b.cumulativeCount,
                  upper_bound: b.upperBound,
                })),
              },
            }
          : {}),
      })),
    })),
  };
  return MessageType.encode(MessageType.fromObject(msg)).finish();
}
