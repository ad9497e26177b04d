import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AnyObject } from '../model/objects.js';
import { regexProblem, semanticProblems, validateManifest } from './validate.js';

const meta = (namespace: string, name = 'x') => ({ name, namespace });

describe('semanticProblems', () => {
  it('requires a TrafficTarget to live in its destination namespace (OSM rule)', () => {
    const tt = (destNs: string | undefined): AnyObject => ({
      apiVersion: 'access.smi-spec.io/v1alpha3',
      kind: 'TrafficTarget',
      metadata: meta('bookstore'),
      spec: {
        destination: { kind: 'ServiceAccount', name: 'bookstore', ...(destNs ? { namespace: destNs } : {}) },
        // Rules that name nothing existing are the policy engine's business.
        rules: [{ kind: 'TCPRoute', name: 'does-not-exist' }],
      },
    });
    assert.deepEqual(semanticProblems(tt('bookstore')), []);
    assert.deepEqual(semanticProblems(tt(undefined)), []);
    assert.deepEqual(semanticProblems(tt('other')), [
      'spec.destination.namespace "other" differs from the TrafficTarget\'s namespace "bookstore"; a TrafficTarget must live in its destination\'s namespace',
    ]);
  });

  it('rejects TrafficSplits with only zero weights or duplicate backends', () => {
    const ts = (backends: { service: string; weight: number }[]): AnyObject => ({
      apiVersion: 'split.smi-spec.io/v1alpha2',
      kind: 'TrafficSplit',
      metadata: meta('bookstore'),
      spec: { service: 'bookstore', backends },
    });
    assert.deepEqual(
      semanticProblems(
        ts([
          { service: 'a', weight: 0 },
          { service: 'b', weight: 1 },
        ]),
      ),
      [],
    );
    assert.deepEqual(
      semanticProblems(
        ts([
          { service: 'a', weight: 0 },
          { service: 'b', weight: 0 },
        ]),
      ),
      ['spec.backends: all weights are 0'],
    );
    assert.deepEqual(
      semanticProblems(
        ts([
          { service: 'a', weight: 1 },
          { service: 'a', weight: 2 },
        ]),
      ),
      ['spec.backends: service "a" is listed twice'],
    );
  });

  it('checks HTTPRouteGroup match names and RE2-compatible regexes', () => {
    const hrg: AnyObject = {
      apiVersion: 'specs.smi-spec.io/v1alpha4',
      kind: 'HTTPRouteGroup',
      metadata: meta('bookstore'),
      spec: {
        matches: [
          { name: 'a', pathRegex: '/books(/.*)?' },
          { name: 'a', pathRegex: '/(?!admin)' },
          { name: 'b', headers: { 'x-id': '(unclosed' } },
        ],
      },
    };
    const problems = semanticProblems(hrg);
    assert.equal(problems.length, 3);
    assert.equal(problems[0], 'spec.matches[1].name: "a" is used twice');
    assert.equal(problems[1], 'spec.matches[1].pathRegex: lookaround is not supported (RE2)');
    assert.match(problems[2] ?? '', /^spec.matches\[2\].headers\["x-id"\]: invalid regular expression/);
  });

  it('regexProblem: backreferences, but not escapes inside classes or escaped backslashes', () => {
    assert.equal(regexProblem('(a)\\1'), 'backreferences are not supported (RE2)');
    assert.equal(regexProblem('[\\1]'), undefined);
    assert.equal(regexProblem('\\\\1'), undefined);
    assert.equal(regexProblem('[(?=]x'), undefined);
    assert.equal(regexProblem('.*'), undefined);
  });

  it('applies apiserver port rules to Services', () => {
    const svc = (ports: { name?: string; port: number }[]): AnyObject => ({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: meta('n'),
      spec: { ports },
    });
    assert.deepEqual(semanticProblems(svc([{ port: 80 }])), []);
    assert.deepEqual(semanticProblems(svc([{ name: 'a', port: 80 }, { port: 81 }])), [
      'spec.ports[1].name: required when a Service has several ports',
    ]);
    assert.deepEqual(
      semanticProblems(
        svc([
          { name: 'a', port: 80 },
          { name: 'a', port: 80 },
        ]),
      ),
      ['spec.ports[1].name: "a" is used twice', 'spec.ports[1]: port 80/TCP is used twice'],
    );
  });

  it('rejects a zero certificate validity', () => {
    const mc: AnyObject = {
      apiVersion: 'config.skein.dev/v1alpha1',
      kind: 'MeshConfig',
      metadata: meta('skein-system', 'skein'),
      spec: { certificate: { validity: '0s' }, xds: { minPushInterval: '0s' } },
    };
    assert.deepEqual(semanticProblems(mc), ['spec.certificate.validity: must be longer than 0']);
  });
});

describe('MeshConfig interception lists', () => {
  const mc = (traffic: Record<string, unknown>) => ({
    apiVersion: 'config.skein.dev/v1alpha1',
    kind: 'MeshConfig',
    metadata: meta('skein-system', 'skein'),
    spec: { traffic },
  });

  it('accepts IPv4 addresses and CIDRs and ports in range', () => {
    const good = validateManifest(
      mc({
        outboundIPRangeExclusionList: ['169.254.169.254', '10.0.0.0/8'],
        outboundIPRangeInclusionList: ['10.96.0.0/12'],
        outboundPortExclusionList: [5432],
        inboundPortExclusionList: [8443, 65535],
      }),
    );
    assert.equal(good.ok, true, JSON.stringify(good));
  });

  it('refuses the object naming every bad entry and its value', () => {
    assert.deepEqual(
      validateManifest(
        mc({
          outboundIPRangeExclusionList: ['10.0.0.0/8', '10.0.0.0/33'],
          outboundIPRangeInclusionList: ['fd00::/8', 'example.com'],
        }),
      ),
      {
        ok: false,
        reason: [
          'spec.traffic.outboundIPRangeExclusionList[1]: "10.0.0.0/33" has a prefix length outside 0-32',
          'spec.traffic.outboundIPRangeInclusionList[0]: "fd00::/8" is IPv6; only IPv4 ranges are supported (the rules are IPv4 iptables)',
          'spec.traffic.outboundIPRangeInclusionList[1]: "example.com" is not an IPv4 address or CIDR',
        ].join('; '),
      },
    );
  });

  it('the CRD schema bounds the ports (the API server refuses them too)', () => {
    const r = validateManifest(
      mc({ outboundPortExclusionList: [80, 0], inboundPortExclusionList: ['http'] }),
    );
    assert.equal(r.ok, false);
    assert.match(r.ok ? '' : r.reason, /spec\.traffic\.outboundPortExclusionList\[1\]: must be >= 1/);
    assert.match(r.ok ? '' : r.reason, /spec\.traffic\.inboundPortExclusionList\[0\]: must be integer/);
  });
});

describe('MeshConfig observability and sidecar log levels', () => {
  const mc = (spec: Record<string, unknown>) => ({
    apiVersion: 'config.skein.dev/v1alpha1',
    kind: 'MeshConfig',
    metadata: meta('skein-system', 'skein'),
    spec,
  });
  const reason = (spec: Record<string, unknown>) => {
    const r = validateManifest(mc(spec));
    return r.ok ? '' : r.reason;
  };

  it('accepts tracing with either provider and the log levels of Envoy and the controller', () => {
    for (const spec of [
      { observability: { tracing: { enable: true, address: 'zipkin.tracing', port: 9411, sampling: 0.5 } } },
      { observability: { tracing: { enable: true, provider: 'opentelemetry', address: '10.0.0.7' } } },
      { observability: { tracing: { enable: false } }, sidecar: { logLevel: 'warning' } },
      { observability: { logLevel: 'debug' }, sidecar: { logLevel: 'off' } },
    ])
      assert.equal(reason(spec), '', JSON.stringify(spec));
  });

  it('refuses tracing without a collector, bad fields and unknown log levels, naming each field', () => {
    assert.equal(
      reason({ observability: { tracing: { enable: true } } }),
      'spec.observability.tracing.address: required when tracing is enabled',
    );
    assert.match(
      reason({ observability: { tracing: { sampling: 101 } } }),
      /tracing\.sampling: must be <= 100/,
    );
    assert.match(
      reason({ observability: { tracing: { provider: 'jaeger' } } }),
      /tracing\.provider: must be one of/,
    );
    assert.match(
      reason({ observability: { tracing: { endpoint: 'api/v2' } } }),
      /tracing\.endpoint: must match/,
    );
    assert.match(
      reason({ observability: { tracing: { address: 'http://x' } } }),
      /tracing\.address: must match/,
    );
    assert.match(reason({ sidecar: { logLevel: 'verbose' } }), /spec\.sidecar\.logLevel: must be one of/);
    assert.match(
      reason({ observability: { logLevel: 'loud' } }),
      /spec\.observability\.logLevel: must be one of/,
    );
  });
});

describe('validateManifest', () => {
  it('runs the schema first, then the semantic checks', () => {
    const base = {
      apiVersion: 'split.smi-spec.io/v1alpha4',
      kind: 'TrafficSplit',
      metadata: meta('bookstore'),
    };
    const schemaBad = validateManifest({ ...base, spec: { service: 'a', backends: [{ service: 'b' }] } });
    assert.deepEqual(schemaBad, { ok: false, reason: 'spec.backends[0].weight: required field is missing' });
    const semanticBad = validateManifest({
      ...base,
      spec: { service: 'a', backends: [{ service: 'b', weight: 0 }] },
    });
    assert.deepEqual(semanticBad, { ok: false, reason: 'spec.backends: all weights are 0' });
    const good = validateManifest({
      ...base,
      spec: { service: 'a', backends: [{ service: 'b', weight: 1 }] },
    });
    assert.equal(good.ok, true);
  });
});

describe('IngressBackend rules', () => {
  type Spec = Extract<AnyObject, { kind: 'IngressBackend' }>['spec'];
  const ib = (spec: Partial<Spec>): AnyObject => ({
    apiVersion: 'policy.skein.dev/v1alpha1',
    kind: 'IngressBackend',
    metadata: meta('bookstore'),
    spec: {
      backends: [{ name: 'bookstore', port: { number: 14001, protocol: 'http' } }],
      sources: [{ kind: 'IPRange', name: '10.0.9.0/24' }],
      ...spec,
    },
  });
  const https = (skipClientCertValidation?: boolean): Spec['backends'] => [
    {
      name: 'bookstore',
      port: { number: 14001, protocol: 'https' },
      ...(skipClientCertValidation === undefined ? {} : { tls: { skipClientCertValidation } }),
    },
  ];
  const principal: Spec['sources'] = [
    { kind: 'IPRange', name: '10.0.9.9' },
    { kind: 'AuthenticatedPrincipal', name: 'ingress-nginx.ingress-nginx.cluster.local' },
  ];

  it('accepts http from an IPRange or a Service, and https with or without client validation', () => {
    assert.deepEqual(semanticProblems(ib({})), []);
    assert.deepEqual(
      semanticProblems(ib({ sources: [{ kind: 'Service', name: 'nginx', namespace: 'x' }] })),
      [],
    );
    assert.deepEqual(semanticProblems(ib({ backends: https() })), []);
    assert.deepEqual(semanticProblems(ib({ backends: https(true) })), []);
  });

  it('mTLS: an AuthenticatedPrincipal needs https with the client certificate validated (OSM had it inverted)', () => {
    // The case OSM's webhook refused: principal + client validation on is exactly right.
    assert.deepEqual(semanticProblems(ib({ backends: https(), sources: principal })), []);
    assert.deepEqual(semanticProblems(ib({ backends: https(false), sources: principal })), []);
    // The case OSM's webhook let through: a principal nobody can prove.
    assert.deepEqual(semanticProblems(ib({ backends: https(true), sources: principal })), [
      'spec.backends[0]: AuthenticatedPrincipal sources need client certificate validation (skipClientCertValidation: true)',
    ]);
    assert.deepEqual(semanticProblems(ib({ sources: principal })), [
      'spec.backends[0]: AuthenticatedPrincipal sources need protocol https (plaintext carries no client certificate)',
    ]);
  });

  it('rejects tls on http, a backend port twice, a bad IPRange, and no source to match addresses on', () => {
    assert.deepEqual(
      semanticProblems(
        ib({
          backends: [
            {
              name: 'bookstore',
              port: { number: 14001, protocol: 'http' },
              tls: { sniHosts: ['a.example.com'] },
            },
            { name: 'bookstore', port: { number: 14001, protocol: 'http' } },
          ],
          sources: [{ kind: 'IPRange', name: '10.0.9.0/33' }],
        }),
      ),
      [
        'spec.backends[0].tls: only meaningful with protocol https',
        'spec.backends[1]: bookstore port 14001 is listed twice',
        'spec.sources[0].name: "10.0.9.0/33": prefix length must be 0-32',
      ],
    );
    assert.deepEqual(
      semanticProblems(ib({ backends: https(), sources: [{ kind: 'AuthenticatedPrincipal', name: 'p' }] })),
      ['spec.sources: at least one Service or IPRange source is required (ingress is matched by source IP)'],
    );
  });

  it('matches: groups and match names once each, a name list never empty', () => {
    const group = (name: string, matches?: string[]) => ({
      kind: 'HTTPRouteGroup' as const,
      name,
      ...(matches ? { matches } : {}),
    });
    // OSM's examples spell apiGroup with its version: accepted as is.
    assert.deepEqual(
      semanticProblems(
        ib({
          matches: [{ ...group('reads', ['get']), apiGroup: 'specs.smi-spec.io/v1alpha4' }, group('writes')],
        }),
      ),
      [],
    );
    assert.deepEqual(
      semanticProblems(
        ib({ matches: [group('reads', ['get', 'list', 'get']), group('reads'), group('none', [])] }),
      ),
      [
        'spec.matches[0].matches[2]: "get" is listed twice',
        'spec.matches[1]: HTTPRouteGroup reads is named twice',
        'spec.matches[2].matches: an empty list admits nothing; omit it to admit every match of none',
      ],
    );
  });

  it('through validateManifest: the schema first (kind), then these rules', () => {
    const raw = (matches: unknown) => ({
      apiVersion: 'policy.skein.dev/v1alpha1',
      kind: 'IngressBackend',
      metadata: meta('bookstore'),
      spec: {
        backends: [
          { name: 'b', port: { number: 80, protocol: 'https' }, tls: { skipClientCertValidation: true } },
        ],
        sources: [
          { kind: 'AuthenticatedPrincipal', name: 'p' },
          { kind: 'IPRange', name: '10.0.0.1' },
        ],
        matches,
      },
    });
    const schemaBad = validateManifest(raw([{ kind: 'TCPRoute', name: 'x' }]));
    assert.equal(schemaBad.ok, false);
    assert.match(schemaBad.ok ? '' : schemaBad.reason, /^spec\.matches\[0\]\.kind/);
    const semanticBad = validateManifest(raw([{ kind: 'HTTPRouteGroup', name: 'x', matches: [] }]));
    assert.deepEqual(semanticBad, {
      ok: false,
      reason:
        'spec.backends[0]: AuthenticatedPrincipal sources need client certificate validation (skipClientCertValidation: true); spec.matches[0].matches: an empty list admits nothing; omit it to admit every match of x',
    });
  });
});

describe('Egress rules', () => {
  it('through validateManifest: hosts, IP ranges, ports once each, http needs hosts', () => {
    const raw = (spec: Record<string, unknown>) =>
      validateManifest({
        apiVersion: 'policy.skein.dev/v1alpha1',
        kind: 'Egress',
        metadata: meta('bookbuyer'),
        spec: { sources: [{ kind: 'ServiceAccount', name: 'bookbuyer', namespace: 'bookbuyer' }], ...spec },
      });
    assert.equal(raw({ hosts: ['api.example.com'], ports: [{ number: 80, protocol: 'http' }] }).ok, true);
    assert.equal(raw({ ipAddresses: ['10.1.0.0/16'], ports: [{ number: 5432, protocol: 'tcp' }] }).ok, true);
    assert.deepEqual(
      raw({
        hosts: ['not a host'],
        ipAddresses: ['10.1.0.0/99'],
        ports: [
          { number: 443, protocol: 'https' },
          { number: 443, protocol: 'https' },
        ],
      }),
      {
        ok: false,
        reason:
          'spec.hosts[0]: "not a host" is not a host name; spec.ipAddresses[0]: "10.1.0.0/99" is not an IP address or CIDR; spec.ports[1]: port 443 is listed twice',
      },
    );
    assert.deepEqual(raw({ ports: [{ number: 80, protocol: 'http' }] }), {
      ok: false,
      reason: 'spec.ports[0]: an http port needs spec.hosts (requests are routed by Host header)',
    });
  });
});
