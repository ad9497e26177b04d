// The generated module for skein's own roots: the protos the encoder loads,
// the xDS resource types and every Any payload type skein writes.
import { createRequire } from 'node:module';
import { envoyProtoRoot } from '../../xds/proto/root.js';
import { AnyType } from '../common/xds.js';
import { TypeUrl } from '../types.js';
import { renderDescriptor } from './descriptor.js';
import { renderEnvoyApi } from './gen.js';

/** Where the generated module lives, relative to the repository root. */
export const ENVOY_API_PATH = 'pkg/envoy/api/envoy.ts';
/** Where the runtime descriptor lives, relative to the repository root (pkg/xds/proto/root.ts reads it). */
export const DESCRIPTOR_PATH = 'protos/envoy-descriptor.json';

/** Messages the xDS server and REST handler encode or decode besides the resources and Any payloads. */
const WIRE_MESSAGES = [
  'envoy.service.discovery.v3.DiscoveryRequest',
  'envoy.service.discovery.v3.DiscoveryResponse',
  'envoy.service.discovery.v3.DeltaDiscoveryRequest',
  'envoy.service.discovery.v3.DeltaDiscoveryResponse',
  // proto-json.ts renders Struct values through these.
  'google.protobuf.Struct',
  'google.protobuf.Value',
  'google.protobuf.ListValue',
];

function xdsPackageVersion(): string {
  const manifest: unknown = createRequire(import.meta.url)('@grpc/grpc-js-xds/package.json');
  const version =
    typeof manifest === 'object' && manifest !== null ? Reflect.get(manifest, 'version') : undefined;
  if (typeof version !== 'string') throw new Error('@grpc/grpc-js-xds/package.json has no version');
  return version;
}

export function skeinEnvoyApi(): string {
  return renderEnvoyApi(
    envoyProtoRoot(),
    { resources: Object.values(TypeUrl), anys: Object.values(AnyType) },
    `@grpc/grpc-js-xds ${xdsPackageVersion()}`,
  );
}

/** The runtime descriptor's text: every message skein encodes or decodes, and nothing else. */
export function skeinDescriptor(): string {
  const urls = [...Object.values(TypeUrl), ...Object.values(AnyType)];
  const names = urls.map((u) => u.replace(/^type\.googleapis\.com\//, ''));
  return renderDescriptor(envoyProtoRoot(), [...new Set([...names, ...WIRE_MESSAGES])].sort());
}
