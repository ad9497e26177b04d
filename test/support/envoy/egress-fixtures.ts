// Egress objects added to the bookstore test mesh (test/support/envoy/mesh.ts):
// bookbuyer may reach one host of each protocol; bookthief nothing.

import type { MeshView } from '../../../pkg/catalog/types.js';
import type { AnyObject, Egress, EgressSpec } from '../../../pkg/model/objects.js';
import { bookstoreObjects, storeOf, viewOf } from './mesh.js';

export function egress(ns: string, name: string, spec: EgressSpec): Egress {
  return { apiVersion: 'policy.skein.dev/v1alpha1', kind: 'Egress', metadata: { namespace: ns, name }, spec };
}

const bookbuyer = [{ kind: 'ServiceAccount' as const, name: 'bookbuyer', namespace: 'bookbuyer' }];

export function bookbuyerEgresses(): AnyObject[] {
  return [
    {
      apiVersion: 'specs.smi-spec.io/v1alpha4',
      kind: 'HTTPRouteGroup',
      metadata: { namespace: 'bookbuyer', name: 'api-reads' },
      spec: { matches: [{ name: 'get', pathRegex: '/v1/.*', methods: ['GET'] }] },
    },
    egress('bookbuyer', 'api', {
      sources: bookbuyer,
      hosts: ['api.example.com'],
      ports: [{ number: 80, protocol: 'http' }],
      matches: [{ kind: 'HTTPRouteGroup', name: 'api-reads' }],
    }),
    egress('bookbuyer', 'github', {
      sources: bookbuyer,
      hosts: ['github.com', '*.github.com'],
      ports: [{ number: 443, protocol: 'https' }],
    }),
    egress('bookbuyer', 'db', {
      sources: bookbuyer,
      ipAddresses: ['10.1.0.0/16'],
      ports: [{ number: 5432, protocol: 'tcp' }],
    }),
    egress('bookbuyer', 'smtp', {
      sources: bookbuyer,
      ipAddresses: ['10.2.0.0/24'],
      ports: [{ number: 25, protocol: 'tcp-server-first' }],
    }),
  ];
}

export function egressMesh(extra: AnyObject[] = []): MeshView {
  return viewOf(storeOf([...bookstoreObjects(), ...bookbuyerEgresses(), ...extra]));
}
