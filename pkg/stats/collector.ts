// The controller's per-edge figures: each authenticated metrics stream reports
// for its own proxy; windows are kept per (proxy, upstream service) pair and
// summed into edges (source identity → destination service) when asked.
import { identityKey, type ProxyIdentity } from '../mesh/identity.js';
import {
  type SampleDelta,
  sampleDelta,
  type UpstreamSample,
  upstreamSamples,
  upstreamService,
} from './sample.js';
import { addSums, RollingWindow, summarize, type WindowSummary, type WindowSums } from './window.js';
import type { MetricFamily } from './wire.js';

export interface EdgeStatsOptions {
  /** Whether `<ns>/<name>` is a service of the mesh now; figures for anything else are dropped. */
  isService(key: string): boolean;
  /** Default 20,000 (proxy, upstream) pairs; further pairs are dropped and counted. */
  maxPairs?: number;
  /** Default 10 s slots, 6 of them: a one-minute window. */
  slotMs?: number;
  slots?: number;
  /** Baselines one stream may hold (one per upstream cluster it reports), default 512. */
  maxBaselinesPerStream?: number;
  now?: () => number;
}

/** One proxy's figures towards one destination service. */
export interface PairStats extends WindowSummary {
  service: string;
  /** Since the controller first heard of the pair. */
  total: { requests: number; responses: number; errors: number };
}

export interface ProxyStats {
  uuid: string;
  identity: string;
  /** Open metrics streams from it (normally 1). */
  streams: number;
  upstreams: PairStats[];
}

export interface EdgeSummary extends WindowSummary {
  /** `<ns>/<serviceAccount>` of the callers. */
  source: string;
  /** `<ns>/<name>` of the service called. */
  destination: string;
  /** Proxies of the source that reported for it within the window. */
  proxies: number;
  total: { requests: number; responses: number; errors: number };
}

interface Pair {
  identity: ProxyIdentity;
  service: string;
  window: RollingWindow;
}

/** What one open stream reports through. */
export interface StatsReporter {
  report(families: readonly MetricFamily[]): void;
  close(): void;
}

const ZERO: UpstreamSample = { requests: 0, responses: [0, 0, 0, 0, 0] };

export class EdgeStats {
  private readonly pairs = new Map<string, Pair>();
  private readonly streamsByProxy = new Map<string, number>();
  private readonly maxPairs: number;
  private readonly slotMs: number;
  private readonly slots: number;
  private readonly maxBaselines: number;
  private readonly now: () => number;
  /** Reports dropped: the pair cap was reached (counted for /metrics). */
  droppedPairs = 0;
  /** Bumped on every report, so a watcher can tell whether anything came in. */
  version = 0;
  private sweptAt = 0;

  constructor(private readonly opts: EdgeStatsOptions) {
    this.maxPairs = opts.maxPairs ?? 20_000;
    this.slotMs = opts.slotMs ?? 10_000;
    this.slots = opts.slots ?? 6;
    this.maxBaselines = opts.maxBaselinesPerStream ?? 512;
    this.now = opts.now ?? Date.now;
  }

  get pairCount(): number {
    return this.pairs.size;
  }

  get windowMs(): number {
    return this.slotMs * this.slots;
  }

  /** A metrics stream of `identity` (from its client certificate) opened. */
  open(identity: ProxyIdentity): StatsReporter {
    this.streamsByProxy.set(identity.uuid, (this.streamsByProxy.get(identity.uuid) ?? 0) + 1);
    // Per upstream cluster, the cumulative figures this stream last sent.
    const baselines = new Map<string, UpstreamSample>();
    let open = true;
    let first = true;
    return {
      report: (families) => {
        if (!open) return;
        this.version++;
        const now = this.now();
        for (const [cluster, sample] of upstreamSamples(families)) {
          const up = upstreamService(cluster);
          if (up === undefined || !this.opts.isService(up.service)) continue;
          const prev = baselines.get(cluster);
          if (prev === undefined && baselines.size >= this.maxBaselines) continue;
          baselines.set(cluster, sample);
          // The first message carries what the sidecar counted before this stream: a baseline.
          // Envoy sends every stat it has used, so a cluster new later on started from zero.
          const delta = sampleDelta(prev ?? (first ? undefined : ZERO), sample);
          if (delta !== undefined) this.add(identity, up.service, now, delta);
        }
        first = false;
        this.evict(now);
      },
      close: () => {
        if (!open) return;
        open = false;
        const n = (this.streamsByProxy.get(identity.uuid) ?? 1) - 1;
        if (n > 0) this.streamsByProxy.set(identity.uuid, n);
        else this.streamsByProxy.delete(identity.uuid);
      },
    };
  }

  private add(identity: ProxyIdentity, service: string, now: number, delta: SampleDelta): void {
    const key = `${identity.uuid} ${service}`;
    let pair = this.pairs.get(key);
    if (pair === undefined) {
      if (this.pairs.size >= this.maxPairs) {
        this.droppedPairs++;
        return;
      }
      pair = { identity, service, window: new RollingWindow(this.slotMs, this.slots, now) };
      this.pairs.set(key, pair);
    }
    pair.window.add(now, delta);
  }

  /** Pairs silent for a whole window go (their figures would all be zero). */
  private evict(now: number): void {
    if (now - this.sweptAt < this.slotMs) return;
    this.sweptAt = now;
    for (const [k, p] of this.pairs) if (now - p.window.lastSeenMs > this.windowMs) this.pairs.delete(k);
  }

  /** One proxy's figures per destination service; undefined when it never reported (or went silent). */
  proxy(uuid: string): ProxyStats | undefined {
    const now = this.now();
    let identity: ProxyIdentity | undefined;
    const upstreams: PairStats[] = [];
    for (const p of this.pairs.values()) {
      if (p.identity.uuid !== uuid || now - p.window.lastSeenMs > this.windowMs) continue;
      identity = p.identity;
      upstreams.push({
        service: p.service,
        ...summarize(p.window.sums(now)),
        total: { ...p.window.totals },
      });
    }
    if (identity === undefined) return undefined;
    upstreams.sort((a, b) => a.service.localeCompare(b.service));
    return {
      uuid,
      identity: identityKey(identity),
      streams: this.streamsByProxy.get(uuid) ?? 0,
      upstreams,
    };
  }

  /** Every edge with figures in the window, by source then destination. */
  edges(): EdgeSummary[] {
    const now = this.now();
    const edges = new Map<
      string,
      { source: string; destination: string; sums: WindowSums; proxies: number; total: PairStats['total'] }
    >();
    for (const p of this.pairs.values()) {
      if (now - p.window.lastSeenMs > this.windowMs) continue;
      const source = identityKey(p.identity);
      const k = `${source} ${p.service}`;
      const sums = p.window.sums(now);
      const e = edges.get(k);
      if (e === undefined) {
        edges.set(k, {
          source,
          destination: p.service,
          sums,
          proxies: 1,
          total: { ...p.window.totals },
        });
        continue;
      }
      addSums(e.sums, sums);
      e.sums.coveredMs = Math.max(e.sums.coveredMs, sums.coveredMs);
      e.proxies++;
      e.total.requests += p.window.totals.requests;
      e.total.responses += p.window.totals.responses;
      e.total.errors += p.window.totals.errors;
    }
    return [...edges.values()]
      .map((e) => ({
        source: e.source,
        destination: e.destination,
        proxies: e.proxies,
        ...summarize(e.sums),
        total: e.total,
      }))
      .sort((a, b) => a.source.localeCompare(b.source) || a.destination.localeCompare(b.destination));
  }
}
