import { DEFAULT_TRUST_DOMAIN } from '../mesh/constants.js';
import type { MeshConfig } from '../model/objects.js';
import { compareStrings } from './pods.js';
import type { ProblemList } from './problems.js';

export interface MeshSettings {
  permissive: boolean;
  trustDomain: string;
  /** The MeshConfig the settings came from, if any. */
  config?: MeshConfig;
}

/**
 * Picks the mesh's MeshConfig: the one named like the mesh, else the only one.
 * With several and none named like the mesh, none is used (defaults apply) and
 * a problem is reported — guessing would make behaviour depend on list order.
 */
export function selectMeshConfig(
  configs: readonly MeshConfig[],
  meshName: string,
  problems?: ProblemList,
): MeshSettings {
  const named = configs.filter((c) => c.metadata.name === meshName);
  let config: MeshConfig | undefined;
  if (named.length > 0) {
    // Same name in two namespaces: take the first by namespace, deterministically.
    config = [...named].sort((a, b) =>
      compareStrings(a.metadata.namespace ?? '', b.metadata.namespace ?? ''),
    )[0];
  } else if (configs.length === 1) {
    config = configs[0];
  } else if (configs.length > 1) {
    for (const c of configs) {
      problems?.add({
        kind: 'MeshConfig',
        namespace: c.metadata.namespace,
        name: c.metadata.name,
        reason: `several MeshConfigs and none is named ${JSON.stringify(meshName)}; using defaults`,
      });
    }
  }
  const settings: MeshSettings = {
    permissive: config?.spec?.traffic?.permissive === true,
    trustDomain: config?.spec?.certificate?.trustDomain || DEFAULT_TRUST_DOMAIN,
  };
  if (config) settings.config = config;
  return settings;
}
