import type { IncomingMessage, ServerResponse } from 'node:http';
import { TLSSocket } from 'node:tls';
import type { ProxyContext } from '../../catalog/types.js';
import { type GenerationContext, type ProtoObject, type ProtoValue, TypeUrl } from '../../envoy/types.js';
import type { Logger } from '../../logger/logger.js';
import type { ProxyIdentity } from '../../mesh/identity.js';
import type { EncodedResource } from '../cache/encoded.js';
import { type GenerationCache, subscriptionKey } from '../cache/generation.js';
import { messageType } from '../proto/root.js';
import { AuthenticationError, identityFromNodeId, identityFromPeerCertificate } from '../server/auth.js';
import type { ProxyConfigSource } from '../server/types.js';
import { anyJson } from './proto-json.js';
import {
  parseRestDiscoveryRequest,
  REST_XDS_PATHS,
  type RestDiscoveryRequest,
  RestRequestError,
} from './request.js';

export interface RestXdsOptions {
  /** The same source the ADS server generates from. */
  source: Pick<ProxyConfigSource, 'proxyContext' | 'generationContext' | 'generators'>;
  /** The ADS server's cache (AdsServer.cache): REST and ADS share sets, versions and bytes. */
  cache: GenerationCache;
  /** Trust domain every proxy identity must carry. */
  trustDomain: string;
  logger: Logger;
  /** DiscoveryResponse.control_plane.identifier; default "skein". */
  controlPlaneId?: string;
  /**
   * Runs before secrets are generated for an identity, e.g. the certificate
   * manager's `ensure` (ADS issues on connect; a REST caller may never connect).
   */
  prepareSecrets?(identity: ProxyIdentity): Promise<unknown>;
  /** Told of each requested name the proxy may never have (as the ADS server's observer is). */
  onResourceRefused?(typeUrl: string, reason: string): void;
}

/**
 * Authenticates in two steps: the connection before the body is read, then the
 * parsed request (node.id) against it.
 */
type Authenticate = () => (request: RestDiscoveryRequest) => ProxyIdentity;

/** What a fetch produced: a response body, or "you hold the current version" (HTTP 304). */
export type RestXdsResult =
  | { status: 200; version: string; body: ProtoObject }
  | { status: 304; version: string };

const MAX_BODY_BYTES = 1024 * 1024;
const RESPONSE_TYPE = 'envoy.service.discovery.v3.DiscoveryResponse';

/** An HTTP error with the message the caller sees. */
class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Encoded resources as proto3 JSON Anys, decoded from the very bytes ADS sends. */
export function resourcesJson(resources: readonly EncodedResource[]): ProtoValue[] {
  if (resources.length === 0) return [];
  // Each resource is framed as a DiscoveryResponse.resources entry, so the
  // concatenation decodes as a DiscoveryResponse holding exactly those Anys.
  const type = messageType(RESPONSE_TYPE);
  const decoded: unknown = type.decode(Buffer.concat(resources.map((r) => r.framed)));
  const anys = typeof decoded === 'object' && decoded !== null ? Reflect.get(decoded, 'resources') : [];
  if (!Array.isArray(anys)) return [];
  return anys.map((a: unknown) => {
    const typeUrl = typeof a === 'object' && a !== null ? Reflect.get(a, 'type_url') : '';
    const value = typeof a === 'object' && a !== null ? Reflect.get(a, 'value') : undefined;
    return anyJson(typeof typeUrl === 'string' ? typeUrl : '', value);
  });
}

/**
 * REST-JSON xDS: `POST /v3/discovery:<type>` with a JSON DiscoveryRequest,
 * answered with the JSON DiscoveryResponse ADS would send the same proxy
 * (the same generators, cache and version). Like Envoy's HTTP subscription
 * expects, an unchanged version is answered 304 Not Modified; there is no
 * nonce (REST has no stream to ACK on).
 */
export class RestXds {
  private readonly log: Logger;

  constructor(private readonly opts: RestXdsOptions) {
    this.log = opts.logger.child({ component: 'rest-xds' });
  }

  /** The paths served (mount each on a server). */
  get paths(): string[] {
    return [...REST_XDS_PATHS.keys()];
  }

  /**
   * EDS has no wildcard (xDS rule 6): "everything the proxy would be sent" is
   * the assignments of the clusters CDS gives it (an EDS cluster without
   * service_name is assigned under its own name; other names are skipped).
   */
  private clusterNames(proxy: ProxyContext, ctx: GenerationContext): Set<string> {
    const cds = this.opts.source.generators.get(TypeUrl.Cluster);
    return new Set((cds?.generate(proxy, ctx, undefined) ?? []).map((r) => r.name));
  }

  /**
   * One fetch for an already authenticated identity. An empty name list asks
   * for everything the proxy would be sent of the type (a fetch subscribes to
   * nothing, so the ADS meaning "unsubscribe" does not apply).
   */
  async discover(identity: ProxyIdentity, req: RestDiscoveryRequest): Promise<RestXdsResult> {
    const generator = this.opts.source.generators.get(req.typeUrl);
    if (generator === undefined) throw new HttpError(404, `skein does not serve ${req.typeUrl}`);
    if (req.typeUrl === TypeUrl.Secret) await this.opts.prepareSecrets?.(identity);
    let logged = 0;
    for (const name of req.resourceNames) {
      const reason = generator.refusal?.(name, identity);
      if (reason === undefined) continue;
      this.opts.onResourceRefused?.(req.typeUrl, reason);
      // Counted every time, logged for the first few of a request only.
      if (++logged > 5) continue;
      this.log.warn(
        { proxy: identity.cn, typeUrl: req.typeUrl, name: name.slice(0, 200), reason },
        'refused a resource this proxy may not have',
      );
    }
    const proxy = this.opts.source.proxyContext(identity);
    const ctx = this.opts.source.generationContext();
    const names =
      req.resourceNames.length > 0
        ? new Set(req.resourceNames)
        : req.typeUrl === TypeUrl.ClusterLoadAssignment
          ? this.clusterNames(proxy, ctx)
          : undefined;
    // The cache may hand generation a context of its own (one that records what
    // is read, for targeted pushes); build from that one when it does.
    const set = this.opts.cache.get(
      req.typeUrl,
      proxy,
      ctx,
      { names, key: subscriptionKey(names) },
      (given?: GenerationContext) => generator.generate(proxy, given ?? ctx, names),
      generator.shared,
    );
    if (req.versionInfo !== '' && req.versionInfo === set.version)
      return { status: 304, version: set.version };
    return {
      status: 200,
      version: set.version,
      body: {
        version_info: set.version,
        resources: resourcesJson(set.resources),
        type_url: req.typeUrl,
        control_plane: { identifier: this.opts.controlPlaneId ?? 'skein' },
      },
    };
  }

  /**
   * Handler for the HTTPS port: the identity is the verified client
   * certificate's CN, and the request must be for that node.
   */
  readonly handleMtls = (req: IncomingMessage, res: ServerResponse): void => {
    this.serve(req, res, () => {
      // The peer is checked before the body is read: an unauthenticated caller learns nothing.
      const identity = this.peerIdentity(req);
      return (request) => {
        if (request.nodeId !== identity.cn)
          throw new HttpError(
            403,
            `node.id ${JSON.stringify(request.nodeId)} is not the client certificate's CN ${JSON.stringify(identity.cn)}: a proxy may fetch only its own configuration`,
          );
        return identity;
      };
    });
  };

  /** Handler for the plain HTTP port in local mode: the identity is node.id (trusted, like the plaintext ADS port). */
  readonly handleNodeId = (req: IncomingMessage, res: ServerResponse): void => {
    this.serve(req, res, () => (request) => {
      try {
        return identityFromNodeId(request.nodeId, this.opts.trustDomain);
      } catch (e) {
        throw new HttpError(400, e instanceof AuthenticationError ? e.message : String(e));
      }
    });
  };

  /** The proxy identity of a verified client certificate; 401 without one, 403 when its CN is no proxy's. */
  private peerIdentity(req: IncomingMessage): ProxyIdentity {
    const socket = req.socket;
    if (!(socket instanceof TLSSocket)) throw new HttpError(401, 'REST xDS on this port requires TLS');
    if (!socket.authorized) {
      const cert = socket.getPeerCertificate();
      const presented = cert !== null && Object.keys(cert).length > 0;
      throw new HttpError(
        401,
        presented
          ? `client certificate not trusted: ${String(socket.authorizationError ?? 'unknown reason')}`
          : 'a client certificate issued by the mesh CA is required',
      );
    }
    try {
      return identityFromPeerCertificate(socket.getPeerCertificate(), this.opts.trustDomain);
    } catch (e) {
      throw new HttpError(403, e instanceof AuthenticationError ? e.message : String(e));
    }
  }

  private serve(req: IncomingMessage, res: ServerResponse, authenticate: Authenticate): void {
    this.answer(req, authenticate).then(
      (result) => {
        if (result.status === 304) {
          res.writeHead(304, { etag: `"${result.version}"` });
          res.end();
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json', etag: `"${result.version}"` });
        res.end(`${JSON.stringify(result.body)}\n`);
      },
      (err: unknown) => {
        const status = err instanceof HttpError ? err.status : 500;
        const message = err instanceof Error ? err.message : String(err);
        if (status >= 500) this.log.error({ err, path: req.url }, 'REST xDS request failed');
        else if (status === 401 || status === 403)
          this.log.warn(
            { path: req.url, remote: req.socket.remoteAddress, status },
            `REST xDS refused: ${message}`,
          );
        sendError(res, status, message, status === 405 ? { allow: 'POST' } : {});
      },
    );
  }

  private async answer(req: IncomingMessage, authenticate: Authenticate): Promise<RestXdsResult> {
    const matches = authenticate();
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const typeUrl = REST_XDS_PATHS.get(path);
    if (typeUrl === undefined)
      throw new HttpError(404, `not a REST xDS endpoint; use ${[...REST_XDS_PATHS.keys()].join(', ')}`);
    if (req.method !== 'POST') throw new HttpError(405, 'REST xDS takes a POST with a JSON DiscoveryRequest');
    const body = await readBody(req);
    let request: RestDiscoveryRequest;
    try {
      request = parseRestDiscoveryRequest(body, typeUrl);
    } catch (e) {
      if (e instanceof RestRequestError) throw new HttpError(400, e.message);
      throw e;
    }
    const identity = matches(request);
    const result = await this.discover(identity, request);
    this.log.debug(
      { proxy: identity.cn, typeUrl, status: result.status, version: result.version },
      'REST xDS fetch',
    );
    return result;
  }
}

/** Handler for the plain HTTP port outside local mode: REST xDS only over mTLS. */
export function refusePlainRestXds(
  mtlsPort: number | undefined,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (_req, res) =>
    sendError(
      res,
      403,
      mtlsPort === undefined
        ? 'REST xDS requires mTLS, and the REST xDS port is off (--rest-xds-port)'
        : `REST xDS requires mTLS on port ${mtlsPort} (a client certificate whose CN is the node.id)`,
    );
}

function sendError(
  res: ServerResponse,
  status: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', ...headers });
  res.end(`${message}\n`);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      // Past the limit the rest is read and dropped, so the 413 still reaches the caller.
      if (size > MAX_BODY_BYTES) reject(new HttpError(413, `request body over ${MAX_BODY_BYTES} bytes`));
      else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
