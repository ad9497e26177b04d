import type { ServerReadableStream, ServiceDefinition, UntypedServiceImplementation } from '@grpc/grpc-js';
import type { ProxyContext } from '../../catalog/types.js';
import type { GenerationContext, ResourceGenerator } from '../../envoy/types.js';
import type { Logger } from '../../logger/logger.js';
import type { ProxyIdentity } from '../../mesh/identity.js';
import type { DependencyTracker } from '../cache/deps.js';
import type { StreamLimits } from './limits.js';
import type { XdsObserver } from './observer.js';

/** What the ADS server needs from the rest of skein. */
export interface ProxyConfigSource {
  /** Called when a stream's first request arrives (after auth). Throw to refuse (e.g. unknown proxy). */
  proxyConnected(identity: ProxyIdentity, streamId: string, remote?: string): void;
  proxyDisconnected(streamId: string): void;
  /** Current ProxyContext for an identity (pod, services, groupKey) at the current view. */
  proxyContext(identity: ProxyIdentity): ProxyContext;
  /** Current MeshView + SecretSource. */
  generationContext(): GenerationContext;
  generators: ReadonlyMap<string /* typeUrl */, ResourceGenerator>;
  /**
   * Subscribe a stream to push triggers (the repeater; already coalesced per stream). Returns unsubscribe.
   * `changedAt` (epoch ms) is when the earliest change behind the push happened, for change-to-ACK timing.
   */
  onPush(streamId: string, push: (changedAt?: number) => void): () => void;
}

/** Another gRPC service on the mTLS port, its callers authenticated as ADS callers are. */
export interface AuthenticatedService {
  definition: ServiceDefinition;
  /** `authenticate` gives a call's proxy identity from its verified client certificate, or throws. */
  implementation(
    authenticate: (call: Pick<ServerReadableStream<unknown, unknown>, 'getAuthContext'>) => ProxyIdentity,
  ): UntypedServiceImplementation;
}

export interface AdsTlsOptions {
  /** CA bundle that client certificates must chain to. */
  caPem: string;
  /** The server's own certificate and key. */
  certPem: string;
  keyPem: string;
}

export interface AdsServerOptions {
  source: ProxyConfigSource;
  tls: AdsTlsOptions;
  /** Trust domain every proxy CN must carry. */
  trustDomain: string;
  logger: Logger;
  /** Address to bind; default 0.0.0.0. */
  host?: string;
  /** mTLS port; 0 = ephemeral. */
  port: number;
  /**
   * Plaintext port for proxyless gRPC clients (identity = node.id). Off unless
   * set; 0 = ephemeral.
   */
  insecurePort?: number;
  /** DiscoveryResponse.control_plane.identifier; default "skein". */
  controlPlaneId?: string;
  /**
   * Types whose generator output also depends on the SecretSource (default:
   * SDS): cached per group, view version and `secrets.version`, or rebuilt on
   * every push when the source has no version.
   */
  secretDependentTypes?: readonly string[];
  /** Bytes written but not yet flushed to a stream before it counts as blocked; default 4 MiB. */
  maxBufferedBytes?: number;
  /** Told about connections, responses, ACKs and NACKs, e.g. to count them as metrics. */
  observer?: XdsObserver;
  /** What one stream may cost everyone else; unset fields take DEFAULT_STREAM_LIMITS (limits.ts). */
  limits?: Partial<StreamLimits>;
  /**
   * Records what every generation reads, so a PushPlanner can push only the
   * groups a change affects (pkg/xds/push). Without it the cache is plain per view version.
   */
  dependencies?: DependencyTracker;
  /** More services on the mTLS port only (the plaintext port identifies no one), e.g. pkg/stats' MetricsService. */
  services?: readonly AuthenticatedService[];
}

/** Per-type state of one stream, for the debug endpoint. */
export interface TypeStatus {
  sentVersion?: string;
  ackedVersion?: string;
  nackedVersion?: string;
  lastNackMessage?: string;
  /** '*' for a wildcard; Delta xDS may add explicitly named ones to it (`names`). */
  subscribed: string[] | '*';
  /** Delta only: names subscribed explicitly next to a wildcard. */
  names?: string[];
}

/** One connected stream, for the debug endpoint. */
export interface StreamStatus {
  streamId: string;
  identity: ProxyIdentity;
  /** ISO time of the first request. */
  connectedAt: string;
  remote?: string;
  /** node.id of the first request (xDS rule 5). */
  nodeId?: string;
  /** Which ADS method the stream uses; absent = state of the world. */
  protocol?: 'delta';
  /** mTLS streams: the client certificate the stream was opened with (ISO times). */
  clientCert?: { notBefore: string; notAfter: string; serial: string };
  /**
   * The request messages this stream received and their encoded bytes (without
   * gRPC and HTTP/2 framing): a proxy repeating its Node in every request (a
   * bootstrap without set_node_on_first_message_only) shows here.
   */
  received: { requests: number; bytes: number };
  types: { [typeUrl: string]: TypeStatus };
}

/** A decoded DiscoveryRequest, reduced to what the server reads. */
export interface DiscoveryRequest {
  versionInfo: string;
  node?: { id: string; cluster: string };
  resourceNames: string[];
  typeUrl: string;
  responseNonce: string;
  /** Present on a NACK. */
  errorDetail?: { code: number; message: string };
  /** The encoded message's size, set by the server's decoder (limits.ts decodeWithin). */
  encodedBytes?: number;
}

/** A decoded DeltaDiscoveryRequest (Delta xDS, xDS rule 11), reduced to what the server reads. */
export interface DeltaDiscoveryRequest {
  node?: { id: string; cluster: string };
  typeUrl: string;
  resourceNamesSubscribe: string[];
  resourceNamesUnsubscribe: string[];
  /** Only on the first request of a type on a reconnected stream: name → version the client holds. */
  initialResourceVersions: Map<string, string>;
  /** Empty unless the request ACKs or NACKs a response. */
  responseNonce: string;
  /** Present on a NACK. */
  errorDetail?: { code: number; message: string };
  /** The encoded message's size, set by the server's decoder (limits.ts decodeWithin). */
  encodedBytes?: number;
}
