// Numeric values of the Envoy enums skein's generators set. protobufjs accepts
// names or numbers in fromObject form; a misspelled name would be dropped
// silently, a misnamed constant here fails to compile, and enums.test.ts
// checks every value against the loaded protos.

/** envoy.config.core.v3.ApiVersion */
export const ApiVersion = { V3: 2 } as const;
/** envoy.config.cluster.v3.Cluster.DiscoveryType */
export const DiscoveryType = { STATIC: 0, STRICT_DNS: 1, LOGICAL_DNS: 2, EDS: 3, ORIGINAL_DST: 4 } as const;
/** envoy.config.cluster.v3.Cluster.LbPolicy */
export const LbPolicy = {
  ROUND_ROBIN: 0,
  LEAST_REQUEST: 1,
  RING_HASH: 2,
  MAGLEV: 5,
  CLUSTER_PROVIDED: 6,
} as const;
/** envoy.config.core.v3.HealthStatus */
export const HealthStatus = { HEALTHY: 1 } as const;
/** envoy.config.core.v3.TrafficDirection */
export const TrafficDirection = { INBOUND: 1, OUTBOUND: 2 } as const;
/** envoy.config.rbac.v3.RBAC.Action */
export const RbacAction = { ALLOW: 0, DENY: 1 } as const;
/** envoy.extensions.transport_sockets.tls.v3.SubjectAltNameMatcher.SanType */
export const SanType = { URI: 3 } as const;
/** envoy.config.accesslog.v3.ComparisonFilter.Op */
export const ComparisonOp = { EQ: 0 } as const;

/** envoy.config.route.v3.VirtualHost.TlsRequirementType */
export const TlsRequirement = { ALL: 2 } as const;

/** envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.CodecType */
export const CodecType = { AUTO: 0 } as const;

/** envoy.type.v3.FractionalPercent.DenominatorType */
export const Denominator = { HUNDRED: 0 } as const;
/** envoy.config.core.v3.HeaderValueOption.HeaderAppendAction */
export const HeaderAppendAction = { OVERWRITE_IF_EXISTS_OR_ADD: 2 } as const;
/** envoy.config.trace.v3.ZipkinConfig.CollectorEndpointVersion */
export const ZipkinEndpointVersion = { HTTP_JSON: 1 } as const;

/** Proto enum full name → the values above, for the test. */
export const ENUMS_BY_PROTO_NAME: Readonly<Record<string, Readonly<Record<string, number>>>> = {
  'envoy.config.core.v3.ApiVersion': ApiVersion,
  'envoy.type.v3.FractionalPercent.DenominatorType': Denominator,
  'envoy.config.core.v3.HeaderValueOption.HeaderAppendAction': HeaderAppendAction,
  'envoy.config.cluster.v3.Cluster.DiscoveryType': DiscoveryType,
  'envoy.config.cluster.v3.Cluster.LbPolicy': LbPolicy,
  'envoy.config.core.v3.HealthStatus': HealthStatus,
  'envoy.config.core.v3.TrafficDirection': TrafficDirection,
  'envoy.config.rbac.v3.RBAC.Action': RbacAction,
  'envoy.extensions.transport_sockets.tls.v3.SubjectAltNameMatcher.SanType': SanType,
  'envoy.config.accesslog.v3.ComparisonFilter.Op': ComparisonOp,
  'envoy.config.route.v3.VirtualHost.TlsRequirementType': TlsRequirement,
  'envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.CodecType': CodecType,
  'envoy.config.trace.v3.ZipkinConfig.CollectorEndpointVersion': ZipkinEndpointVersion,
};
