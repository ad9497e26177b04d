// Test helper: the bookstore mesh with ingress — an NGINX-like controller
// outside the mesh at 10.0.9.9 (IPRange) and in a monitored, uninjected
// namespace (Service source), reaching bookstore-v1 over http through an
// Ingress, and bookwarehouse over https (mTLS with the ingress certificate).

import { DEFAULT_MESH_NAME } from '../../../pkg/mesh/constants.js';
import type { AnyObject, Ingress, IngressBackend, IngressBackendSpec } from '../../../pkg/model/objects.js';
import { deriveEndpointSlices } from '../../../pkg/registry/local/endpoints.js';
import { httpRouteGroup, namespace, pod, service } from '../catalog-fixtures.js';
import { type BookstoreOptions, bookstoreObjects } from './mesh.js';

export function ingressBackend(ns: string, name: string, spec: IngressBackendSpec): IngressBackend {
  return {
    apiVersion: 'policy.skein.dev/v1alpha1',
    kind: 'IngressBackend',
    metadata: { name, namespace: ns },
    spec,
  };
}

export function ingress(ns: string, name: string, spec: Ingress['spec']): Ingress {
  return { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { name, namespace: ns }, spec };
}

export const INGRESS_PRINCIPAL = 'ingress-nginx.ingress-nginx.cluster.local';

export function ingressObjects(opts: BookstoreOptions = {}): AnyObject[] {
  const controllerSvc = service('ingress-nginx', 'ingress-nginx', [{ name: 'http', port: 80 }], {
    app: 'ingress-nginx',
  });
  const controllerPod = pod('ingress-nginx', 'ingress-nginx-1', {
    ip: '10.244.9.10',
    labels: { app: 'ingress-nginx' },
  });
  return [
    ...bookstoreObjects(opts),
    namespace('ingress-nginx', DEFAULT_MESH_NAME),
    controllerSvc,
    controllerPod,
    ...deriveEndpointSlices([controllerSvc], [controllerPod]),
    ingress('bookstore', 'shop', {
      ingressClassName: 'nginx',
      rules: [
        {
          host: 'shop.example.com',
          http: {
            paths: [
              {
                path: '/books',
                pathType: 'Prefix',
                backend: { service: { name: 'bookstore-v1', port: { number: 14001 } } },
              },
              {
                path: '/about',
                pathType: 'Exact',
                backend: { service: { name: 'bookstore-v1', port: { name: 'http' } } },
              },
            ],
          },
        },
      ],
    }),
    ingressBackend('bookstore', 'shop', {
      backends: [{ name: 'bookstore-v1', port: { number: 14001, protocol: 'http' } }],
      sources: [
        { kind: 'Service', name: 'ingress-nginx', namespace: 'ingress-nginx' },
        { kind: 'IPRange', name: '10.0.9.0/24' },
      ],
    }),
    httpRouteGroup('bookwarehouse', 'reads', [
      { name: 'reads', pathRegex: '/skein\\.Warehouse/Get.*', methods: ['POST'] },
    ]),
    ingressBackend('bookwarehouse', 'api', {
      backends: [
        {
          name: 'bookwarehouse',
          port: { number: 14001, protocol: 'https' },
          tls: { sniHosts: ['warehouse.example.com'] },
        },
      ],
      sources: [
        { kind: 'IPRange', name: '10.0.9.9' },
        { kind: 'AuthenticatedPrincipal', name: INGRESS_PRINCIPAL },
      ],
      matches: [{ kind: 'HTTPRouteGroup', name: 'reads' }],
    }),
  ];
}
