import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { AnnouncementBus } from '../announcements/bus.js';
import { publishStoreChanges } from '../announcements/store.js';
import { type ProxyGroup, ProxyRegistry, proxyContext, proxyGroup } from '../catalog/proxies.js';
import type { MeshView, ProxyContext } from '../catalog/types.js';
import { buildMeshView, meshConfigOf, policyProblems } from '../catalog/view.js';
import { readWorkloadCert, WorkloadCertWriter, workloadCertsDir } from '../certificate/files.js';
import {
  FileIngressCertSink,
  IngressGatewayCertificates,
  KubeIngressSecretSink,
} from '../certificate/ingress-gateway.js';
import { IngressTlsSecrets } from '../certificate/ingress-tls.js';
import { CertificateManager } from '../certificate/manager.js';
import type { KubeReplicaReports } from '../certificate/replica-reports.js';
import type { RotatingCA } from '../certificate/rotating-ca.js';
import { ServingRenewal } from '../certificate/serving-renewal.js';
import type { SecretSource } from '../certificate/types.js';
import { meshGenerators } from '../envoy/generators.js';
import { TypeUrl } from '../envoy/types.js';
import { HealthServer } from '../health/server.js';
import { staleRules } from '../injector/stale-rules.js';
import type { LeaseElector } from '../leader/elector.js';
import type { Leadership } from '../leader/leadership.js';
import type { Logger } from '../logger/logger.js';
import type { Identity, ProxyIdentity } from '../mesh/identity.js';
import { MeshMetrics } from '../metrics/metrics.js';
import type { MeshConfig } from '../model/objects.js';
import type { KubeClient } from '../registry/kube/client.js';
import type { StatusWriter } from '../registry/kube/status.js';
import { LocalRegistry } from '../registry/local/registry.js';
import { ProblemBook } from '../registry/problem-book.js';
import { LoggingProblemReporter, teeReporter } from '../registry/problems.js';
import type { Registry } from '../registry/registry.js';
import { MeshStore, type StoreEvent } from '../registry/store.js';
import { EdgeStats } from '../stats/collector.js';
import { metricsService } from '../stats/service.js';
import { ENVOY_FLUSH_MS } from '../stats/window.js';
import type { GraphFeed } from '../ui/feed.js';
import { notifyOnStreamEvents } from '../ui/observer.js';
import { DependencyTracker } from '../xds/cache/deps.js';
import { PushPlanner } from '../xds/push/planner.js';
import { RestXds, refusePlainRestXds } from '../xds/rest/handler.js';
import { REST_XDS_PATHS } from '../xds/rest/request.js';
import { RestXdsServer } from '../xds/rest/server.js';
import { composeObservers } from '../xds/server/observers.js';
import { AdsServer } from '../xds/server/server.js';
import type { ProxyConfigSource } from '../xds/server/types.js';
import { loadControllerCA, writeWorkloadCAFiles } from './ca.js';
import { RotationDriver } from './ca-rotation.js';
import { mountHttpRoutes } from './http-routes.js';
import { IngressTlsWatch, meshSecrets } from './ingress-tls.js';
import { Injection, servingNames } from './injection.js';
import { LocalWorkloads } from './local-workloads.js';
import { LogLevelFollower } from './log-level.js';
import type { ControllerOptions } from './options.js';
import { ProblemLog } from './problem-log.js';
import { proxiesBehind } from './rotation-evidence.js';
import { type MeshSettings, meshSettings } from './settings.js';

export interface ControllerPorts {
  ads: number;
  insecureAds?: number;
  http: number;
  webhook?: number;
  /** REST xDS over HTTPS (--rest-xds-port). */
  restXds?: number;
}

/**
 * Wires skein together: registry → store → MeshView (policy) → generators →
 * ADS server, with the announcement bus and the push planner in between,
 * and the certificate manager feeding SDS and the local workload files.
 */
export class Controller {
  readonly store = new MeshStore();
  readonly bus: AnnouncementBus;
  readonly proxies = new ProxyRegistry();
  readonly metrics = new MeshMetrics();
  /** Per-edge figures the sidecars stream to the mTLS port; only services of the current view count. */
  readonly edgeStats = new EdgeStats({ isService: (key) => this.currentView().service(key) !== undefined });
  private readonly log: Logger;
  private registry: Registry | undefined;
  private ca: RotatingCA | undefined;
  /** Root CA rotation (ca-rotation.ts): follows the stored record on every replica, drives it on the leader. */
  private caRotation: RotationDriver | undefined;
  /** MeshConfig certificate.ingressGateway: a leaf a root rotation reissues too. */
  private ingressCerts: IngressGatewayCertificates | undefined;
  private certs: CertificateManager | undefined;
  /** What the generators read: the workload certificates and the ingress gateway's TLS. */
  private secrets: SecretSource | undefined;
  private planner: PushPlanner<ProxyGroup> | undefined;
  /** What each proxy group's configuration was generated from: a change pushes only the groups it touches. */
  private readonly dependencies = new DependencyTracker();
  private ads: AdsServer | undefined;
  private health: HealthServer | undefined;
  private workloads: LocalWorkloads | undefined;
  private writer: WorkloadCertWriter | undefined;
  private view: MeshView | undefined;
  /**
   * Each connected identity's last context and the view it was built from: a
   * context is a function of the two alone (catalog/proxies.ts), and a stream
   * asks for it on every response and every push round. Frozen, so no reader
   * can change what the next one gets.
   */
  private readonly contexts = new WeakMap<ProxyIdentity, { view: MeshView; ctx: ProxyContext }>();
  /** The settings of the MeshConfig object they came from (undefined: none), so problems are logged once per change. */
  private settings: { from: MeshConfig | undefined; value: MeshSettings } | undefined;
  private problems: ProblemLog;
  /** MeshConfig observability.logLevel over the startup level (log-level.ts). */
  private readonly logLevel: LogLevelFollower;
  /** Every problem in force (invalid objects and policy), for /debug/problems and the gauges. */
  private readonly problemBook = new ProblemBook();
  private adsServing = false;
  private uiFeed: GraphFeed | undefined;
  /** Kubernetes mode: the API client for the CA Secret and the webhook (not the registry's). */
  private kube: KubeClient | undefined;
  private injection: Injection | undefined;
  /** Kubernetes mode: writes status.conditions (Accepted) of SMI objects and the MeshConfig. */
  private statusWriter: StatusWriter | undefined;
  private elector: LeaseElector | undefined;
  /** With leader election: this replica's root rotation evidence, and the others' (replica-reports.ts). */
  private replicaReports: KubeReplicaReports | undefined;
  /** Kubernetes mode with --leader-elect: singleton work runs only while the Lease is ours. */
  private readonly leadership: Leadership = leadershipOf(this);
  private restXds: RestXdsServer | undefined;
  private stopping = false;
  private stopFns: (() => void)[] = [];

  constructor(
    private readonly opts: ControllerOptions,
    logger: Logger,
  ) {
    this.log = logger;
    this.logLevel = new LogLevelFollower(logger, opts.logLevel !== undefined);
    this.bus = new AnnouncementBus({ logger: logger.child({ component: 'announcements' }) });
    this.problems = new ProblemLog(logger.child({ component: 'policy' }));
  }

  /** Whether the elector holds the Lease; undefined without election (a lone controller leads). */
  get electorLeads(): boolean | undefined {
    if (!this.opts.leaderElection) return undefined;
    return this.elector?.isLeader ?? false;
  }

  /** The current MeshView, rebuilt lazily when the store has moved on. */
  currentView(): MeshView {
    const view = buildMeshView(this.store, {
      meshName: this.opts.meshName,
      ...(this.view ? { previous: this.view } : {}),
    });
    if (view !== this.view) {
      this.view = view;
      this.problems.update(policyProblems(view));
      this.problemBook.setPolicy(policyProblems(view));
    }
    return view;
  }

  async start(): Promise<ControllerPorts> {
    const o = this.opts;
    const log = this.log;
    const health = new HealthServer([
      {
        name: 'registry',
        notReadyReason: () => (this.registry?.synced ? undefined : 'initial sync not complete'),
      },
      { name: 'ca', notReadyReason: () => (this.ca ? undefined : 'CA not loaded') },
      { name: 'ads', notReadyReason: () => (this.adsServing ? undefined : 'ADS server not serving') },
      {
        name: 'webhook',
        notReadyReason: () =>
          o.webhookPort === undefined || this.injection ? undefined : 'sidecar-injection webhook not serving',
      },
    ]);
    this.health = health;
    this.metrics.watchProblems((type) => {
      this.currentView();
      return this.problemBook.countsByKind(type);
    });
    const uiFeed = mountHttpRoutes(health, {
      meshName: o.meshName,
      metrics: this.metrics,
      enabled: () => this.debugEnabled(),
      streams: () => this.streams(),
      sentResources: (streamId) => this.ads?.sentResources(streamId),
      podOf: (identity) => {
        const pod = this.contextOf(identity).pod;
        return pod ? { namespace: pod.metadata.namespace ?? '', name: pod.metadata.name } : undefined;
      },
      certificates: () => this.certs?.list() ?? [],
      caRotation: () => this.caRotation?.status(),
      view: () => this.currentView(),
      problems: () => {
        this.currentView(); // policy problems are those of the current view
        return this.problemBook.entries();
      },
      interception: () => {
        const mesh = this.currentSettings().exclusions;
        return { mesh, stalePods: staleRules(this.store.list('Pod'), mesh) };
      },
      recentlyDisconnected: () => this.proxies.recentlyDisconnected(),
      edgeStats: this.edgeStats,
    });
    this.uiFeed = uiFeed;
    this.metrics.watchEdges(() => ({
      edges: this.edgeStats.edges(),
      pairs: this.edgeStats.pairCount,
      dropped: this.edgeStats.droppedPairs,
    }));
    // Edge rates move with every report and as the window slides: the page follows at the
    // sidecars' flush interval (the feed sends only a graph that changed).
    const statsTick = setInterval(() => {
      if (this.edgeStats.pairCount > 0) uiFeed.notify();
    }, ENVOY_FLUSH_MS);
    statsTick.unref();
    this.stopFns.push(() => clearInterval(statsTick));
    // Problems move without a store change (an invalid edit keeps the last valid version).
    this.problemBook.onChange = () => uiFeed.notify();
    this.stopFns.push(
      this.bus.subscribe(() => uiFeed.notify()),
      () => uiFeed.close(),
    );
    this.stopFns.push(this.bus.subscribe((a) => this.metrics.announcements.inc({ kind: a.kind })));
    const onStoreChange = (e: StoreEvent) => this.metrics.registryEvents.inc({ kind: e.kind, type: e.type });
    this.store.on('change', onStoreChange);
    this.stopFns.push(() => this.store.off('change', onStoreChange));
    const httpPort = await health.listen(o.httpPort, o.host);

    const registry = await this.createRegistry();
    this.registry = registry;
    await registry.start();
    // Every object's Accepted condition once the caches hold them all (Kubernetes mode).
    this.statusWriter?.schedule(0);
    this.stopFns.push(publishStoreChanges(this.store, this.bus));

    const view = this.currentView();
    const settings = this.currentSettings();
    this.logLevel.follow(meshConfigOf(view)?.spec.observability?.logLevel);
    await mkdir(o.stateDir, { recursive: true });
    const loaded = await loadControllerCA({
      stateDir: o.stateDir,
      ...(this.kube ? { kube: this.kube } : {}),
      namespace: o.namespace,
      caSecret: o.caSecret,
      ...(o.workloadFiles ? { workloadFiles: true } : {}),
      logger: log,
      stopping: () => this.stopping,
    });
    this.ca = loaded.ca;
    const ca = this.ca;
    const certsDir = workloadCertsDir(o.stateDir);
    const certs = new CertificateManager({
      ca,
      validityMs: settings.validityMs,
      trustDomain: view.trustDomain,
      logger: log.child({ component: 'certificates' }),
      // A restart keeps the workload certificates the previous run wrote while they are good.
      ...(o.localDir || o.workloadFiles
        ? { load: (id: Identity) => readWorkloadCert(certsDir, id, ca.trustBundlePem) }
        : {}),
    });
    this.certs = certs;
    const onRotated = (keys: string[]) => {
      this.metrics.certificatesRotated.inc(keys.length);
      this.bus.announce('certificate', `rotated ${keys.join(', ')}`);
    };
    const onIssued = (key: string) => {
      this.metrics.certificatesIssued.inc();
      this.bus.announce('certificate', `issued ${key}`, { subject: key });
    };
    // MeshConfig certificate.ingressGateway: the ingress controller's client certificate.
    const ingressCerts = new IngressGatewayCertificates({
      ca,
      sink: this.kube
        ? new KubeIngressSecretSink(this.kube)
        : new FileIngressCertSink(path.join(o.stateDir, 'ingress-gateway')),
      logger: log,
      // On /debug/problems (and the problem log) until a write succeeds.
      onProblem: (p) => {
        this.problemBook.resolved('ingress-client-cert');
        if (p)
          this.problemBook.report({
            source: 'ingress-client-cert',
            kind: 'Secret',
            namespace: p.secret.namespace,
            name: p.secret.name,
            reason: p.reason,
            code: 'IngressCertNotWritten',
          });
      },
    });
    this.ingressCerts = ingressCerts;
    const followIngressGateway = () =>
      ingressCerts.update(meshConfigOf(this.currentView())?.spec.certificate?.ingressGateway);
    const onMeshConfig = (e: StoreEvent) => {
      if (e.kind === 'MeshConfig') followIngressGateway();
    };
    followIngressGateway();
    this.store.on('change', onMeshConfig);
    this.stopFns.push(() => {
      this.store.off('change', onMeshConfig);
      ingressCerts.stop();
    });
    // The ingress gateway's TLS: Secrets watched only when the gateway is on (Kubernetes mode).
    const ingressTls = new IngressTlsSecrets();
    const secrets = meshSecrets(certs, ingressTls);
    this.secrets = secrets;
    if (this.kube && o.ingressGateway) {
      const watch = new IngressTlsWatch({
        kube: this.kube,
        store: ingressTls,
        bus: this.bus,
        problems: this.problemBook,
        view: () => this.currentView(),
        logger: log.child({ component: 'ingress-tls' }),
      });
      await watch.start();
      const onIngress = (e: StoreEvent) => {
        if (e.kind === 'Ingress') watch.refreshProblems();
      };
      this.store.on('change', onIngress);
      this.stopFns.push(() => {
        this.store.off('change', onIngress);
        void watch.stop();
      });
    }
    this.metrics.watchCertificateExpiry(() => certs.list().map((c) => c.notAfter));
    certs.on('rotated', onRotated);
    certs.on('issued', onIssued);
    this.stopFns.push(() => {
      certs.off('rotated', onRotated);
      certs.off('issued', onIssued);
    });

    this.planner = new PushPlanner<ProxyGroup>(this.bus, {
      tracker: this.dependencies,
      context: () => ({ mesh: this.currentView(), secrets }),
      // The context the responses use, so a connecting proxy's is computed once per view.
      membership: (identity, mesh, previous) =>
        proxyGroup(identity, mesh, previous, (id, view) => this.contextOf(id, view)),
      carryOver: (ctx, unaffected) => this.ads?.cache.carryOver(ctx, unaffected),
      minIntervalMs: o.minPushIntervalMs ?? settings.minPushIntervalMs,
      logger: log.child({ component: 'push-planner' }),
      onCoalesced: (n) => this.metrics.announcementsCoalesced.inc(n),
    });
    this.stopFns.push(
      this.bus.subscribe((a) => {
        if (a.kind === 'config') this.applySettings();
      }),
    );
    this.bus.startTicker();

    // Loopback for local clients, plus the Service names the injected bootstrap dials (with SNI);
    // renewed before expiry for the ADS and REST xDS ports without a restart.
    const adsNames = [...new Set(['localhost', '127.0.0.1', '::1', ...servingNames(o)])];
    const adsCertRenewal = new ServingRenewal({
      issue: () => ca.issueServerCert(adsNames),
      // The bundle client certificates are checked against moves with a root rotation.
      apply: (cert) => {
        this.ads?.setServingCertificate({ ...cert, caPem: ca.trustBundlePem });
        this.restXds?.setServingCertificate({ ...cert, caPem: ca.trustBundlePem });
      },
      logger: log.child({ component: 'ads-cert' }),
    });
    const serverCert = await adsCertRenewal.start();
    this.stopFns.push(() => adsCertRenewal.stop());
    const source = this.configSource();
    this.ads = new AdsServer({
      source,
      tls: { caPem: this.ca.trustBundlePem, certPem: serverCert.certPem, keyPem: serverCert.keyPem },
      trustDomain: view.trustDomain,
      logger: log,
      host: o.host,
      port: o.adsPort,
      dependencies: this.dependencies,
      observer: composeObservers(
        this.metrics.xdsObserver,
        notifyOnStreamEvents(() => this.uiFeed?.notify()),
      ),
      ...(o.insecureAdsPort !== undefined ? { insecurePort: o.insecureAdsPort } : {}),
      ...(o.adsLimits !== undefined ? { limits: o.adsLimits } : {}),
      services: [metricsService(this.edgeStats, log)],
    });
    const ports = await this.ads.start();
    this.adsServing = true;
    const restXdsPort = await this.startRestXds(source, view.trustDomain, serverCert);

    const result: ControllerPorts = { ads: ports.port, http: httpPort };
    if (ports.insecurePort !== undefined) result.insecureAds = ports.insecurePort;
    if (restXdsPort !== undefined) result.restXds = restXdsPort;
    if (o.webhookPort !== undefined) {
      this.injection = await Injection.start({
        ca: this.ca,
        options: o,
        trustDomain: view.trustDomain,
        store: this.store,
        ...(this.kube ? { kube: this.kube } : {}),
        observer: this.metrics.webhookObserver,
        // Read at each admission: a MeshConfig change applies to pods created afterwards.
        sidecarSettings: () => this.currentSettings().sidecar,
        meshExclusions: () => this.currentSettings().exclusions,
        proxyCertValidityMs: () => this.currentSettings().bootstrapValidityMs,
        connectedCertificates: () => this.ads?.connectedCertificates() ?? [],
        logger: log,
        leadership: this.leadership,
      });
      result.webhook = this.injection.port;
    }
    // Local workload files and bootstraps stand in for what the injector gives pods in
    // Kubernetes; --workload-files asks for them in Kubernetes mode too (workloads run outside).
    if (o.localDir || o.workloadFiles) await this.startLocalWorkloads(ports.insecurePort);
    this.startCaRotation(loaded, adsCertRenewal);
    // Campaign once everything the singleton work touches exists.
    this.metrics.leader.set(this.leadership.isLeader ? 1 : 0);
    this.elector?.start();
    log.info(
      {
        ...result,
        mesh: o.meshName,
        ...(o.localDir
          ? { local: o.localDir }
          : { kubernetes: o.kubeconfig ?? 'in-cluster', namespace: o.namespace }),
        ...(o.workloadFiles ? { workloadFiles: true } : {}),
        state: o.stateDir,
      },
      'skein controller ready',
    );
    return result;
  }

  /**
   * Root CA rotation: every stage change reaches every leaf and trust store
   * (workload certificates, the ADS and webhook serving certificates and the
   * bundle they check clients with, bootstrap Secrets, the webhook caBundle,
   * workload files); the driver advances a stage on the evidence gathered here.
   */
  private startCaRotation(loaded: Awaited<ReturnType<typeof loadControllerCA>>, ads: ServingRenewal): void {
    const o = this.opts;
    const { ca } = loaded;
    const certs = this.certs;
    if (!certs) throw new Error('controller not initialised');
    // Per stage: when the workload files first all held it (the file watchers' delivery starts then).
    let filesDoneAt: number | undefined;
    const stageOf = () => ca.record.rotation?.stage;
    const onChanged = () => {
      const stage = stageOf();
      filesDoneAt = undefined;
      this.log.info(
        { stage: stage ?? 'idle', roots: ca.roots().length },
        'CA trust bundle or issuer changed',
      );
      certs.renewAll();
      ads.renewNow();
      this.ingressCerts?.renewNow();
      const key = `${stage ?? 'idle'}:${ca.roots().map((r) => `${r.fingerprint}${r.issuing ? '*' : ''}`)}`;
      this.injection?.caStageChanged(
        stage === undefined
          ? undefined
          : { key, reissue: stage === 'reissue', bundlePem: () => ca.trustBundlePem },
      );
      if (o.workloadFiles)
        writeWorkloadCAFiles(o.stateDir, ca).catch((err: unknown) =>
          this.log.warn({ err }, 'cannot write the CA files'),
        );
      // Validation contexts carry the bundle: every proxy's SDS is regenerated.
      this.bus.announce('certificate', 'trust bundle changed');
    };
    ca.on('changed', onChanged);
    const driver = new RotationDriver({
      store: loaded.store,
      ca,
      version: loaded.version,
      logger: this.log,
      leadership: this.leadership,
      ...(o.caRotationDeliveryMs !== undefined ? { deliveryMs: o.caRotationDeliveryMs } : {}),
      ...(this.replicaReports ? { replicas: this.replicaReports } : {}),
      connected: () => this.ads?.streamCount ?? 0,
      evidence: () => {
        const bundle = ca.trustBundlePem;
        const current = (c: { certPem: string; caPem: string } | undefined) =>
          c === undefined || (c.caPem === bundle && ca.issuedByCurrent(c.certPem));
        let leaves = 0;
        for (const c of certs.certificates()) if (!current(c)) leaves++;
        if (!current(ads.current)) leaves++;
        if (this.injection && !current(this.injection.renewal.current)) leaves++;
        if (!current(this.ingressCerts?.inForce)) leaves++;
        const rec = ca.record;
        const all = [rec.active.certPem, ...(rec.next ? [rec.next.certPem] : [])];
        const inBundle = all.filter((p) => bundle.includes(p.trim()));
        const streams = this.ads?.streams() ?? [];
        const proxies = proxiesBehind(streams, (id) => this.ads?.sentResources(id)?.get(TypeUrl.Secret), {
          current: inBundle,
          retired: all.filter((p) => !inBundle.includes(p)),
          ownCertPem: (key) => certs.serviceCertificate(key)?.certPem,
        });
        const unwritten = this.writer?.unwritten() ?? 0;
        // Files count as written once every leaf is current and on disk (a renewal may not have begun yet).
        if (unwritten === 0 && leaves === 0 && filesDoneAt === undefined && this.writer)
          filesDoneAt = Date.now();
        const injector = this.injection?.caStageProgress(bundle) ?? { pending: 0 };
        const writes = [filesDoneAt, injector.lastWriteAt].filter((t): t is number => t !== undefined);
        return {
          proxies,
          connected: streams.length,
          leaves,
          files: unwritten + injector.pending,
          ...(writes.length > 0 ? { lastWriteAt: Math.max(...writes) } : {}),
        };
      },
    });
    this.caRotation = driver;
    this.metrics.watchCaRotation(() => ({ stage: stageOf(), pending: driver.pending() }));
    // Resuming after a restart: the stage's work is done again (every write is idempotent).
    if (stageOf() !== undefined) onChanged();
    driver.start();
    this.stopFns.push(() => {
      driver.stop();
      ca.off('changed', onChanged);
    });
  }

  /** Local mode reads manifests; Kubernetes mode (loaded only then) watches the API. */
  private async createRegistry(): Promise<Registry> {
    const o = this.opts;
    const log = this.log;
    if (o.localDir) {
      return new LocalRegistry({
        dir: o.localDir,
        store: this.store,
        reporter: teeReporter(
          new LoggingProblemReporter(log.child({ component: 'local-registry' })),
          this.problemBook,
        ),
        logger: log, // the registry names its own component
        meshName: o.meshName,
      });
    }
    // Imported lazily: client-node is large, and local mode never needs it.
    const { createKubeMode } = await import('../registry/kube/setup.js');
    const { KubeClient } = await import('../registry/kube/client.js');
    const { TokenBucket } = await import('../ratelimit/token-bucket.js');
    const kube = createKubeMode({
      ...(o.kubeconfig !== undefined ? { kubeconfig: o.kubeconfig } : {}),
      ...(o.inCluster ? { inCluster: true } : {}),
      meshName: o.meshName,
      controlPlaneNamespace: o.namespace,
      onWatchRestart: (type, reason) => this.metrics.watchRestarts.inc({ type, reason }),
      store: this.store,
      logger: log,
      alsoReport: this.problemBook,
      leadership: this.leadership,
    });
    if (o.leaderElection) {
      const { LeaseElector } = await import('../leader/elector.js');
      const t = o.leaderElection;
      this.elector = new LeaseElector({
        // A hung request must not outlast a retry: the renew deadline counts from the last success.
        client: new KubeClient({ kubeConfig: kube.kubeConfig, requestTimeoutMs: 2 * t.retryPeriodMs }),
        namespace: o.namespace,
        name: LEADER_LEASE_NAME,
        leaseDurationMs: t.leaseDurationMs,
        renewDeadlineMs: t.renewDeadlineMs,
        retryPeriodMs: t.retryPeriodMs,
        logger: log.child({ component: 'leader-election' }),
        onStartedLeading: () => {
          this.metrics.leader.set(1);
          this.injection?.leadershipGained();
          this.statusWriter?.schedule(0);
        },
        onStoppedLeading: () => this.metrics.leader.set(0),
      });
      const { KubeReplicaReports, replicaName } = await import('../certificate/replica-reports.js');
      this.replicaReports = new KubeReplicaReports({
        client: new KubeClient({ kubeConfig: kube.kubeConfig, requestTimeoutMs: 2 * t.retryPeriodMs }),
        namespace: o.namespace,
        replica: replicaName(process.env['POD_NAME'], randomBytes(3).toString('hex')),
        leaseDurationMs: t.leaseDurationMs,
        logger: log.child({ component: 'ca-rotation' }),
      });
    }
    // Policy problems become Events on the objects too.
    this.problems = new ProblemLog(log.child({ component: 'policy' }), kube.events);
    // ...and an Accepted condition in each SMI object's and the MeshConfig's status, through
    // their own rate limiter: status never queues behind relists or admissions.
    const { StatusWriter } = await import('../registry/kube/status.js');
    const status = new StatusWriter({
      client: new KubeClient({ kubeConfig: kube.kubeConfig, limiter: new TokenBucket(5, 20) }),
      logger: log.child({ component: 'status' }),
      objects: () => kube.registry.statusObjects(),
      leadership: this.leadership,
      problems: () => {
        this.currentView(); // policy problems are those of the current view
        return this.problemBook.entries();
      },
    });
    this.statusWriter = status;
    const notify = this.problemBook.onChange;
    this.problemBook.onChange = () => {
      notify();
      status.schedule();
    };
    // Store changes and the ticker (which also restores a condition someone else removed).
    this.stopFns.push(
      this.bus.subscribe(() => status.schedule()),
      () => status.stop(),
    );
    // Admissions wait on this client (bootstrap Secrets, namespaces): its own budget, never
    // queued behind registry relists or Events; the short timeout fits the webhook's.
    this.kube = new KubeClient({
      kubeConfig: kube.kubeConfig,
      limiter: new TokenBucket(50, 100),
      requestTimeoutMs: 10_000,
    });
    return kube.registry;
  }

  private async startLocalWorkloads(insecurePort: number | undefined): Promise<void> {
    const o = this.opts;
    const log = this.log;
    const certs = this.certs;
    if (!certs) throw new Error('controller not initialised');
    const certsDir = workloadCertsDir(o.stateDir);
    this.writer = new WorkloadCertWriter({
      manager: certs,
      dir: certsDir,
      logger: log.child({ component: 'workload-certs' }),
    });
    this.writer.start();
    const connectHost = o.host === '0.0.0.0' || o.host === '::' ? '127.0.0.1' : o.host;
    this.workloads = new LocalWorkloads({
      writer: this.writer,
      certsDir,
      bootstrapDir: path.join(o.stateDir, 'bootstrap'),
      ...(insecurePort !== undefined ? { insecureAdsAddress: `${connectHost}:${insecurePort}` } : {}),
      logger: log.child({ component: 'local-workloads' }),
    });
    await this.syncWorkloads();
    this.stopFns.push(
      this.bus.subscribe((a) => {
        if (a.kind === 'store' || a.kind === 'config') void this.syncWorkloads();
      }),
    );
  }

  async stop(): Promise<void> {
    this.stopping = true;
    // First: the Lease released, a successor takes the singleton work within a retry period.
    await this.elector?.stop();
    this.bus.stop();
    for (const fn of this.stopFns.splice(0)) fn();
    await this.injection?.stop();
    this.planner?.close();
    await this.restXds?.close();
    await this.ads?.stop();
    this.adsServing = false;
    // Once no proxy is served here: the leader need not wait for the report to expire.
    await this.caRotation?.settled();
    await this.replicaReports
      ?.withdraw()
      .catch((err: unknown) => this.log.warn({ err }, 'could not withdraw the root rotation evidence'));
    await this.writer?.stop();
    this.certs?.stop();
    await this.registry?.stop();
    await this.health?.close();
  }

  /**
   * REST xDS from the ADS server's source and cache. Its HTTPS port (client
   * certificates, node.id = CN) when --rest-xds-port is given; on the HTTP
   * port, local mode takes node.id as the identity (as the plaintext ADS port
   * does) and Kubernetes mode refuses, pointing at the mTLS port.
   */
  private async startRestXds(
    source: ProxyConfigSource,
    trustDomain: string,
    serving: { certPem: string; keyPem: string },
  ): Promise<number | undefined> {
    const o = this.opts;
    const { ads, ca, certs, health } = this;
    if (!ads || !ca || !certs || !health) throw new Error('controller not initialised');
    const rest = new RestXds({
      source,
      cache: ads.cache,
      trustDomain,
      logger: this.log,
      // ADS issues on connect; a REST caller may never have connected.
      prepareSecrets: (identity) => certs.ensure(identity),
      onResourceRefused: (typeUrl, reason) => this.metrics.xdsObserver.onResourceRefused?.(typeUrl, reason),
    });
    let port: number | undefined;
    if (o.restXdsPort !== undefined) {
      const server = new RestXdsServer(rest, { caPem: ca.trustBundlePem, ...serving });
      port = await server.listen(o.restXdsPort, o.host);
      this.restXds = server;
    }
    const plain = o.localDir !== undefined ? rest.handleNodeId : refusePlainRestXds(port);
    for (const p of REST_XDS_PATHS.keys()) health.route(p, plain);
    return port;
  }

  /**
   * The gate of /debug/* and the web view, checked per request. Local mode is a
   * developer's machine; in a cluster the debug endpoints would reveal the mesh
   * to anyone who can reach the port, so MeshConfig (or --debug) must opt in.
   */
  private debugEnabled(): boolean {
    return (
      this.opts.localDir !== undefined ||
      this.opts.debug === true ||
      meshConfigOf(this.currentView())?.spec.observability?.enableDebugServer === true
    );
  }

  /** Debug view of connected streams (per-type versions, ACK/NACK state). */
  streams() {
    return this.ads?.streams() ?? [];
  }

  private configSource(): ProxyConfigSource {
    const certs = this.certs;
    const planner = this.planner;
    const secrets = this.secrets;
    if (!certs || !planner || !secrets) throw new Error('controller not initialised');
    return {
      generators: meshGenerators(),
      proxyConnected: (identity, streamId, remote) => {
        this.proxies.connect(identity, {
          streamId,
          connectedAt: new Date(),
          ...(remote !== undefined ? { remoteAddress: remote } : {}),
        });
        // Issue the identity's service certificate ahead of its SDS request;
        // the 'issued' announcement pushes it when ready.
        certs.ensure(identity).catch((err: unknown) => {
          this.log.error({ err, proxy: identity.cn }, 'could not issue service certificate');
        });
      },
      proxyDisconnected: (streamId) => {
        this.proxies.disconnect(streamId);
      },
      proxyContext: (identity) => this.contextOf(identity),
      generationContext: () => ({ mesh: this.currentView(), secrets }),
      // Called right after proxyConnected; the planner pushes the stream only when a
      // change may affect its group, timed from the earliest change behind the push.
      onPush: (streamId, push) => {
        const identity = this.proxies.stream(streamId)?.identity;
        if (identity === undefined) throw new Error(`stream ${streamId} is not connected`);
        return planner.register(streamId, identity, push);
      },
    };
  }

  /**
   * The proxy's context in `view`, computed once per view. Identities are
   * parsed per stream, so the cache is per connection too: a connected proxy
   * whose pod object disappears keeps the pod it had until it reconnects (the
   * last good version stays in force; see proxyContext).
   */
  private contextOf(identity: ProxyIdentity, view: MeshView = this.currentView()): ProxyContext {
    const known = this.contexts.get(identity);
    if (known?.view === view) return known.ctx;
    const ctx = proxyContext(identity, view, known?.ctx.pod);
    Object.freeze(ctx.services);
    Object.freeze(ctx);
    this.contexts.set(identity, { view, ctx });
    return ctx;
  }

  /** The current MeshConfig's settings; recomputed only when the MeshConfig object changed. */
  private currentSettings(): MeshSettings {
    const view = this.currentView();
    const from = meshConfigOf(view);
    if (this.settings === undefined || this.settings.from !== from) {
      const value = meshSettings(view, (field, err) =>
        this.log.warn({ field, err }, 'MeshConfig value ignored'),
      );
      this.settings = { from, value };
    }
    return this.settings.value;
  }

  /** MeshConfig changed: apply what can change at runtime. Permissive mode is read by the view itself. */
  private applySettings(): void {
    const view = this.currentView();
    const s = this.currentSettings();
    this.logLevel.follow(meshConfigOf(view)?.spec.observability?.logLevel);
    this.certs?.setValidity(s.validityMs);
    if (this.opts.minPushIntervalMs === undefined) this.planner?.setMinInterval(s.minPushIntervalMs);
    if (this.certs && view.trustDomain !== this.certs.trustDomain) {
      this.log.warn(
        { configured: view.trustDomain, serving: this.certs.trustDomain },
        'trust domain changes take effect after a controller restart',
      );
    }
  }

  private async syncWorkloads(): Promise<void> {
    if (!this.workloads) return;
    await this.workloads.sync(this.store.list('Pod'), this.currentView());
  }
}

/** The controller's leadership, read when asked: the elector's, or always when there is none. */
/** The Lease the replicas of one control-plane namespace compete for. */
export const LEADER_LEASE_NAME = 'skein-controller-leader';

function leadershipOf(c: { readonly electorLeads: boolean | undefined }): Leadership {
  return {
    get isLeader(): boolean {
      return c.electorLeads ?? true;
    },
  };
}
