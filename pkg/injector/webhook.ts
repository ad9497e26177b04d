// The sidecar-injection admission webhook: an HTTPS server answering
// AdmissionReview v1 for pod creation with a JSON Patch. Decisions and the
// patch come from the pure functions in mutate.ts; this file owns the I/O
// (issuing the proxy certificate, creating the bootstrap Secret) and the
// protocol edge (malformed bodies are a 400, never a crash; a pod that cannot
// be injected is `allowed: false` with a message a person can act on).
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { CertificateAuthority, IssuedCertificate } from '../certificate/types.js';
import type { Logger } from '../logger/logger.js';
import { silentLogger } from '../logger/logger.js';
import { DEFAULT_CERT_VALIDITY_MS } from '../mesh/constants.js';
import { listenTcp } from '../net/listen.js';
import { InjectionError } from './errors.js';
import type { Exclusions } from './exclusions.js';
import { decideGateway, gatewayCommonName, mutateGateway } from './gateway.js';
import type { JsonPatchOperation } from './jsonpatch.js';
import {
  checkPod,
  decide,
  type MutateOptions,
  mutate,
  type NamespaceLike,
  type SecretManifest,
  type SidecarImages,
  sidecarCommonName,
} from './mutate.js';
import { isJsonObject, type Json, type JsonObject, type PodInfo, readPod } from './pod.js';
import { proxyCertificateRequest } from './proxy-cert.js';
import { checkProxylessPod, isProxyless, mutateProxyless, proxylessCommonName } from './proxyless.js';
import type { SidecarSettings } from './sidecar-settings.js';

export const MUTATE_PATH = '/mutate-pod-creation';
/** The API server caps objects at 3 MiB; an AdmissionReview carries one (two on UPDATE) plus envelope. */
const MAX_BODY_BYTES = 8 * 1024 * 1024;

/** Creates the per-pod bootstrap Secret (Kubernetes in production, a fake in tests). */
export interface SecretWriter {
  create(secret: SecretManifest): Promise<void>;
}

/** Reads a namespace's labels and annotations; undefined when it does not exist. */
export interface NamespaceReader {
  get(name: string): Promise<NamespaceLike | undefined>;
}

/**
 * How one admission ended: `injected` (patched), `skipped` (allowed untouched),
 * `denied` (the pod is refused: bad annotations, unresolvable probes) or
 * `error` (the webhook could not do its job: API or CA failure).
 */
export type AdmissionResult = 'injected' | 'skipped' | 'denied' | 'error';

/** Hooks for metrics; kept as an interface so this package does not depend on a metrics library. */
export interface WebhookObserver {
  onAdmission(result: AdmissionResult): void;
}

export interface WebhookOptions {
  /** Serving certificate for the webhook Service name (the controller issues it from skein's CA). */
  tls: { certPem: string; keyPem: string };
  host?: string;
  /** 0 for an ephemeral port; PORT_WEBHOOK (9090) in a cluster. */
  port?: number;
  meshName: string;
  trustDomain: string;
  controlPlaneNamespace: string;
  clusterDomain?: string;
  images: SidecarImages;
  envoyResources?: JsonObject;
  /**
   * The mesh's current sidecar settings (MeshConfig `spec.sidecar`), asked at
   * every admission so a MeshConfig change applies to the next pod created.
   * Defaults when absent.
   */
  sidecarSettings?: () => SidecarSettings;
  /**
   * The mesh's interception lists now (MeshConfig `spec.traffic`), asked at
   * every admission like sidecarSettings. None when absent.
   */
  meshExclusions?: () => Exclusions;
  /**
   * Envoy as a native sidecar by default (layout.ts; the controller decides it
   * once from --native-sidecars and the API server's version). Default false.
   */
  nativeSidecars?: boolean;
  ca: Pick<CertificateAuthority, 'issue'>;
  /**
   * Validity of a proxy's ADS client certificate, read at each admission
   * (MeshConfig `certificate.validity`; default 24 h like OSM's). The
   * controller rotates it before expiry (bootstrap-rotation.ts).
   */
  proxyCertValidityMs?: () => number;
  secrets: SecretWriter;
  namespaces: NamespaceReader;
  /** The controller's Service: the bootstrap's ADS address (default `skein-controller`). */
  controllerServiceName?: string;
  logger?: Logger;
  observer?: WebhookObserver;
  /** Give pods labelled skein.dev/gateway=ingress in the control-plane namespace the gateway identity. */
  ingressGateway?: boolean;
  /** Injectable for tests; a random v4 UUID otherwise. */
  newUuid?: () => string;
}

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  patchType?: 'JSONPatch';
  /** base64 of the JSON Patch document. */
  patch?: string;
  status?: { code: number; message: string };
}

export interface AdmissionReviewResponse {
  apiVersion: 'admission.k8s.io/v1';
  kind: 'AdmissionReview';
  response: AdmissionResponse;
}

/** The fields of an AdmissionReview v1 request the injector reads. */
export interface AdmissionRequest {
  uid: string;
  kind: string;
  operation: string;
  namespace: string;
  dryRun: boolean;
  object: Json | undefined;
}

/** Validates the envelope; undefined when the body is not an AdmissionReview v1 request. */
export function parseAdmissionReview(body: unknown): AdmissionRequest | undefined {
  if (!isJsonObject(body)) return undefined;
  if (body['apiVersion'] !== 'admission.k8s.io/v1' || body['kind'] !== 'AdmissionReview') return undefined;
  const req = body['request'];
  if (!isJsonObject(req) || typeof req['uid'] !== 'string' || req['uid'] === '') return undefined;
  const kind = req['kind'];
  return {
    uid: req['uid'],
    kind: isJsonObject(kind) && typeof kind['kind'] === 'string' ? kind['kind'] : '',
    operation: typeof req['operation'] === 'string' ? req['operation'] : '',
    namespace: typeof req['namespace'] === 'string' ? req['namespace'] : '',
    dryRun: req['dryRun'] === true,
    object: req['object'],
  };
}

function review(response: AdmissionResponse): AdmissionReviewResponse {
  return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response };
}

function deny(uid: string, code: number, message: string): AdmissionReviewResponse {
  return review({ uid, allowed: false, status: { code, message: `skein sidecar injection: ${message}` } });
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export class InjectorWebhook {
  readonly #o: WebhookOptions;
  readonly #log: Logger;
  readonly #server: Server;

  constructor(options: WebhookOptions) {
    this.#o = options;
    this.#log = (options.logger ?? silentLogger()).child({ component: 'injector' });
    this.#server = createServer({ cert: options.tls.certPem, key: options.tls.keyPem }, (req, res) => {
      this.#handle(req, res).catch((err: unknown) => {
        // #handle answers every request itself; this only guards against a bug leaving one hanging.
        this.#log.error({ err }, 'webhook request failed');
        if (!res.headersSent) res.writeHead(500).end();
        else res.destroy();
      });
    });
    // Bound slow or stuck clients; the API server's own webhook timeout is at most 30 s.
    this.#server.requestTimeout = 30_000;
    this.#server.headersTimeout = 10_000;
  }

  /** Listens; resolves with the bound port. */
  start(): Promise<number> {
    return listenTcp(this.#server, this.#o.port ?? 0, this.#o.host ?? '0.0.0.0');
  }

  /** Swaps the serving certificate (rotation); new connections use it. */
  setServingCertificate(tls: { certPem: string; keyPem: string }): void {
    this.#server.setSecureContext({ cert: tls.certPem, key: tls.keyPem });
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '').split('?')[0];
    if (path === '/healthz' && req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
      return;
    }
    if (path !== MUTATE_PATH) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST', 'content-type': 'text/plain' }).end('POST an AdmissionReview\n');
      return;
    }
    const body = await readBody(req, MAX_BODY_BYTES);
    if (body === undefined) {
      res.writeHead(413, { 'content-type': 'text/plain' }).end('request body too large\n');
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch (err) {
      res.writeHead(400, { 'content-type': 'text/plain' }).end(`malformed JSON: ${errorMessage(err)}\n`);
      return;
    }
    const request = parseAdmissionReview(parsed);
    if (!request) {
      res
        .writeHead(400, { 'content-type': 'text/plain' })
        .end('expected an admission.k8s.io/v1 AdmissionReview with request.uid\n');
      return;
    }
    const answer = await this.review(request);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
  }

  /** Answers one admission request; never throws. */
  async review(request: AdmissionRequest): Promise<AdmissionReviewResponse> {
    const [result, answer] = await this.#review(request);
    this.#o.observer?.onAdmission(result);
    return answer;
  }

  async #review(request: AdmissionRequest): Promise<[AdmissionResult, AdmissionReviewResponse]> {
    const { uid } = request;
    const allow = review({ uid, allowed: true });
    // Registered for pod CREATE only; anything else passes untouched.
    if (request.kind !== 'Pod' || request.operation !== 'CREATE') return ['skipped', allow];
    let pod: ReturnType<typeof readPod>;
    let namespace: NamespaceLike | undefined;
    try {
      pod = readPod(request.object, request.namespace);
    } catch (err) {
      return ['denied', deny(uid, 400, errorMessage(err))];
    }
    const log = this.#log.child({ namespace: pod.namespace, pod: pod.name, uid });
    try {
      namespace = await this.#o.namespaces.get(pod.namespace);
    } catch (err) {
      log.warn({ err }, 'cannot read the namespace');
      return ['error', deny(uid, 500, `cannot read namespace ${pod.namespace}: ${errorMessage(err)}`)];
    }
    if (!namespace) return ['denied', deny(uid, 400, `namespace ${pod.namespace} does not exist`)];
    try {
      const gateway = decideGateway(pod, {
        controlPlaneNamespace: this.#o.controlPlaneNamespace,
        gatewayEnabled: this.#o.ingressGateway ?? false,
      });
      if (gateway.gateway === 'done') return ['skipped', allow];
      if (gateway.gateway) return ['injected', await this.#gateway(request, pod, log)];
      const decision = decide(pod, namespace, this.#o);
      if (!decision.inject) {
        log.debug({ reason: decision.reason }, 'not injecting');
        return ['skipped', allow];
      }
      if (isProxyless(pod)) return ['injected', await this.#proxyless(request, pod, log)];
      // Validate before issuing a certificate for a pod that would be refused anyway.
      checkPod(pod);
      const proxyUuid = (this.#o.newUuid ?? randomUUID)();
      const cert = await this.#issue(sidecarCommonName(pod, proxyUuid, this.#o.trustDomain));
      const m = mutate(pod, mutateOptions(this.#o, proxyUuid, cert));
      const fields = { proxyUuid, layout: m.layout, ...m.sidecar };
      return ['injected', await this.#apply(request, m, log, fields, 'injecting sidecar')];
    } catch (err) {
      if (err instanceof InjectionError) {
        log.info({ reason: err.message }, 'refusing pod');
        return ['denied', deny(uid, 400, err.message)];
      }
      log.warn({ err }, 'injection failed');
      return ['error', deny(uid, 500, errorMessage(err))];
    }
  }

  /** A proxyless workload: the agent, its certificate (also the data-plane one) and bootstrap (proxyless.ts). */
  async #proxyless(request: AdmissionRequest, pod: PodInfo, log: Logger): Promise<AdmissionReviewResponse> {
    checkProxylessPod(pod, { images: this.#o.images });
    const proxyUuid = (this.#o.newUuid ?? randomUUID)();
    const cert = await this.#issue(proxylessCommonName(pod, proxyUuid, this.#o.trustDomain));
    const m = mutateProxyless(pod, mutateOptions(this.#o, proxyUuid, cert));
    return this.#apply(request, m, log, { proxyUuid, layout: m.layout }, 'injecting skein agent (proxyless)');
  }

  /** The gateway's identity: a proxy certificate of kind `gateway` and its bootstrap Secret (gateway.ts). */
  async #gateway(request: AdmissionRequest, pod: PodInfo, log: Logger): Promise<AdmissionReviewResponse> {
    const proxyUuid = (this.#o.newUuid ?? randomUUID)();
    const cert = await this.#issue(gatewayCommonName(pod, proxyUuid, this.#o.trustDomain));
    const m = mutateGateway(pod, mutateOptions(this.#o, proxyUuid, cert));
    return this.#apply(request, m, log, { proxyUuid }, 'ingress gateway identity');
  }

  /** A proxy's bootstrap certificate, with the mesh's current bootstrap validity (proxy-cert.ts). */
  #issue(commonName: string): Promise<IssuedCertificate> {
    const validityMs = this.#o.proxyCertValidityMs?.() ?? DEFAULT_CERT_VALIDITY_MS;
    return this.#o.ca.issue(proxyCertificateRequest(commonName, validityMs));
  }

  /** Creates the proxy's Secret and allows the pod with the patch. */
  async #apply(
    request: AdmissionRequest,
    m: { patch: JsonPatchOperation[]; secret: SecretManifest },
    log: Logger,
    fields: Record<string, unknown>,
    message: string,
  ): Promise<AdmissionReviewResponse> {
    // A dry run must have no side effects (the webhook is registered with sideEffects: NoneOnDryRun).
    if (!request.dryRun) await this.#o.secrets.create(m.secret);
    log.info({ ...fields, secret: m.secret.metadata.name, dryRun: request.dryRun }, message);
    return review({
      uid: request.uid,
      allowed: true,
      patchType: 'JSONPatch',
      patch: Buffer.from(JSON.stringify(m.patch)).toString('base64'),
    });
  }
}

/** Options of `mutate` from the webhook's own (the pod-independent part). */
function mutateOptions(o: WebhookOptions, proxyUuid: string, cert: IssuedCertificate): MutateOptions {
  return {
    meshName: o.meshName,
    trustDomain: o.trustDomain,
    controlPlaneNamespace: o.controlPlaneNamespace,
    images: o.images,
    ...(o.clusterDomain !== undefined ? { clusterDomain: o.clusterDomain } : {}),
    ...(o.controllerServiceName !== undefined ? { controllerServiceName: o.controllerServiceName } : {}),
    ...(o.envoyResources !== undefined ? { envoyResources: o.envoyResources } : {}),
    ...(o.sidecarSettings ? { sidecar: o.sidecarSettings() } : {}),
    ...(o.meshExclusions ? { meshExclusions: o.meshExclusions() } : {}),
    ...(o.nativeSidecars !== undefined ? { nativeSidecars: o.nativeSidecars } : {}),
    proxyUuid,
    certificate: { certPem: cert.certPem, keyPem: cert.keyPem, caPem: cert.caPem },
  };
}

/** The whole body, or undefined once it exceeds `limit` (the rest is discarded). */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooBig = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) tooBig = true;
      if (!tooBig) chunks.push(chunk);
    });
    req.on('end', () => resolve(tooBig ? undefined : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}
