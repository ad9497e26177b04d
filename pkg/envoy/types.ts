import type { MeshView, ProxyContext } from '../catalog/types.js';
import type { SecretSource } from '../certificate/types.js';
import type { ProxyIdentity } from '../mesh/identity.js';
import type { ResourceMessages } from './api/envoy.js';

export const TypeUrl = {
  Listener: 'type.googleapis.com/envoy.config.listener.v3.Listener',
  RouteConfiguration: 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration',
  Cluster: 'type.googleapis.com/envoy.config.cluster.v3.Cluster',
  ClusterLoadAssignment: 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment',
  Secret: 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret',
} as const;
export type TypeUrl = (typeof TypeUrl)[keyof typeof TypeUrl];

/** Make-before-break order (xDS rule 10): CDS → EDS → LDS → RDS, SDS with clusters. */
export const PUSH_ORDER: readonly TypeUrl[] = [
  TypeUrl.Cluster,
  TypeUrl.ClusterLoadAssignment,
  TypeUrl.Secret,
  TypeUrl.Listener,
  TypeUrl.RouteConfiguration,
];

/** Wildcard subscriptions exist only for LDS and CDS (xDS rule 6). */
export function isWildcardType(typeUrl: string): boolean {
  return typeUrl === TypeUrl.Listener || typeUrl === TypeUrl.Cluster;
}

/** A plain object in protobufjs `fromObject` form with proto field names (snake_case); Anys carry `@type`. */
export type ProtoObject = { [field: string]: ProtoValue };
export type ProtoValue = string | number | boolean | null | ProtoObject | ProtoValue[];

/** One xDS resource before encoding, its message of the type its URL names (pkg/envoy/api/envoy.ts). */
export type Resource = {
  [U in TypeUrl]: { name: string; typeUrl: U; message: ResourceMessages[U] };
}[TypeUrl];

export interface GenerationContext {
  mesh: MeshView;
  secrets: SecretSource;
}

/**
 * Builds one xDS type for one proxy. Contract: a pure function of its inputs
 * (no I/O, no clock), output sorted by name with unique names. `requested` is
 * the set of names the proxy subscribed to, or undefined for a wildcard
 * subscription; generators may return more than requested (the server
 * filters) but must return every requested name that exists.
 */
export interface ResourceGenerator {
  readonly typeUrl: TypeUrl;
  generate(
    proxy: ProxyContext,
    ctx: GenerationContext,
    requested: ReadonlySet<string> | undefined,
  ): Resource[];
  /**
   * Why a requested name can never be served to this proxy, whatever the
   * policy (counted and logged by the server); undefined when it may be.
   * Generators without names a proxy must not have leave it out.
   */
  refusal?(name: string, proxy: ProxyIdentity): string | undefined;
  /**
   * The output depends on the context and the requested names only, never on
   * the proxy: one generation serves every proxy with the same subscription
   * (GenerationCache). EDS is; anything reading the proxy must not say so.
   */
  readonly shared?: boolean;
}
