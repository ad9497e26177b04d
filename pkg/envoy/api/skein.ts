// The generated module for skein's own roots: the protos the encoder loads,
// the xDS resource types and every Any payload type skein writes.
import { createRequire } from 'node:module';
import { envoyRoot } from '../../xds/proto/root.js';
import { AnyType } from '../common/xds.js';
import { TypeUrl } from '../types.js';
import { renderEnvoyApi } from './gen.js';

/** Where the generated module lives, relative to the repository root. */
export const ENVOY_API_PATH = 'pkg/envoy/api/envoy.ts';

function xdsPackageVersion(): string {
  const manifest: unknown = createRequire(import.meta.url)('@grpc/grpc-js-xds/package.json');
  const version =
    typeof manifest === 'object' && manifest !== null ? Reflect.get(manifest, 'version') : undefined;
  if (typeof version !== 'string') throw new Error('@grpc/grpc-js-xds/package.json has no version');
  return version;
}

export function skeinEnvoyApi(): string {
  return renderEnvoyApi(
    envoyRoot(),
    { resources: Object.values(TypeUrl), anys: Object.values(AnyType) },
    `@grpc/grpc-js-xds ${xdsPackageVersion()}`,
  );
}
