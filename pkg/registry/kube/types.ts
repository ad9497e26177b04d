import type { ObjectKind } from '../../model/objects.js';

/** One resource type the Kubernetes registry watches. */
export interface WatchedType {
  kind: ObjectKind;
  apiVersion: string;
  /** The collection to list and watch. */
  path: string;
}

/**
 * Everything skein reads from the API, one list+watch each, cluster-wide except
 * the MeshConfig (control-plane namespace only). TrafficSplit is read at
 * v1alpha4 only: the API server serves v1alpha2 objects at v1alpha4 too.
 * Ingress is a policy input (catalog/ingress.ts), as is skein's IngressBackend.
 */
export function watchedTypes(controlPlaneNamespace: string): WatchedType[] {
  const ns = encodeURIComponent(controlPlaneNamespace);
  return [
    { kind: 'Namespace', apiVersion: 'v1', path: '/api/v1/namespaces' },
    { kind: 'Service', apiVersion: 'v1', path: '/api/v1/services' },
    { kind: 'Pod', apiVersion: 'v1', path: '/api/v1/pods' },
    { kind: 'ServiceAccount', apiVersion: 'v1', path: '/api/v1/serviceaccounts' },
    {
      kind: 'EndpointSlice',
      apiVersion: 'discovery.k8s.io/v1',
      path: '/apis/discovery.k8s.io/v1/endpointslices',
    },
    {
      kind: 'TrafficTarget',
      apiVersion: 'access.smi-spec.io/v1alpha3',
      path: '/apis/access.smi-spec.io/v1alpha3/traffictargets',
    },
    {
      kind: 'HTTPRouteGroup',
      apiVersion: 'specs.smi-spec.io/v1alpha4',
      path: '/apis/specs.smi-spec.io/v1alpha4/httproutegroups',
    },
    {
      kind: 'TCPRoute',
      apiVersion: 'specs.smi-spec.io/v1alpha4',
      path: '/apis/specs.smi-spec.io/v1alpha4/tcproutes',
    },
    {
      kind: 'TrafficSplit',
      apiVersion: 'split.smi-spec.io/v1alpha4',
      path: '/apis/split.smi-spec.io/v1alpha4/trafficsplits',
    },
    { kind: 'Ingress', apiVersion: 'networking.k8s.io/v1', path: '/apis/networking.k8s.io/v1/ingresses' },
    {
      kind: 'IngressBackend',
      apiVersion: 'policy.skein.dev/v1alpha1',
      path: '/apis/policy.skein.dev/v1alpha1/ingressbackends',
    },
    {
      kind: 'Egress',
      apiVersion: 'policy.skein.dev/v1alpha1',
      path: '/apis/policy.skein.dev/v1alpha1/egresses',
    },
    {
      kind: 'Retry',
      apiVersion: 'policy.skein.dev/v1alpha1',
      path: '/apis/policy.skein.dev/v1alpha1/retries',
    },
    {
      kind: 'MeshConfig',
      apiVersion: 'config.skein.dev/v1alpha1',
      path: `/apis/config.skein.dev/v1alpha1/namespaces/${ns}/meshconfigs`,
    },
    {
      kind: 'UpstreamTrafficSetting',
      apiVersion: 'policy.skein.dev/v1alpha1',
      path: '/apis/policy.skein.dev/v1alpha1/upstreamtrafficsettings',
    },
  ];
}
