import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isNamespacedKind, supportedTypes, validateObject } from './validate.js';

function traffictarget(spec: unknown, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiVersion: 'access.smi-spec.io/v1alpha3',
    kind: 'TrafficTarget',
    metadata: { name: 'tt', namespace: 'bookstore' },
    spec,
    ...extra,
  };
}
const goodSpec = {
  destination: { kind: 'ServiceAccount', name: 'bookstore', namespace: 'bookstore' },
  sources: [{ kind: 'ServiceAccount', name: 'bookbuyer', namespace: 'bookbuyer' }],
  rules: [{ kind: 'HTTPRouteGroup', name: 'routes', matches: ['all'] }],
};

function reasonOf(obj: unknown, opts?: Parameters<typeof validateObject>[1]): string {
  const r = validateObject(obj, opts);
  assert.equal(r.ok, false, 'expected a validation failure');
  return r.ok ? '' : r.reason;
}

describe('validateObject: types', () => {
  it('knows every kind of the model, in the versions of the CRDs', () => {
    const types = supportedTypes().map((t) => `${t.apiVersion}/${t.kind}`);
    for (const t of [
      'v1/Namespace',
      'v1/Service',
      'v1/Pod',
      'v1/ServiceAccount',
      'discovery.k8s.io/v1/EndpointSlice',
      'access.smi-spec.io/v1alpha3/TrafficTarget',
      'specs.smi-spec.io/v1alpha4/HTTPRouteGroup',
      'specs.smi-spec.io/v1alpha4/TCPRoute',
      'split.smi-spec.io/v1alpha2/TrafficSplit',
      'split.smi-spec.io/v1alpha4/TrafficSplit',
      'config.skein.dev/v1alpha1/MeshConfig',
    ])
      assert.ok(types.includes(t), `missing ${t}`);
    assert.equal(isNamespacedKind('Namespace'), false);
    assert.equal(isNamespacedKind('TrafficTarget'), true);
  });

  it('names unknown kinds and unsupported versions', () => {
    assert.match(
      reasonOf({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } }),
      /unknown kind "ConfigMap"/,
    );
    assert.match(
      reasonOf(traffictarget(goodSpec, { apiVersion: 'access.smi-spec.io/v1alpha2' })),
      /unsupported apiVersion "access.smi-spec.io\/v1alpha2" for kind TrafficTarget \(supported: access.smi-spec.io\/v1alpha3\)/,
    );
    assert.match(reasonOf({ kind: 'Pod', metadata: { name: 'x' } }), /^apiVersion: required/);
    assert.match(reasonOf('hello'), /not an object/);
    assert.match(reasonOf({ apiVersion: 'v1', kind: 'Pod' }), /^metadata: must be object/);
  });
});

describe('validateObject: SMI kinds', () => {
  it('accepts a valid TrafficTarget and returns a copy', () => {
    const input = traffictarget(goodSpec);
    const r = validateObject(input);
    assert.ok(r.ok);
    assert.deepEqual(r.object, input);
    assert.notEqual(r.object, input);
  });

  it('reports enums, required fields and paths', () => {
    assert.equal(
      reasonOf(traffictarget({ ...goodSpec, destination: { kind: 'User', name: 'x' } })),
      'spec.destination.kind: must be one of "ServiceAccount"',
    );
    assert.equal(
      reasonOf(traffictarget({ ...goodSpec, rules: [{ kind: 'HTTPRouteGroup' }] })),
      'spec.rules[0].name: required field is missing',
    );
    assert.match(
      reasonOf(traffictarget({ ...goodSpec, rules: [{ kind: 'UDPRoute', name: 'r' }] })),
      /spec.rules\[0\].kind: must be one of "HTTPRouteGroup", "TCPRoute"/,
    );
    assert.equal(reasonOf(traffictarget(undefined)), 'spec: required field is missing');
  });

  it('rejects unknown fields by default and prunes them on request', () => {
    const typo = traffictarget({
      ...goodSpec,
      destination: { kind: 'ServiceAccount', nmae: 'x', name: 'y' },
    });
    assert.equal(reasonOf(typo), 'spec.destination.nmae: unknown field');
    const pruned = validateObject(typo, { unknownFields: 'prune' });
    assert.ok(pruned.ok);
    assert.deepEqual(
      pruned.ok && pruned.object.kind === 'TrafficTarget' ? pruned.object.spec.destination : undefined,
      { kind: 'ServiceAccount', name: 'y' },
    );
    // The input is left alone.
    assert.ok('nmae' in (typo['spec'] as { destination: object }).destination);
  });

  it('validates HTTPRouteGroup methods and header maps', () => {
    const hrg = (match: unknown): unknown => ({
      apiVersion: 'specs.smi-spec.io/v1alpha4',
      kind: 'HTTPRouteGroup',
      metadata: { name: 'routes', namespace: 'bookstore' },
      spec: { matches: [match] },
    });
    assert.ok(
      validateObject(hrg({ name: 'all', pathRegex: '.*', methods: ['*'], headers: { 'x-a': 'b' } })).ok,
    );
    assert.match(
      reasonOf(hrg({ name: 'm', methods: ['FETCH'] })),
      /^spec.matches\[0\].methods\[0\]: must be one of/,
    );
    assert.equal(
      reasonOf(hrg({ name: 'm', headers: { 'user-agent': 5 } })),
      'spec.matches[0].headers["user-agent"]: must be string',
    );
  });

  it('validates TrafficSplit weights in both versions; matches only in v1alpha4', () => {
    const ts = (version: string, spec: unknown): unknown => ({
      apiVersion: `split.smi-spec.io/${version}`,
      kind: 'TrafficSplit',
      metadata: { name: 'split', namespace: 'bookstore' },
      spec,
    });
    const spec = { service: 'bookstore', backends: [{ service: 'bookstore-v1', weight: 75 }] };
    assert.ok(validateObject(ts('v1alpha2', spec)).ok);
    assert.ok(validateObject(ts('v1alpha4', spec)).ok);
    assert.equal(
      reasonOf(ts('v1alpha2', { ...spec, backends: [{ service: 'a', weight: -1 }] })),
      'spec.backends[0].weight: must be >= 0',
    );
    assert.equal(
      reasonOf(ts('v1alpha2', { ...spec, backends: [{ service: 'a', weight: 1.5 }] })),
      'spec.backends[0].weight: must be integer',
    );
    const withMatches = { ...spec, matches: [{ kind: 'HTTPRouteGroup', name: 'ab' }] };
    assert.ok(validateObject(ts('v1alpha4', withMatches)).ok);
    assert.equal(reasonOf(ts('v1alpha2', withMatches)), 'spec.matches: unknown field');
  });

  it('validates TCPRoute ports, MeshConfig durations and sidecar settings', () => {
    const tcp = {
      apiVersion: 'specs.smi-spec.io/v1alpha4',
      kind: 'TCPRoute',
      metadata: { name: 'tcp', namespace: 'a' },
      spec: { matches: { ports: [80, 70000] } },
    };
    assert.equal(reasonOf(tcp), 'spec.matches.ports[1]: must be <= 65535');
    const mc = (spec: unknown): unknown => ({
      apiVersion: 'config.skein.dev/v1alpha1',
      kind: 'MeshConfig',
      metadata: { name: 'skein', namespace: 'skein-system' },
      spec,
    });
    assert.ok(
      validateObject(
        mc({
          traffic: { permissive: false },
          certificate: { validity: '1h30m', trustDomain: 'cluster.local' },
          xds: { minPushInterval: '0' },
          observability: { logLevel: 'debug', enableDebugServer: true },
          sidecar: { xdsTransport: 'delta', maxDownstreamConnections: 50000 },
        }),
      ).ok,
    );
    assert.equal(
      reasonOf(mc({ sidecar: { xdsTransport: 'grpc' } })),
      'spec.sidecar.xdsTransport: must be one of "sotw", "delta"',
    );
    assert.equal(
      reasonOf(mc({ sidecar: { maxDownstreamConnections: 0 } })),
      'spec.sidecar.maxDownstreamConnections: must be >= 1',
    );
    assert.equal(
      reasonOf(mc({ sidecar: { maxDownstreamConnections: 2147483648 } })),
      'spec.sidecar.maxDownstreamConnections: must be <= 2147483647',
    );
    assert.equal(
      reasonOf(mc({ sidecar: { maxDownstreamConnections: 1.5 } })),
      'spec.sidecar.maxDownstreamConnections: must be integer',
    );
    assert.match(
      reasonOf(mc({ certificate: { validity: '24 hours' } })),
      /^spec.certificate.validity: must match/,
    );
    assert.equal(
      reasonOf(mc({ traffic: { permissive: 'yes' } })),
      'spec.traffic.permissive: must be boolean',
    );
    const empty = validateObject(mc(undefined));
    assert.ok(empty.ok && empty.object.kind === 'MeshConfig');
    assert.deepEqual(empty.object.spec, {});
  });
});

describe('validateObject: core kinds', () => {
  it('keeps only modelled fields of a Pod, leniently', () => {
    const r = validateObject({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'p',
        namespace: 'ns',
        labels: { app: 'a' },
        creationTimestamp: '2024-01-01T00:00:00Z',
        managedFields: [{}],
      },
      spec: {
        serviceAccountName: 'sa',
        restartPolicy: 'Always',
        containers: [{ name: 'c', image: 'i', ports: [{ name: 'grpc', containerPort: 14001, hostPort: 1 }] }],
      },
      status: {
        phase: 'Running',
        podIP: '10.0.0.1',
        conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: 'x' }],
        qosClass: 'BestEffort',
      },
    });
    assert.ok(r.ok);
    assert.deepEqual(r.object, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p', namespace: 'ns', labels: { app: 'a' } },
      spec: {
        serviceAccountName: 'sa',
        containers: [{ name: 'c', image: 'i', ports: [{ name: 'grpc', containerPort: 14001 }] }],
      },
      status: { phase: 'Running', podIP: '10.0.0.1', conditions: [{ type: 'Ready', status: 'True' }] },
    });
  });

  it('checks types of modelled fields and label values', () => {
    const svc = (spec: unknown, labels: unknown = {}): unknown => ({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 's', namespace: 'n', labels },
      spec,
    });
    assert.ok(validateObject(svc({ ports: [{ port: 80, targetPort: 'http' }] })).ok);
    assert.equal(
      reasonOf(svc({ ports: [{ port: 80, targetPort: true }] })),
      'spec.ports[0].targetPort: must be integer or string',
    );
    assert.equal(reasonOf(svc({ ports: [{ name: 'x' }] })), 'spec.ports[0].port: required field is missing');
    assert.equal(
      reasonOf(svc({}, { 'app.kubernetes.io/version': 2 })),
      'metadata.labels["app.kubernetes.io/version"]: must be string',
    );
  });

  it('checks names, and drops the namespace of cluster-scoped objects', () => {
    assert.match(
      reasonOf({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'Bad_Name', namespace: 'n' } }),
      /^metadata.name: must match/,
    );
    const ns = validateObject({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'a', namespace: 'b' },
    });
    assert.ok(ns.ok);
    assert.deepEqual(ns.object.metadata, { name: 'a' });
  });

  it('defaults EndpointSlice endpoints to an empty list', () => {
    const r = validateObject({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'e', namespace: 'n' },
      addressType: 'IPv4',
    });
    assert.ok(r.ok && r.object.kind === 'EndpointSlice');
    assert.deepEqual(r.object.endpoints, []);
  });

  it('reads null fields as unset, as the API server sends an EndpointSlice with no endpoints', () => {
    const r = validateObject({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'e', namespace: 'n', labels: null },
      addressType: 'IPv4',
      endpoints: null,
      ports: null,
    });
    assert.ok(r.ok, r.ok ? '' : r.reason);
    assert.ok(r.object.kind === 'EndpointSlice');
    assert.deepEqual(r.object.endpoints, []);
    assert.equal('ports' in r.object, false);
  });
});
