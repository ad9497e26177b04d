// What one metrics message says about each upstream cluster of the sender:
// Envoy's `cluster.<name>.upstream_rq_total`, `.upstream_rq_<N>xx` (counters)
// and `.upstream_rq_time` (a histogram), all cumulative since the sidecar started.
import { bucketDelta, type Counts } from './histogram.js';
import type { Bucket, MetricFamily } from './wire.js';

const PREFIX = 'cluster.';
const TOTAL = '.upstream_rq_total';
const TIME = '.upstream_rq_time';
const CLASS = /\.upstream_rq_([1-5])xx$/;

/** The families skein reads; everything else is skipped undecoded (wire.ts). */
export function isEdgeStat(name: string): boolean {
  return name.startsWith(PREFIX) && (name.endsWith(TOTAL) || name.endsWith(TIME) || CLASS.test(name));
}

export interface UpstreamSample {
  /** Requests started. */
  requests: number;
  /** Responses completed, by class: index 0 = 1xx … 4 = 5xx. */
  responses: [number, number, number, number, number];
  /** Request latency (ms) since the sidecar started: cumulative buckets. */
  latency?: { count: number; buckets: Bucket[] };
}

function sampleOf(out: Map<string, UpstreamSample>, cluster: string): UpstreamSample {
  let s = out.get(cluster);
  if (s === undefined) {
    s = { requests: 0, responses: [0, 0, 0, 0, 0] };
    out.set(cluster, s);
  }
  return s;
}

/** Per upstream cluster name, what the families carry. */
export function upstreamSamples(families: readonly MetricFamily[]): Map<string, UpstreamSample> {
  const out = new Map<string, UpstreamSample>();
  for (const f of families) {
    if (!f.name.startsWith(PREFIX)) continue;
    const m = f.metrics[0];
    if (m === undefined) continue;
    const cls = CLASS.exec(f.name);
    if (f.name.endsWith(TOTAL) && m.counter !== undefined) {
      sampleOf(out, f.name.slice(PREFIX.length, -TOTAL.length)).requests += m.counter;
    } else if (cls?.[1] !== undefined && m.counter !== undefined) {
      const s = sampleOf(out, f.name.slice(PREFIX.length, cls.index));
      const k = Number(cls[1]) - 1;
      s.responses[k] = (s.responses[k] ?? 0) + m.counter;
    } else if (f.name.endsWith(TIME) && m.histogram !== undefined) {
      sampleOf(out, f.name.slice(PREFIX.length, -TIME.length)).latency = {
        count: m.histogram.count,
        buckets: m.histogram.buckets,
      };
    }
  }
  return out;
}

/** The mesh service and port of an outbound cluster `<ns>/<svc>|<port>`; undefined for any other cluster. */
export function upstreamService(cluster: string): { service: string; port: number } | undefined {
  const m = /^([a-z0-9-]+\/[a-z0-9-]+)\|(\d+)$/.exec(cluster);
  if (m?.[1] === undefined || m[2] === undefined) return undefined;
  return { service: m[1], port: Number(m[2]) };
}

export interface SampleDelta {
  requests: number;
  responses: number[];
  latency?: Counts;
}

/**
 * What happened between two samples of one cluster from one stream; undefined
 * for the first (a baseline: the sidecar counted since it started). A counter
 * that went down means the sidecar's stats restarted: then `cur` is the delta.
 */
export function sampleDelta(prev: UpstreamSample | undefined, cur: UpstreamSample): SampleDelta | undefined {
  if (prev === undefined) return undefined;
  const reset = prev.requests > cur.requests || prev.responses.some((c, i) => c > (cur.responses[i] ?? 0));
  const latency = cur.latency && bucketDelta(reset ? undefined : prev.latency, cur.latency);
  return {
    requests: cur.requests - (reset ? 0 : prev.requests),
    responses: cur.responses.map((c, i) => c - (reset ? 0 : (prev.responses[i] ?? 0))),
    ...(latency ? { latency } : {}),
  };
}
