// The sidecar-injection webhook as the controller runs it: a serving
// certificate from skein's CA for the controller Service's names (renewed
// before expiry), the InjectorWebhook with Kubernetes (or local-mode)
// Secret/Namespace access, and in Kubernetes mode the caBundle of the
// MutatingWebhookConfiguration kept equal to the CA.

import path from 'node:path';
import { DEFAULT_SERVER_CERT_VALIDITY_MS } from '../certificate/builtin.js';
import type { RotatingCA } from '../certificate/rotating-ca.js';
import { ServingRenewal } from '../certificate/serving-renewal.js';
import {
  BootstrapCertRotation,
  type BootstrapCredentialWriter,
  type CaStage,
  type ConnectedCertificate,
} from '../injector/bootstrap-rotation.js';
import { CaBundleSync, type KubeWatchClient } from '../injector/ca-bundle.js';
import type { Exclusions } from '../injector/exclusions.js';
import { FileSecretWriter } from '../injector/file-secrets.js';
import { GATEWAY_INGRESS } from '../injector/gateway.js';
import { UnidentifiedGatewayReaper } from '../injector/gateway-reaper.js';
import {
  KubeBootstrapCredentialWriter,
  KubeSecretWriter,
  StoreOrApiNamespaceReader,
} from '../injector/kube.js';
import { chooseDefaultLayout, type LayoutChoice, parseServerVersion } from '../injector/layout.js';
import { proxyCertificateRequest } from '../injector/proxy-cert.js';
import { BootstrapSecretGc, KubeBootstrapSecretApi } from '../injector/secret-gc.js';
import type { SidecarSettings } from '../injector/sidecar-settings.js';
import {
  InjectorWebhook,
  type NamespaceReader,
  type SecretWriter,
  type WebhookObserver,
} from '../injector/webhook.js';
import type { Leadership } from '../leader/leadership.js';
import type { Logger } from '../logger/logger.js';
import { DEFAULT_CERT_VALIDITY_MS, LABEL_GATEWAY, LABEL_PROXY_UUID } from '../mesh/constants.js';
import type { Pod } from '../model/objects.js';
import { KubeApiError } from '../registry/kube/client.js';
import { Reflector } from '../registry/kube/reflector.js';
import type { MeshStore } from '../registry/store.js';
import type { ControllerOptions } from './options.js';

/** The Service's in-cluster DNS names, most specific last: `<svc>.<ns>`, `<svc>.<ns>.svc`, `<svc>.<ns>.svc.<domain>`. */
export function serviceDnsNames(
  service: string,
  namespace: string,
  clusterDomain = 'cluster.local',
): string[] {
  return [
    `${service}.${namespace}`,
    `${service}.${namespace}.svc`,
    `${service}.${namespace}.svc.${clusterDomain}`,
  ];
}

/**
 * SANs of the controller's serving certificates (ADS and webhook): the
 * Service's DNS names (the API server calls the webhook at `<svc>.<ns>.svc`;
 * the bootstrap dials ADS at `<svc>.<ns>.svc.cluster.local`), the listen
 * address when it is a specific one, and every --extra-san.
 */
export function servingNames(
  o: Pick<ControllerOptions, 'serviceName' | 'namespace' | 'host' | 'extraSans'>,
): string[] {
  const wildcard = o.host === '0.0.0.0' || o.host === '::';
  return [
    ...new Set([
      ...serviceDnsNames(o.serviceName, o.namespace),
      ...(wildcard ? [] : [o.host]),
      ...o.extraSans,
    ]),
  ];
}

/**
 * The webhook's default sidecar layout. `auto` in Kubernetes mode reads the API
 * server's `GET /version` once (the layout must not flip between pods of one
 * rollout); an error or an unreadable answer means classic, which every
 * Kubernetes runs. No cluster (local mode): classic unless forced.
 */
export async function defaultSidecarLayout(
  mode: ControllerOptions['nativeSidecars'],
  kube: Pick<KubeWatchClient, 'request'> | undefined,
): Promise<LayoutChoice> {
  if (mode !== 'auto' || !kube) return chooseDefaultLayout(mode, 'none');
  let body: unknown;
  try {
    body = await kube.request('GET', '/version');
  } catch (err) {
    return chooseDefaultLayout(mode, { unavailable: err instanceof Error ? err.message : String(err) });
  }
  const version = parseServerVersion(body);
  return chooseDefaultLayout(mode, version ?? { unavailable: `unreadable answer ${JSON.stringify(body)}` });
}

export interface InjectionOptions {
  ca: RotatingCA;
  options: ControllerOptions;
  trustDomain: string;
  store: MeshStore;
  /** Kubernetes mode: the API client; undefined in local mode. */
  kube?: KubeWatchClient;
  observer?: WebhookObserver;
  /** The mesh's sidecar settings now (MeshConfig `spec.sidecar`), read at each admission. */
  sidecarSettings?: () => SidecarSettings;
  /** The mesh's interception lists now (MeshConfig `spec.traffic`), read at each admission. */
  meshExclusions?: () => Exclusions;
  logger: Logger;
  /** Serving certificate lifetime (default 1 year; renewed at 2/3 of it). */
  servingValidityMs?: number;
  /** Kubernetes mode: caBundle upkeep and Secret collection follow it (pkg/leader). */
  leadership?: Leadership;
  /** Validity of proxies' ADS client certificates now (MeshConfig `certificate.validity`). */
  proxyCertValidityMs?: () => number;
  /** The proxies connected over mTLS and their certificates: what bootstrap rotation renews. */
  connectedCertificates?: () => Iterable<ConnectedCertificate>;
}

export class Injection {
  private constructor(
    readonly port: number,
    private readonly webhook: InjectorWebhook,
    readonly renewal: ServingRenewal,
    private readonly caBundle: CaBundleSync | undefined,
    private readonly secretGc: BootstrapSecretGc | undefined,
    private readonly gatewayPods: Reflector<Pod> | undefined,
    private readonly gatewayReaper: UnidentifiedGatewayReaper | undefined,
    readonly rotation: BootstrapCertRotation | undefined,
  ) {}

  /** Listens on --webhook-port; in Kubernetes mode also starts keeping the caBundle current. */
  static async start(i: InjectionOptions): Promise<Injection> {
    const o = i.options;
    const log = i.logger;
    const names = servingNames(o);
    let webhook: InjectorWebhook | undefined;
    const renewal = new ServingRenewal({
      issue: () =>
        i.ca.issueServerCert(names, {
          commonName: names[1] ?? names[0] ?? o.serviceName,
          validityMs: i.servingValidityMs ?? DEFAULT_SERVER_CERT_VALIDITY_MS,
        }),
      apply: (cert) => webhook?.setServingCertificate({ certPem: cert.certPem, keyPem: cert.keyPem }),
      logger: log.child({ component: 'webhook-cert' }),
    });
    const first = await renewal.start();
    let secrets: SecretWriter;
    let credentials: BootstrapCredentialWriter;
    let namespaces: NamespaceReader;
    const fromStore = (name: string) => i.store.get('Namespace', name);
    let secretGc: BootstrapSecretGc | undefined;
    if (i.kube) {
      // Pods' bootstrap Secrets are deleted once no pod carries their proxy UUID (secret-gc.ts).
      const gc = new BootstrapSecretGc({
        store: i.store,
        api: new KubeBootstrapSecretApi(i.kube),
        logger: log,
        ...(o.bootstrapOrphanGraceMs !== undefined ? { orphanGraceMs: o.bootstrapOrphanGraceMs } : {}),
        ...(i.leadership ? { leadership: i.leadership } : {}),
      });
      secretGc = gc;
      const writer = new KubeSecretWriter(i.kube);
      secrets = {
        create: async (secret) => {
          await writer.create(secret);
          const uuid = secret.metadata.labels[LABEL_PROXY_UUID];
          if (uuid !== undefined) gc.created(secret.metadata.namespace, uuid);
        },
      };
      namespaces = new StoreOrApiNamespaceReader(fromStore, i.kube);
      credentials = new KubeBootstrapCredentialWriter(i.kube);
    } else {
      // Local mode: manifests are the only namespaces there are.
      const files = new FileSecretWriter(path.join(o.stateDir, 'secrets'));
      secrets = files;
      credentials = files;
      namespaces = { get: async (name) => fromStore(name) };
    }
    const layout = await defaultSidecarLayout(o.nativeSidecars, i.kube);
    const layoutLog = { nativeSidecars: layout.native, mode: o.nativeSidecars, reason: layout.reason };
    const layoutMsg = `sidecar layout: ${layout.native ? 'native' : 'classic'}`;
    // A fallback is a warning: the operator may want to force a layout with --native-sidecars.
    if (layout.fellBack) log.warn(layoutLog, layoutMsg);
    else log.info(layoutLog, layoutMsg);
    webhook = new InjectorWebhook({
      tls: { certPem: first.certPem, keyPem: first.keyPem },
      host: o.host,
      ...(o.webhookPort !== undefined ? { port: o.webhookPort } : {}),
      meshName: o.meshName,
      trustDomain: i.trustDomain,
      controlPlaneNamespace: o.namespace,
      controllerServiceName: o.serviceName,
      images: { envoy: o.envoyImage, init: o.initImage, agent: o.agentImage },
      nativeSidecars: layout.native,
      ...(o.ingressGateway ? { ingressGateway: true } : {}),
      ca: i.ca,
      secrets,
      namespaces,
      logger: log,
      ...(i.observer ? { observer: i.observer } : {}),
      ...(i.sidecarSettings ? { sidecarSettings: i.sidecarSettings } : {}),
      ...(i.meshExclusions ? { meshExclusions: i.meshExclusions } : {}),
      ...(i.proxyCertValidityMs ? { proxyCertValidityMs: i.proxyCertValidityMs } : {}),
    });
    let port: number;
    try {
      port = await webhook.start();
    } catch (err) {
      renewal.stop();
      throw err;
    }
    secretGc?.start();
    let rotation: BootstrapCertRotation | undefined;
    if (i.connectedCertificates) {
      const validityMs = i.proxyCertValidityMs ?? (() => DEFAULT_CERT_VALIDITY_MS);
      rotation = new BootstrapCertRotation({
        connected: i.connectedCertificates,
        issue: (commonName) => i.ca.issue(proxyCertificateRequest(commonName, validityMs())),
        writer: credentials,
        logger: log,
        // A tenth of the validity, at most 10 s: renewal at two thirds leaves a third to act in.
        intervalMs: () => Math.max(250, Math.min(10_000, validityMs() / 10)),
      });
      rotation.start();
    }
    let gatewayPods: Reflector<Pod> | undefined;
    let gatewayReaper: UnidentifiedGatewayReaper | undefined;
    if (i.kube && secretGc && o.ingressGateway) {
      // The gateway's pods live outside the mesh's namespaces, so the registry never
      // reports them gone: a watch of its own tells the collector.
      const gc = secretGc;
      const kube = i.kube;
      const reaper = new UnidentifiedGatewayReaper({
        deletePod: async (name) => {
          try {
            await kube.request(
              'DELETE',
              `/api/v1/namespaces/${encodeURIComponent(o.namespace)}/pods/${encodeURIComponent(name)}`,
            );
          } catch (err) {
            if (!(err instanceof KubeApiError && err.status === 404)) throw err;
          }
        },
        ...(i.leadership ? { leadership: i.leadership } : {}),
        logger: log,
      });
      gatewayReaper = reaper;
      gatewayPods = new Reflector<Pod>({
        name: 'gateway Pod',
        client: i.kube,
        path: `/api/v1/namespaces/${encodeURIComponent(o.namespace)}/pods`,
        query: { labelSelector: `${LABEL_GATEWAY}=${GATEWAY_INGRESS}` },
        decode: (raw) => raw as unknown as Pod,
        handler: {
          // A gateway pod admitted before the webhook could answer can never start (gateway-reaper.ts).
          upsert: (_key, pod) => reaper.seen(pod),
          delete: (_key, pod) => {
            reaper.gone(pod);
            gc.podDeleted(pod);
          },
        },
        logger: log,
      });
      gatewayPods.start();
    }
    let caBundle: CaBundleSync | undefined;
    if (i.kube) {
      caBundle = new CaBundleSync({
        client: i.kube,
        name: o.webhookConfigName,
        caBundlePem: () => i.ca.trustBundlePem,
        logger: log,
        ...(i.leadership ? { leadership: i.leadership } : {}),
      });
      caBundle.start();
    }
    log.info({ port, sans: names }, 'sidecar-injection webhook serving');
    return new Injection(port, webhook, renewal, caBundle, secretGc, gatewayPods, gatewayReaper, rotation);
  }

  /** This replica became leader: reconcile the caBundle now, collect what it saw as a follower. */
  leadershipGained(): void {
    this.caBundle?.resync();
    this.secretGc?.leadershipGained();
    this.gatewayReaper?.leadershipGained();
  }

  /** The CA bundle changed (a CA rotation): re-patch the webhook configuration now. */
  caBundleChanged(): void {
    this.caBundle?.resync();
  }

  /**
   * A root rotation stage began (undefined: none runs): the webhook's serving
   * certificate is reissued, the caBundle re-patched, and every connected
   * proxy's bootstrap Secret rewritten for the stage.
   */
  caStageChanged(stage: CaStage | undefined): void {
    this.renewal.renewNow();
    this.caBundle?.resync();
    this.rotation?.setCaStage(stage);
  }

  /** What of the injector does not hold `bundlePem` yet: the webhook's caBundle and the bootstrap Secrets. */
  caStageProgress(bundlePem: string): { pending: number; lastWriteAt?: number } {
    const secrets = this.rotation?.caStageProgress() ?? { pending: 0 };
    const webhook = this.caBundle === undefined || this.caBundle.holds(bundlePem) ? 0 : 1;
    return { ...secrets, pending: secrets.pending + webhook };
  }

  async stop(): Promise<void> {
    this.renewal.stop();
    this.rotation?.stop();
    await this.caBundle?.stop();
    await this.webhook.close();
    this.gatewayReaper?.stop();
    await this.gatewayPods?.stop();
    await this.secretGc?.stop();
  }
}
