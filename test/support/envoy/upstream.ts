// An UpstreamTrafficSetting manifest for the generator and validation tests.
import type { AnyObject, UpstreamTrafficSettingSpec } from '../../../pkg/model/objects.js';

/** The setting named after the service it shapes, `host` its cluster FQDN. */
export function upstreamSetting(
  ns: string,
  svc: string,
  spec: Omit<UpstreamTrafficSettingSpec, 'host'>,
): AnyObject {
  return {
    apiVersion: 'policy.skein.dev/v1alpha1',
    kind: 'UpstreamTrafficSetting',
    metadata: { namespace: ns, name: svc },
    spec: { host: `${svc}.${ns}.svc.cluster.local`, ...spec },
  };
}
