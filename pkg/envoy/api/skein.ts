// The generated module for skein's own roots: the protos the encoder loads,
// the xDS resource types and every Any payload type skein writes.
import { createRequire } from 'node:module';
import { envoyRoot } from '../../xds/proto/root.js';
import { AnyType } from '../common/xds.js';
import { TypeUrl } from '../types.js';
import { renderEnvoyApi } from './gen.js';

/** Where the generated module lives, relative to the repository root. */
export const ENVOY_API_PATH = 'pkg/envoy/api/envoy.ts';

export function skeinEnvoyApi(): string {
  const require = createRequire(import.meta.url);
  const { version } = require('@grpc/grpc-js-xds/package.json') as { version: string };
  return renderEnvoyApi(
    envoyRoot(),
    { resources: Object.values(TypeUrl), anys: Object.values(AnyType) },
    `@grpc/grpc-js-xds ${version}`,
  );
}
