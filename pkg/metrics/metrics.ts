import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { type RotationStage, stageNumber } from '../certificate/rotation.js';
import type { AdmissionResult, WebhookObserver } from '../injector/webhook.js';
import type { ProxyKind } from '../mesh/constants.js';
import type { XdsObserver } from '../xds/server/observer.js';

/** The per-edge figures /metrics shows (pkg/stats' EdgeStats). */
export interface EdgeFigures {
  edges: readonly { source: string; destination: string; rps: number; successRate?: number }[];
  pairs: number;
  dropped: number;
}

export interface MeshMetricsOptions {
  /** Add the process metrics (CPU, memory, event loop lag, ...); default true. */
  processMetrics?: boolean;
}

// Convergence runs from milliseconds (a quiet mesh) to the push window plus a
// slow proxy; the top buckets catch proxies that sit on a response.
const ADMISSION_RESULTS: readonly AdmissionResult[] = ['injected', 'skipped', 'denied', 'error'];

const CONVERGENCE_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/**
 * The controller's Prometheus metrics, in a registry of their own (not
 * prom-client's global one), so tests and several controllers in one process
 * do not collide. Names follow Prometheus conventions: `skein_` prefix, base
 * units (seconds), `_total` for counters.
 */
export class MeshMetrics {
  readonly registry = new Registry();
  readonly proxiesConnected: Gauge<'kind'>;
  readonly xdsPushes: Counter<'type'>;
  readonly xdsNacks: Counter<'type'>;
  readonly xdsChangeToAck: Histogram<'type'>;
  readonly xdsStreamsRefused: Counter<'reason'>;
  readonly xdsRequestsIgnored: Counter<'reason'>;
  readonly xdsRefused: Counter<'type' | 'reason'>;
  readonly announcements: Counter<'kind'>;
  readonly announcementsCoalesced: Counter;
  readonly watchRestarts: Counter<'type' | 'reason'>;
  readonly leader: Gauge;
  readonly registryEvents: Counter<'kind' | 'type'>;
  readonly certificatesIssued: Counter;
  readonly certificatesRotated: Counter;
  readonly certificateSoonestExpiry: Gauge;
  readonly webhookAdmissions: Counter<'result'>;
  private soonestExpiry: () => Date | undefined = () => undefined;
  private caRotation: () => { stage: RotationStage | undefined; pending: number } = () => ({
    stage: undefined,
    pending: 0,
  });
  readonly invalidObjects: Gauge;
  readonly policyProblems: Gauge;
  readonly edgeRequestRate: Gauge<'source' | 'destination'>;
  readonly edgeSuccessRatio: Gauge<'source' | 'destination'>;
  readonly edgeStatsPairs: Gauge;
  readonly edgeStatsDropped: Gauge;
  private edgeFigures: () => EdgeFigures = () => ({ edges: [], pairs: 0, dropped: 0 });
  private problemCounts: (type: 'invalid-object' | 'policy') => ReadonlyMap<string, number> = () => new Map();

  constructor(opts: MeshMetricsOptions = {}) {
    const registers = [this.registry];
    this.proxiesConnected = new Gauge({
      name: 'skein_proxies_connected',
      help: 'Proxies with an open ADS stream, by proxy kind.',
      labelNames: ['kind'],
      registers,
    });
    this.xdsPushes = new Counter({
      name: 'skein_xds_pushes_total',
      help: 'xDS responses sent to proxies, by resource type.',
      labelNames: ['type'],
      registers,
    });
    this.xdsNacks = new Counter({
      name: 'skein_xds_nacks_total',
      help: 'xDS responses proxies rejected (NACK), by resource type.',
      labelNames: ['type'],
      registers,
    });
    this.xdsChangeToAck = new Histogram({
      name: 'skein_xds_change_to_ack_seconds',
      help: 'Time from the change (or request) that caused an xDS response to the proxy ACKing it, by resource type.',
      labelNames: ['type'],
      buckets: CONVERGENCE_BUCKETS,
      registers,
    });
    this.xdsStreamsRefused = new Counter({
      name: 'skein_xds_streams_refused_total',
      help: 'ADS streams ended for going over a per-stream limit or sending an undecodable request, by reason.',
      labelNames: ['reason'],
      registers,
    });
    this.xdsRefused = new Counter({
      name: 'skein_xds_refused_total',
      help: "Resources a proxy asked for and may never have (another identity's key, an unknown secret name), by type and reason.",
      labelNames: ['type', 'reason'],
      registers,
    });
    this.xdsRequestsIgnored = new Counter({
      name: 'skein_xds_requests_ignored_total',
      help: 'ADS requests ignored: a type skein does not serve, or a stale nonce (SotW), by reason.',
      labelNames: ['reason'],
      registers,
    });
    this.announcements = new Counter({
      name: 'skein_announcements_total',
      help: 'Change announcements published on the bus, by kind.',
      labelNames: ['kind'],
      registers,
    });
    this.announcementsCoalesced = new Counter({
      name: 'skein_announcements_coalesced_total',
      help: 'Announcements folded into a push already pending for a proxy (counted per proxy), instead of a push of their own.',
      registers,
    });
    this.leader = new Gauge({
      name: 'skein_leader',
      help: 'Whether this replica runs the singleton work (holds the leader Lease): 1 or 0. Every replica serves xDS.',
      registers,
    });
    this.watchRestarts = new Counter({
      name: 'skein_watch_restarts_total',
      help: 'Kubernetes list+watch restarts, by object type and reason (timeout, expired = relist after 410 Gone, idle, error).',
      labelNames: ['type', 'reason'],
      registers,
    });
    this.registryEvents = new Counter({
      name: 'skein_registry_events_total',
      help: 'Effective changes to the mesh store, by object kind and event type.',
      labelNames: ['kind', 'type'],
      registers,
    });
    this.certificatesIssued = new Counter({
      name: 'skein_certificates_issued_total',
      help: 'Workload certificates issued, first issuance and renewals.',
      registers,
    });
    this.certificatesRotated = new Counter({
      name: 'skein_certificates_rotated_total',
      help: 'Workload certificates replaced by a renewal round.',
      registers,
    });
    const soonest = (): Date | undefined => this.soonestExpiry();
    this.certificateSoonestExpiry = new Gauge({
      name: 'skein_certificate_soonest_expiry_timestamp_seconds',
      help: 'Unix time when the soonest-expiring managed workload certificate expires; 0 when there is none.',
      registers,
      // Read at scrape time: expiry is a property of the current set, not an event.
      collect() {
        const at = soonest();
        this.set(at === undefined ? 0 : at.getTime() / 1000);
      },
    });
    const rotation = () => this.caRotation();
    new Gauge({
      name: 'skein_ca_rotation_stage',
      help: 'Root CA rotation stage: 0 none, 1 distribute the new root, 2 reissue every leaf from it, 3 retire the old root.',
      registers,
      collect() {
        this.set(stageNumber(rotation().stage));
      },
    });
    new Gauge({
      name: 'skein_ca_rotation_pending',
      help: 'Consumers (proxies, leaves, bootstrap Secrets and files) not yet holding the current root rotation stage, over every live controller replica; 0 when none runs.',
      registers,
      collect() {
        this.set(rotation().pending);
      },
    });
    const problemGauge = (name: string, help: string, type: 'invalid-object' | 'policy') =>
      new Gauge({
        name,
        help,
        labelNames: ['kind'],
        registers,
        // Read at scrape time from the problem book: a kind whose problems are gone reads 0.
        collect: () => {
          const g = type === 'invalid-object' ? this.invalidObjects : this.policyProblems;
          g.reset();
          for (const [kind, n] of this.problemCounts(type)) g.set({ kind }, n);
        },
      });
    this.invalidObjects = problemGauge(
      'skein_invalid_objects',
      'Objects whose current version skein cannot use (reported in /debug/problems), by kind.',
      'invalid-object',
    );
    this.policyProblems = problemGauge(
      'skein_policy_problems',
      'Valid objects that cannot apply as written (a missing backend, an unknown route group, …), by kind.',
      'policy',
    );
    this.webhookAdmissions = new Counter({
      name: 'skein_webhook_admissions_total',
      help: 'Pod admissions answered by the sidecar-injection webhook, by result (injected, skipped, denied, error).',
      labelNames: ['result'],
      registers,
    });
    // Every result exists from the start, so a rate() over `error` works before the first error.
    for (const result of ADMISSION_RESULTS) this.webhookAdmissions.inc({ result }, 0);
    // Per edge from the sidecars' metrics streams (pkg/stats), read at scrape time: rates over the
    // controller's window, so gauges (a pair evicted would break a counter's monotony).
    const figures = () => this.edgeFigures();
    const edgeGauge = (
      name: string,
      help: string,
      value: (e: EdgeFigures['edges'][number]) => number | undefined,
    ) =>
      new Gauge({
        name,
        help,
        labelNames: ['source', 'destination'],
        registers,
        collect() {
          this.reset();
          for (const e of figures().edges) {
            const v = value(e);
            if (v !== undefined) this.set({ source: e.source, destination: e.destination }, v);
          }
        },
      });
    this.edgeRequestRate = edgeGauge(
      'skein_edge_request_rate',
      'Requests per second from a source identity to a destination service, over the last minute, as its sidecars report them.',
      (e) => e.rps,
    );
    this.edgeSuccessRatio = edgeGauge(
      'skein_edge_success_ratio',
      'Share of the responses on an edge that were not 5xx, over the last minute (absent without responses).',
      (e) => e.successRate,
    );
    this.edgeStatsPairs = new Gauge({
      name: 'skein_edge_stats_pairs',
      help: 'Rolling windows held for (proxy, destination service) pairs.',
      registers,
      collect() {
        this.set(figures().pairs);
      },
    });
    this.edgeStatsDropped = new Gauge({
      name: 'skein_edge_stats_dropped_pairs',
      help: 'Reports for a new (proxy, destination) pair dropped because the pair cap was reached, since start.',
      registers,
      collect() {
        this.set(figures().dropped);
      },
    });
    if (opts.processMetrics ?? true) collectDefaultMetrics({ register: this.registry });
  }

  /** Where the per-edge figures come from (read at every scrape). */
  watchEdges(figures: () => EdgeFigures): void {
    this.edgeFigures = figures;
  }

  /** Where the problem counts come from (read at every scrape), by problem type and object kind. */
  watchProblems(counts: (type: 'invalid-object' | 'policy') => ReadonlyMap<string, number>): void {
    this.problemCounts = counts;
  }

  /** Where the root rotation's stage and pending count come from (read at every scrape). */
  watchCaRotation(state: () => { stage: RotationStage | undefined; pending: number }): void {
    this.caRotation = state;
  }

  /** Where the soonest certificate expiry comes from (read at every scrape). */
  watchCertificateExpiry(notAfters: () => Iterable<Date>): void {
    this.soonestExpiry = () => {
      let soonest: Date | undefined;
      for (const d of notAfters()) if (soonest === undefined || d < soonest) soonest = d;
      return soonest;
    };
  }

  /** The ADS server's hooks, counted into this registry. */
  readonly xdsObserver: XdsObserver = {
    onConnect: (kind: ProxyKind) => this.proxiesConnected.inc({ kind }),
    onDisconnect: (kind: ProxyKind) => this.proxiesConnected.dec({ kind }),
    onResponse: (typeUrl) => this.xdsPushes.inc({ type: typeLabel(typeUrl) }),
    onAck: (typeUrl, _nonce, seconds) => this.xdsChangeToAck.observe({ type: typeLabel(typeUrl) }, seconds),
    onNack: (typeUrl) => this.xdsNacks.inc({ type: typeLabel(typeUrl) }),
    onRefused: (reason) => this.xdsStreamsRefused.inc({ reason }),
    onIgnored: (reason) => this.xdsRequestsIgnored.inc({ reason }),
    onResourceRefused: (typeUrl, reason) => this.xdsRefused.inc({ type: typeLabel(typeUrl), reason }),
  };

  /** The injector webhook's hook, counted into this registry. */
  readonly webhookObserver: WebhookObserver = {
    onAdmission: (result: AdmissionResult) => this.webhookAdmissions.inc({ result }),
  };

  /** The Prometheus text exposition format. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

/** `type.googleapis.com/envoy.config.cluster.v3.Cluster` → `Cluster`: short, still unique among xDS types. */
export function typeLabel(typeUrl: string): string {
  const name = typeUrl.slice(typeUrl.lastIndexOf('/') + 1);
  return name.slice(name.lastIndexOf('.') + 1);
}
