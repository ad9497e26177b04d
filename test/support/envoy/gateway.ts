// Test helper: the bookstore mesh with skein's ingress gateway. Ingresses of
// class skein route shop.example.com (/books → bookstore-v1, Exact /about →
// the split apex bookstore, TLS from Secret bookstore/shop-tls), any one-label
// subdomain of shop.example.com (→ the apex), any host (/status →
// bookstore-v1) and warehouse.example.com (→ bookwarehouse, TLS from
// bookwarehouse/warehouse-tls). A TrafficTarget lets the gateway's identity
// call bookstore-v1 only: in SMI mode bookwarehouse answers 403.

import { proxyContext } from '../../../pkg/catalog/proxies.js';
import type { MeshView, ProxyContext } from '../../../pkg/catalog/types.js';
import type { SecretSource, TlsKeyPair } from '../../../pkg/certificate/types.js';
import { meshGenerators } from '../../../pkg/envoy/generators.js';
import type { GenerationContext, ResourceGenerator } from '../../../pkg/envoy/types.js';
import { TypeUrl } from '../../../pkg/envoy/types.js';
import { proxyCommonName } from '../../../pkg/mesh/identity.js';
import type { AnyObject } from '../../../pkg/model/objects.js';
import { sa, trafficTarget } from '../catalog-fixtures.js';
import { type ProxyResources, referencesOf } from './crossref.js';
import { ingress } from './ingress.js';
import { type BookstoreOptions, bookstoreObjects, fakeSecrets } from './mesh.js';

export const GATEWAY_NAMESPACE = 'skein-system';
export const GATEWAY_SA = 'skein-ingress-gateway';
export const GATEWAY_UUID = '9a7e0c1d-0000-4000-8000-00000000aaaa';

const to = (name: string, port: number) => ({ service: { name, port: { number: port } } });

export function gatewayObjects(opts: BookstoreOptions = {}): AnyObject[] {
  return [
    ...bookstoreObjects(opts),
    ingress('bookstore', 'shop', {
      ingressClassName: 'skein',
      rules: [
        {
          host: 'shop.example.com',
          http: {
            paths: [
              { path: '/books', pathType: 'Prefix', backend: to('bookstore-v1', 14001) },
              { path: '/about', pathType: 'Exact', backend: to('bookstore', 14001) },
            ],
          },
        },
        {
          host: '*.shop.example.com',
          http: { paths: [{ path: '/', pathType: 'Prefix', backend: to('bookstore', 14001) }] },
        },
        { http: { paths: [{ path: '/status', pathType: 'Prefix', backend: to('bookstore-v1', 14001) }] } },
      ],
      // No hosts: the rule hosts (the one-label wildcard included; `*` is reported).
      tls: [{ secretName: 'shop-tls' }],
    }),
    ingress('bookwarehouse', 'warehouse', {
      ingressClassName: 'skein',
      rules: [
        {
          host: 'warehouse.example.com',
          http: { paths: [{ path: '/', pathType: 'Prefix', backend: to('bookwarehouse', 14001) }] },
        },
      ],
      tls: [{ hosts: ['warehouse.example.com'], secretName: 'warehouse-tls' }],
    }),
    trafficTarget(
      'bookstore',
      'gateway-to-v1',
      sa('bookstore-v1'),
      [sa(GATEWAY_SA, GATEWAY_NAMESPACE)],
      [{ kind: 'HTTPRouteGroup', name: 'bookstore-routes' }],
    ),
  ];
}

/** The gateway's ProxyContext as the controller derives it for a connecting gateway Envoy. */
export function gatewayProxy(mesh: MeshView): ProxyContext {
  const base = {
    uuid: GATEWAY_UUID,
    kind: 'gateway' as const,
    serviceAccount: GATEWAY_SA,
    namespace: GATEWAY_NAMESPACE,
    trustDomain: mesh.trustDomain,
  };
  return proxyContext({ ...base, cn: proxyCommonName(base) }, mesh);
}

/** A key pair that reads as what it is (generators never parse it). */
export function fakeKeyPair(secretKey: string): TlsKeyPair {
  return {
    certPem: `-----BEGIN CERTIFICATE-----\ncert-of-${secretKey}\n-----END CERTIFICATE-----\n`,
    keyPem: `-----BEGIN PRIVATE KEY-----\nkey-of-${secretKey}\n-----END PRIVATE KEY-----\n`,
  };
}

/**
 * Every workload certificate issued, and these ingress TLS Secrets valid (the
 * same object per Secret, as IngressTlsSecrets hands them out).
 */
export function gatewayContext(mesh: MeshView, servable: readonly string[]): GenerationContext {
  const workload = fakeSecrets('all');
  const pairs = new Map(servable.map((k) => [k, fakeKeyPair(k)]));
  const secrets: SecretSource = {
    trustBundlePem: workload.trustBundlePem,
    serviceCertificate: (key) => workload.serviceCertificate(key),
    ingressTlsCertificate: (key) => pairs.get(key),
  };
  return { mesh, secrets };
}

/**
 * One proxy's configuration through the kind dispatch (generators.ts), the
 * way Envoy subscribes: LDS and CDS wildcards, then RDS, EDS and SDS by the
 * names those reference.
 */
export function fetchByKind(proxy: ProxyContext, ctx: GenerationContext): ProxyResources {
  const gen = meshGenerators();
  const of = (t: TypeUrl): ResourceGenerator => {
    const g = gen.get(t);
    if (!g) throw new Error(`no generator for ${t}`);
    return g;
  };
  const listeners = of(TypeUrl.Listener).generate(proxy, ctx, undefined);
  const clusters = of(TypeUrl.Cluster).generate(proxy, ctx, undefined);
  const routes = of(TypeUrl.RouteConfiguration).generate(proxy, ctx, referencesOf(listeners).routes);
  const refs = referencesOf([...listeners, ...routes, ...clusters]);
  const endpoints = of(TypeUrl.ClusterLoadAssignment).generate(proxy, ctx, refs.edsClusters);
  const secrets = of(TypeUrl.Secret).generate(proxy, ctx, refs.secrets);
  return { listeners, routes, clusters, endpoints, secrets };
}
