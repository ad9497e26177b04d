// Test helper: fetches one sidecar's configuration the way Envoy subscribes to
// it: LDS and CDS as wildcards, then RDS, EDS and SDS by the names those
// reference.
import type { ProxyContext } from '../../../pkg/catalog/types.js';
import { sidecarCdsGenerator } from '../../../pkg/envoy/cds/sidecar.js';
import { edsGenerator } from '../../../pkg/envoy/eds/eds.js';
import { sidecarLdsGenerator } from '../../../pkg/envoy/lds/sidecar.js';
import { sidecarRdsGenerator } from '../../../pkg/envoy/rds/sidecar.js';
import { sdsGenerator } from '../../../pkg/envoy/sds/sds.js';
import type { GenerationContext } from '../../../pkg/envoy/types.js';
import { type ProxyResources, referencesOf } from './crossref.js';

export function fetchSidecarConfig(proxy: ProxyContext, ctx: GenerationContext): ProxyResources {
  const listeners = sidecarLdsGenerator.generate(proxy, ctx, undefined);
  const clusters = sidecarCdsGenerator.generate(proxy, ctx, undefined);
  const routes = sidecarRdsGenerator.generate(proxy, ctx, referencesOf(listeners).routes);
  const refs = referencesOf([...listeners, ...routes, ...clusters]);
  const endpoints = edsGenerator.generate(proxy, ctx, refs.edsClusters);
  const secrets = sdsGenerator.generate(proxy, ctx, refs.secrets);
  return { listeners, routes, clusters, endpoints, secrets };
}
