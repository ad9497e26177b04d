import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { crdVersionsOf, loadCrdVersions } from './crds.js';
import { fieldPath } from './errors.js';
import { toAjvSchema } from './openapi.js';

describe('CRD loading', () => {
  it('loads the served versions of the chart CRDs', () => {
    const versions = loadCrdVersions().map((v) => `${v.apiVersion} ${v.kind} ${v.namespaced}`);
    assert.deepEqual(versions.sort(), [
      'access.smi-spec.io/v1alpha3 TrafficTarget true',
      'config.skein.dev/v1alpha1 MeshConfig true',
      'policy.skein.dev/v1alpha1 Egress true',
      'policy.skein.dev/v1alpha1 IngressBackend true',
      'policy.skein.dev/v1alpha1 Retry true',
      'policy.skein.dev/v1alpha1 UpstreamTrafficSetting true',
      'specs.smi-spec.io/v1alpha4 HTTPRouteGroup true',
      'specs.smi-spec.io/v1alpha4 TCPRoute true',
      'split.smi-spec.io/v1alpha2 TrafficSplit true',
      'split.smi-spec.io/v1alpha4 TrafficSplit true',
    ]);
  });

  it('skips unserved versions and rejects malformed CRDs', () => {
    const crd = (versions: unknown): unknown => ({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      spec: { group: 'g.io', scope: 'Cluster', names: { kind: 'Thing' }, versions },
    });
    const schema = { openAPIV3Schema: { type: 'object' } };
    const out = crdVersionsOf(
      crd([
        { name: 'v1', served: true, schema },
        { name: 'v0', served: false, schema },
      ]),
      'f.yaml',
    );
    assert.deepEqual(
      out.map((v) => [v.apiVersion, v.namespaced]),
      [['g.io/v1', false]],
    );
    assert.throws(
      () => crdVersionsOf(crd([{ name: 'v1', served: true }]), 'f.yaml'),
      /f.yaml: .*openAPIV3Schema/,
    );
    assert.throws(() => crdVersionsOf({ kind: 'Pod' }, 'f.yaml'), /not a valid/);
  });
});

describe('toAjvSchema', () => {
  it('closes structural objects, but not preserve-unknown-fields ones nor junctor branches', () => {
    const out = toAjvSchema({
      type: 'object',
      properties: {
        a: { type: 'object', properties: { b: { type: 'string' } } },
        open: {
          type: 'object',
          'x-kubernetes-preserve-unknown-fields': true,
          properties: { c: { type: 'string' } },
        },
        port: { 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer' }, { type: 'string' }] },
        maybe: { type: 'string', nullable: true },
        one: {
          type: 'object',
          properties: { x: { type: 'string' }, y: { type: 'string' } },
          oneOf: [{ required: ['x'], properties: { x: { type: 'string' } } }, { required: ['y'] }],
        },
      },
    });
    assert.deepEqual(out, {
      type: 'object',
      additionalProperties: false,
      properties: {
        a: { type: 'object', properties: { b: { type: 'string' } }, additionalProperties: false },
        open: { type: 'object', properties: { c: { type: 'string' } } },
        port: { type: ['integer', 'string'], anyOf: [{ type: 'integer' }, { type: 'string' }] },
        maybe: { type: ['string', 'null'] },
        one: {
          type: 'object',
          properties: { x: { type: 'string' }, y: { type: 'string' } },
          additionalProperties: false,
          oneOf: [{ required: ['x'], properties: { x: { type: 'string' } } }, { required: ['y'] }],
        },
      },
    });
  });

  it('formats error paths', () => {
    assert.equal(fieldPath(''), '(root)');
    assert.equal(fieldPath('/spec/backends/0/weight'), 'spec.backends[0].weight');
    assert.equal(fieldPath('/metadata/labels', 'a~b/c'), 'metadata.labels["a~b/c"]');
    assert.equal(fieldPath('/metadata/labels/a~1b'), 'metadata.labels["a/b"]');
  });
});
