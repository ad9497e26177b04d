import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyPatch } from '../../test/support/injector/apply-patch.js';
import { get, named } from '../../test/support/injector/json-path.js';
import { parseProxyCommonName } from '../mesh/identity.js';
import { InjectionError } from './errors.js';
import { parseMeshExclusions } from './exclusions.js';
import { escapePointerToken, pointer } from './jsonpatch.js';
import { checkPod, decide, type MutateOptions, mutate, type NamespaceLike } from './mutate.js';
import { isJsonObject, type Json, type JsonObject, readPod } from './pod.js';
import { DEFAULT_SIDECAR_SETTINGS } from './sidecar-settings.js';

const MESH = { meshName: 'skein', controlPlaneNamespace: 'skein-system' };
const UUID = '6c1e2b8a-4f0d-4d9e-8a51-0f3b2c7d9e11';

function ns(
  name: string,
  labels: Record<string, string> = {},
  annotations: Record<string, string> = {},
): NamespaceLike {
  return { metadata: { name, labels, annotations } };
}
const meshed = (annotation?: 'enabled' | 'disabled'): NamespaceLike =>
  ns(
    'bookstore',
    { 'skein.dev/monitored-by': 'skein' },
    annotation ? { 'skein.dev/sidecar-injection': annotation } : {},
  );

function podJson(
  extra: { annotations?: Record<string, string>; spec?: JsonObject; labels?: boolean } = {},
): JsonObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      generateName: 'bookstore-',
      namespace: 'bookstore',
      ...(extra.labels === false ? {} : { labels: { app: 'bookstore' } }),
      annotations: extra.annotations ?? {},
    },
    spec: {
      serviceAccountName: 'bookstore',
      containers: [
        {
          name: 'app',
          image: 'bookstore:v1',
          ports: [{ name: 'http', containerPort: 8080 }],
          livenessProbe: {
            httpGet: { path: '/healthz', port: 'http', httpHeaders: [{ name: 'X-Probe', value: '1' }] },
          },
          readinessProbe: { httpGet: { path: '/ready', port: 8443, scheme: 'HTTPS' } },
          startupProbe: { tcpSocket: { port: 8080 } },
        },
        {
          name: 'side',
          image: 'side:v1',
          livenessProbe: { exec: { command: ['true'] } },
          readinessProbe: { httpGet: { port: 9000 } },
          startupProbe: { httpGet: { path: '/x', port: 9001, host: '10.0.0.9' } },
        },
      ],
      initContainers: [{ name: 'migrate', image: 'migrate:v1' }],
      ...extra.spec,
    },
  };
}

const options: MutateOptions = {
  ...MESH,
  trustDomain: 'cluster.local',
  images: { envoy: 'envoyproxy/envoy:v1.40.0', init: 'skein/init:v0.1.0' },
  proxyUuid: UUID,
  certificate: { certPem: 'CERT', keyPem: 'KEY', caPem: 'CA' },
};

test('decide: labelled namespace, annotation on namespace or pod (pod wins), system namespaces, hostNetwork', () => {
  const pod = (annotations: Record<string, string> = {}, spec: JsonObject = {}) =>
    readPod(podJson({ annotations, spec }));
  const check = (name: string, d: ReturnType<typeof decide>, inject: boolean, reason?: RegExp): void => {
    assert.equal(d.inject, inject, name);
    if (!d.inject && reason) assert.match(d.reason, reason, name);
  };
  check('namespace enabled', decide(pod(), meshed('enabled'), MESH), true);
  check(
    'unlabelled namespace',
    decide(pod(), ns('bookstore', {}, { 'skein.dev/sidecar-injection': 'enabled' }), MESH),
    false,
    /not labelled skein.dev\/monitored-by=skein/,
  );
  check(
    'other mesh',
    decide(
      pod(),
      ns('bookstore', { 'skein.dev/monitored-by': 'other' }, { 'skein.dev/sidecar-injection': 'enabled' }),
      MESH,
    ),
    false,
    /not labelled/,
  );
  check(
    'pod disables, namespace enables',
    decide(pod({ 'skein.dev/sidecar-injection': 'disabled' }), meshed('enabled'), MESH),
    false,
    /disabled/,
  );
  check(
    'pod enables, namespace disables',
    decide(pod({ 'skein.dev/sidecar-injection': 'enabled' }), meshed('disabled'), MESH),
    true,
  );
  check(
    'pod enables, namespace silent',
    decide(pod({ 'skein.dev/sidecar-injection': 'enabled' }), meshed(), MESH),
    true,
  );
  check('nobody enables', decide(pod(), meshed(), MESH), false, /not enabled/);
  check(
    'hostNetwork',
    decide(pod({}, { hostNetwork: true }), meshed('enabled'), MESH),
    false,
    /host network/,
  );
  for (const sys of ['kube-system', 'kube-public', 'kube-node-lease', 'skein-system']) {
    const n = ns(sys, { 'skein.dev/monitored-by': 'skein' }, { 'skein.dev/sidecar-injection': 'enabled' });
    check(sys, decide(readPod(podJson(), sys), n, MESH), false, /system namespace/);
  }
  assert.throws(() => decide(pod({ 'skein.dev/sidecar-injection': 'yes' }), meshed('enabled'), MESH), {
    name: 'InjectionError',
    message:
      /skein.dev\/sidecar-injection on pod bookstore-<generated> is "yes"; use "enabled" or "disabled"/,
  });
  const onNs = ns(
    'bookstore',
    { 'skein.dev/monitored-by': 'skein' },
    { 'skein.dev/sidecar-injection': 'on' },
  );
  assert.throws(() => decide(pod(), onNs, MESH), { message: /on namespace bookstore is "on"/ });
  // The pod's valid annotation wins, so the namespace's bad one is never consulted.
  assert.equal(decide(pod({ 'skein.dev/sidecar-injection': 'disabled' }), onNs, MESH).inject, false);
});

test('mutate: the patch adds the sidecar, init rules, label, volume, and rewrites HTTP probes', () => {
  const raw = podJson({
    annotations: {
      'skein.dev/sidecar-injection': 'enabled',
      'skein.dev/outbound-port-exclusion-list': '5432',
      'skein.dev/outbound-ip-range-exclusion-list': '169.254.169.254/32',
    },
  });
  const m = mutate(readPod(raw), options);
  const patched = applyPatch(raw, m.patch);

  assert.equal(get(patched, 'metadata', 'labels', 'skein.dev/proxy-uuid'), UUID);
  assert.equal(get(patched, 'metadata', 'labels', 'app'), 'bookstore');
  assert.ok(
    m.patch.some((op) => op.path === '/metadata/labels/skein.dev~1proxy-uuid'),
    'label key escaped per RFC 6901',
  );

  const containers = get(patched, 'spec', 'containers');
  assert.ok(Array.isArray(containers));
  assert.deepEqual(
    containers.map((c) => get(c, 'name')),
    ['app', 'side', 'envoy'],
  );
  const envoy = named(containers, 'envoy');
  assert.equal(envoy['image'], 'envoyproxy/envoy:v1.40.0');
  assert.equal(get(envoy, 'securityContext', 'runAsUser'), 1500);
  assert.deepEqual(get(envoy, 'args'), ['--config-path', '/etc/skein/bootstrap.json', '--log-level', 'warn']);
  const ports = get(envoy, 'ports');
  assert.ok(Array.isArray(ports));
  assert.deepEqual(
    ports.map((p) => get(p, 'containerPort')),
    [15000, 15001, 15003, 15010],
  );
  assert.deepEqual(get(envoy, 'volumeMounts'), [
    { name: 'skein-bootstrap', mountPath: '/etc/skein', readOnly: true },
  ]);

  const inits = get(patched, 'spec', 'initContainers');
  assert.ok(Array.isArray(inits));
  assert.deepEqual(
    inits.map((c) => get(c, 'name')),
    ['migrate', 'skein-init'],
    'runs after the pod’s own init containers',
  );
  const init = named(inits, 'skein-init');
  assert.equal(init['image'], 'skein/init:v0.1.0');
  assert.deepEqual(get(init, 'securityContext', 'capabilities', 'add'), ['NET_ADMIN', 'NET_RAW']);
  assert.match(String(get(init, 'command', 2)), /iptables-restore/);
  assert.deepEqual(get(init, 'env'), [{ name: 'SKEIN_IPTABLES_RULES', value: m.iptablesRules }]);
  const rules = m.iptablesRules.split('\n');
  assert.ok(rules.includes('-A SKEIN_PROXY_OUTBOUND -p tcp --dport 5432 -j RETURN'));
  assert.ok(rules.includes('-A SKEIN_PROXY_OUTBOUND -d 169.254.169.254/32 -j RETURN'));
  // The ports kubelet now probes are not redirected to the inbound listener.
  for (const p of [15901, 15902, 15904])
    assert.ok(rules.includes(`-A SKEIN_PROXY_INBOUND -p tcp --dport ${p} -j RETURN`), String(p));
  assert.ok(
    !rules.includes('-A SKEIN_PROXY_INBOUND -p tcp --dport 15903 -j RETURN'),
    'no HTTP startup probe to serve',
  );

  assert.deepEqual(get(patched, 'spec', 'volumes'), [
    { name: 'skein-bootstrap', secret: { secretName: `skein-bootstrap-${UUID}` } },
  ]);

  // Probes: HTTP → the proxy's probe port and path; HTTPS → a TCP pass-through port; others unchanged.
  const app = named(containers, 'app');
  assert.deepEqual(get(app, 'livenessProbe'), {
    httpGet: {
      path: '/skein-probe/app/liveness',
      port: 15901,
      scheme: 'HTTP',
      httpHeaders: [{ name: 'X-Probe', value: '1' }],
    },
  });
  assert.deepEqual(get(app, 'readinessProbe'), { httpGet: { path: '/ready', port: 15904, scheme: 'HTTPS' } });
  // Classic: the startup probe goes through Envoy (a redirected tcpSocket), so it gets 60 s
  // worth of its periods more for Envoy's initialisation (startup-grace.ts): 3 + 6.
  assert.deepEqual(get(app, 'startupProbe'), { tcpSocket: { port: 8080 }, failureThreshold: 9 });
  const side = named(containers, 'side');
  assert.deepEqual(get(side, 'livenessProbe'), { exec: { command: ['true'] } });
  assert.deepEqual(get(side, 'readinessProbe'), {
    httpGet: { path: '/skein-probe/side/readiness', port: 15902, scheme: 'HTTP' },
  });
  assert.deepEqual(
    get(side, 'startupProbe'),
    { httpGet: { path: '/x', port: 9001, host: '10.0.0.9' } },
    'other host: left alone',
  );

  // The bootstrap serves exactly those probe paths and forwards them to the original port and path.
  const listeners = get(m.bootstrap, 'static_resources', 'listeners');
  const routes = (port: number): Json => {
    assert.ok(Array.isArray(listeners));
    const l = listeners.find((x) => get(x, 'address', 'socket_address', 'port_value') === port);
    return get(
      l,
      'filter_chains',
      0,
      'filters',
      0,
      'typed_config',
      'route_config',
      'virtual_hosts',
      0,
      'routes',
    );
  };
  assert.deepEqual(routes(15901), [
    {
      match: { path: '/skein-probe/app/liveness' },
      route: { cluster: 'skein-probe-local-8080', prefix_rewrite: '/healthz' },
    },
  ]);
  assert.deepEqual(routes(15902), [
    {
      match: { path: '/skein-probe/side/readiness' },
      route: { cluster: 'skein-probe-local-9000', prefix_rewrite: '/' },
    },
  ]);

  // The Secret: bootstrap, SDS files and credentials; node id is the proxy CN.
  assert.equal(m.secret.metadata.name, `skein-bootstrap-${UUID}`);
  assert.equal(m.secret.metadata.namespace, 'bookstore');
  // Labelled so strays can be found with kubectl (and the controller's collector names them by UUID).
  assert.deepEqual(m.secret.metadata.labels, {
    'skein.dev/proxy-uuid': UUID,
    'app.kubernetes.io/managed-by': 'skein',
    'skein.dev/mesh': 'skein',
  });
  const data = m.secret.stringData;
  assert.deepEqual(Object.keys(data).sort(), [
    'ads-ca-sds.json',
    'ads-cert-sds.json',
    'bootstrap.json',
    'ca.crt',
    'tls.crt',
    'tls.key',
  ]);
  assert.deepEqual([data['tls.crt'], data['tls.key'], data['ca.crt']], ['CERT', 'KEY', 'CA']);
  assert.deepEqual(JSON.parse(data['bootstrap.json'] ?? ''), m.bootstrap);
  assert.equal(m.commonName, `${UUID}.sidecar.bookstore.bookstore.cluster.local`);
  assert.equal(get(m.bootstrap, 'node', 'id'), m.commonName);
  assert.deepEqual(parseProxyCommonName(m.commonName).serviceAccount, 'bookstore');

  // Idempotent: the patched pod is recognised as injected.
  const again = decide(readPod(patched), meshed('enabled'), MESH);
  assert.deepEqual(again, { inject: false, reason: 'pod already has a sidecar' });
});

test('mutate: a pod without labels, volumes or init containers gets the arrays and map created', () => {
  const raw = podJson({
    labels: false,
    spec: { initContainers: null, containers: [{ name: 'app', image: 'a' }] },
  });
  const meta = raw['metadata'];
  if (isJsonObject(meta)) delete meta['annotations'];
  const m = mutate(readPod(raw), options);
  const patched = applyPatch(raw, m.patch);
  assert.deepEqual(get(patched, 'metadata', 'labels'), { 'skein.dev/proxy-uuid': UUID });
  assert.deepEqual(get(patched, 'metadata', 'annotations'), {
    'skein.dev/interception': JSON.stringify({ outboundPorts: [], inboundPorts: [], outboundIpRanges: [] }),
  });
  const inits = get(patched, 'spec', 'initContainers');
  assert.ok(Array.isArray(inits));
  assert.deepEqual(
    inits.map((c) => get(c, 'name')),
    ['skein-init'],
  );
  assert.equal(m.patch.filter((op) => op.op === 'replace').length, 0, 'no probes to rewrite');
  // Without app probes, the proxy serves only Prometheus and its own readiness inbound.
  assert.deepEqual(
    m.iptablesRules.split('\n').filter((l) => l.startsWith('-A SKEIN_PROXY_INBOUND') && l.endsWith('RETURN')),
    [
      '-A SKEIN_PROXY_INBOUND -p tcp --dport 15010 -j RETURN',
      '-A SKEIN_PROXY_INBOUND -p tcp --dport 15900 -j RETURN',
    ],
  );
});

test("mutate: the mesh's interception lists are merged with the pod's annotations into the init rules", () => {
  const raw = podJson({
    annotations: {
      'skein.dev/outbound-port-exclusion-list': '6379',
      'skein.dev/outbound-ip-range-inclusion-list': '10.244.0.0/16',
    },
  });
  const m = mutate(readPod(raw), {
    ...options,
    meshExclusions: parseMeshExclusions({
      outboundIPRangeExclusionList: ['169.254.169.254/32'],
      outboundIPRangeInclusionList: ['10.96.0.0/12'],
      outboundPortExclusionList: [5432],
      inboundPortExclusionList: [8443],
    }),
  });
  assert.deepEqual(m.exclusions, {
    outboundPorts: [5432, 6379],
    inboundPorts: [8443],
    outboundIpRanges: ['169.254.169.254/32'],
    outboundIpRangeInclusions: ['10.244.0.0/16'],
  });
  const init = named(get(applyPatch(raw, m.patch), 'spec', 'initContainers'), 'skein-init');
  const rules = String(get(init, 'env', 0, 'value')).split('\n');
  for (const rule of [
    '-A SKEIN_PROXY_OUTBOUND -p tcp --dport 5432 -j RETURN',
    '-A SKEIN_PROXY_OUTBOUND -p tcp --dport 6379 -j RETURN',
    '-A SKEIN_PROXY_OUTBOUND -d 169.254.169.254/32 -j RETURN',
    '-A SKEIN_PROXY_INBOUND -p tcp --dport 8443 -j RETURN',
    // The pod's inclusion list replaced the mesh's 10.96.0.0/12.
    '-A SKEIN_PROXY_OUTBOUND -p tcp -d 10.244.0.0/16 -j SKEIN_PROXY_REDIRECT',
  ])
    assert.ok(rules.includes(rule), rule);
  assert.ok(!rules.some((l) => l.includes('10.96.0.0/12')), rules.join('\n'));
  // The pod records what its rules came from (stale-rules.ts compares it later).
  assert.deepEqual(
    JSON.parse(String(get(applyPatch(raw, m.patch), 'metadata', 'annotations', 'skein.dev/interception'))),
    m.exclusions,
  );
  // Without mesh lists, the pod's annotations alone.
  const alone = mutate(readPod(raw), options);
  assert.deepEqual(alone.exclusions, {
    outboundPorts: [6379],
    inboundPorts: [],
    outboundIpRanges: [],
    outboundIpRangeInclusions: ['10.244.0.0/16'],
  });
});

/** The names of `spec.<list>` in a patched pod. */
function namesOf(patched: Json, list: 'containers' | 'initContainers'): Json[] {
  const items = get(patched, 'spec', list);
  assert.ok(Array.isArray(items));
  return items.map((c) => get(c, 'name'));
}

test('mutate, native layout: Envoy is an init container after skein-init, restartPolicy Always, probed on 15900', () => {
  const raw = podJson();
  const native = mutate(readPod(raw), {
    ...options,
    nativeSidecars: true,
    envoyResources: { limits: { cpu: '1' } },
  });
  const classic = mutate(readPod(raw), options);
  assert.equal(native.layout, 'native');
  assert.equal(classic.layout, 'classic');
  const patched = applyPatch(raw, native.patch);
  // KEP-753: init containers start in order, so the rules exist before Envoy, and Envoy before the app.
  assert.deepEqual(namesOf(patched, 'initContainers'), ['migrate', 'skein-init', 'envoy']);
  assert.deepEqual(namesOf(patched, 'containers'), ['app', 'side'], 'no envoy among the containers');
  const inits = get(patched, 'spec', 'initContainers');
  const envoy = named(inits, 'envoy');
  assert.equal(envoy['restartPolicy'], 'Always');
  const ready = { path: '/skein-probe/envoy/ready', port: 15900, scheme: 'HTTP' };
  assert.deepEqual(envoy['startupProbe'], {
    httpGet: ready,
    periodSeconds: 1,
    timeoutSeconds: 1,
    failureThreshold: 120,
  });
  assert.deepEqual(envoy['readinessProbe'], {
    httpGet: ready,
    periodSeconds: 2,
    timeoutSeconds: 1,
    failureThreshold: 3,
  });
  assert.equal(envoy['livenessProbe'], undefined, 'a controller outage must not restart Envoy');
  assert.equal(envoy['lifecycle'], undefined, 'no preStop: kubelet stops Envoy after the app');
  // Otherwise the same container as the classic layout's, readiness probe included: either
  // layout's pod is Ready only while Envoy is LIVE.
  const classicEnvoy = named(get(applyPatch(raw, classic.patch), 'spec', 'containers'), 'envoy');
  const { restartPolicy, startupProbe, ...rest } = envoy;
  assert.deepEqual(rest, { ...classicEnvoy, resources: { limits: { cpu: '1' } } });
  assert.equal(
    (classicEnvoy as Record<string, unknown>)['startupProbe'],
    undefined,
    'classic: nothing waits on Envoy to start',
  );
  // The app's probes are rewritten exactly as in the classic layout (same container indexes);
  // only classic pods get a startup budget for Envoy's initialisation (startup-grace.ts).
  const handlerRewrites = (m: typeof native) =>
    m.patch.filter((op) => op.op === 'replace' && !op.path.endsWith('/startupProbe'));
  assert.deepEqual(handlerRewrites(native), handlerRewrites(classic));
  assert.ok(handlerRewrites(native).length > 0);
  assert.deepEqual(
    native.patch.filter((op) => op.path.endsWith('/startupProbe')),
    [],
    'native: the app starts after Envoy is LIVE, so its probes need no grace',
  );
  assert.equal(classic.patch.filter((op) => op.path.endsWith('/startupProbe')).length, 1);
  // Kubelet reaches 15900 from the node: exempt from inbound interception, served by the bootstrap,
  // in either layout (the same rules and bootstrap).
  assert.equal(native.iptablesRules, classic.iptablesRules);
  assert.ok(native.iptablesRules.includes('-A SKEIN_PROXY_INBOUND -p tcp --dport 15900 -j RETURN'));
  assert.deepEqual(native.bootstrap, classic.bootstrap);
  const listeners = get(native.bootstrap, 'static_resources', 'listeners');
  assert.equal(get(named(listeners, 'skein-envoy-ready'), 'address', 'socket_address', 'port_value'), 15900);
  assert.deepEqual(JSON.parse(native.secret.stringData['bootstrap.json'] ?? ''), native.bootstrap);
  // Idempotent: Envoy as an init container marks the pod as injected too.
  assert.deepEqual(decide(readPod(patched), meshed('enabled'), MESH), {
    inject: false,
    reason: 'pod already has a sidecar',
  });
  const bare = readPod(podJson({ spec: { initContainers: [{ name: 'envoy', image: 'x' }] } }));
  assert.equal(decide(bare, meshed('enabled'), MESH).inject, false);
});

test('mutate, native layout: a pod without init containers gets the array with skein-init then envoy', () => {
  const raw = podJson({ spec: { initContainers: null, containers: [{ name: 'app', image: 'a' }] } });
  const m = mutate(readPod(raw), { ...options, nativeSidecars: true });
  const patched = applyPatch(raw, m.patch);
  assert.deepEqual(namesOf(patched, 'initContainers'), ['skein-init', 'envoy']);
  assert.deepEqual(namesOf(patched, 'containers'), ['app']);
  // No app probes: the proxy serves Prometheus and its own readiness, nothing else.
  assert.deepEqual(
    m.iptablesRules.split('\n').filter((l) => l.startsWith('-A SKEIN_PROXY_INBOUND') && l.endsWith('RETURN')),
    [
      '-A SKEIN_PROXY_INBOUND -p tcp --dport 15010 -j RETURN',
      '-A SKEIN_PROXY_INBOUND -p tcp --dport 15900 -j RETURN',
    ],
  );
  // skein.dev/envoy-image applies to the init container.
  const canary = podJson({ annotations: { 'skein.dev/envoy-image': 'envoyproxy/envoy:v1.36.2' } });
  const inits = get(
    applyPatch(canary, mutate(readPod(canary), { ...options, nativeSidecars: true }).patch),
    'spec',
    'initContainers',
  );
  assert.equal(named(inits, 'envoy')['image'], 'envoyproxy/envoy:v1.36.2');
});

test('mutate: skein.dev/native-sidecar wins over the default; classic is the same patch whichever way it was chosen', () => {
  const patchOf = (annotations: Record<string, string>, nativeSidecars?: boolean) =>
    mutate(readPod(podJson({ annotations })), {
      ...options,
      ...(nativeSidecars !== undefined ? { nativeSidecars } : {}),
    });
  const classic = patchOf({});
  assert.equal(classic.layout, 'classic', 'classic unless asked for');
  assert.deepEqual(patchOf({}, false), classic);
  assert.deepEqual(patchOf({ 'skein.dev/native-sidecar': 'false' }, true).patch, classic.patch);
  assert.deepEqual(patchOf({ 'skein.dev/native-sidecar': 'false' }, true).secret, classic.secret);
  const native = patchOf({ 'skein.dev/native-sidecar': 'true' }, false);
  assert.equal(native.layout, 'native');
  assert.deepEqual(native.patch, patchOf({ 'skein.dev/native-sidecar': 'true' }, true).patch);
  for (const bad of ['yes', 'True', '1', '']) {
    const pod = readPod(podJson({ annotations: { 'skein.dev/native-sidecar': bad } }));
    const message = `annotation skein.dev/native-sidecar on pod bookstore-<generated> is ${JSON.stringify(bad)}; use "true" or "false"`;
    // checkPod is what the webhook calls before issuing a certificate.
    assert.throws(() => checkPod(pod), { name: 'InjectionError', message });
    assert.throws(() => mutate(pod, { ...options, nativeSidecars: true }), {
      name: 'InjectionError',
      message,
    });
  }
});

test('mutate: invalid annotations and unresolvable probe ports are InjectionErrors naming the culprit', () => {
  const bad = podJson({ annotations: { 'skein.dev/inbound-port-exclusion-list': '80,99999' } });
  assert.throws(() => mutate(readPod(bad), options), {
    name: 'InjectionError',
    message: /skein.dev\/inbound-port-exclusion-list: "99999" is not a port in 1-65535/,
  });
  const badProbe = podJson({
    spec: { containers: [{ name: 'app', livenessProbe: { httpGet: { path: '/', port: 'metrics' } } }] },
  });
  assert.throws(() => mutate(readPod(badProbe), options), {
    name: 'InjectionError',
    message: /container app livenessProbe port "metrics" is neither a port number nor a named port/,
  });
});

test("mutate: skein.dev/envoy-image picks the pod's Envoy image; a malformed one is an InjectionError", () => {
  const canary = podJson({ annotations: { 'skein.dev/envoy-image': 'envoyproxy/envoy:v1.36.2' } });
  const patched = applyPatch(canary, mutate(readPod(canary), options).patch);
  const containers = get(patched, 'spec', 'containers');
  assert.ok(Array.isArray(containers));
  assert.equal(named(containers, 'envoy')['image'], 'envoyproxy/envoy:v1.36.2');
  const bad = podJson({ annotations: { 'skein.dev/envoy-image': 'envoy proxy' } });
  assert.throws(() => mutate(readPod(bad), options), {
    name: 'InjectionError',
    message: /annotation skein.dev\/envoy-image on pod .* is "envoy proxy", not an image reference/,
  });
});

test('mutate: the xDS transport and connection limit come from the mesh, and a pod annotation wins', () => {
  const bootstrapOf = (annotations: Record<string, string>, sidecar?: MutateOptions['sidecar']): Json => {
    const m = mutate(readPod(podJson({ annotations })), { ...options, ...(sidecar ? { sidecar } : {}) });
    // What Envoy reads is the Secret's copy.
    assert.deepEqual(JSON.parse(m.secret.stringData['bootstrap.json'] ?? ''), m.bootstrap);
    return m.bootstrap;
  };
  const settingsOf = (b: Json): [Json, Json] => [
    get(b, 'dynamic_resources', 'ads_config', 'api_type'),
    get(b, 'overload_manager', 'resource_monitors', 0, 'typed_config', 'max_active_downstream_connections'),
  ];
  assert.deepEqual(settingsOf(bootstrapOf({})), ['GRPC', 50_000], 'defaults without MeshConfig settings');
  const mesh = { xdsTransport: 'delta', maxDownstreamConnections: 8000, logLevel: 'warn' } as const;
  assert.deepEqual(settingsOf(bootstrapOf({}, mesh)), ['DELTA_GRPC', 8000], 'the mesh-wide settings');
  assert.deepEqual(
    settingsOf(
      bootstrapOf({ 'skein.dev/xds-transport': 'sotw', 'skein.dev/max-downstream-connections': '250' }, mesh),
    ),
    ['GRPC', 250],
    'both annotations override the mesh',
  );
  assert.deepEqual(
    settingsOf(bootstrapOf({ 'skein.dev/max-downstream-connections': '2147483647' }, mesh)),
    ['DELTA_GRPC', 2147483647],
    'one annotation overrides only its setting',
  );
  assert.deepEqual(
    mutate(readPod(podJson({ annotations: { 'skein.dev/xds-transport': 'delta' } })), options).sidecar,
    { xdsTransport: 'delta', maxDownstreamConnections: 50_000, logLevel: 'warn' },
  );
});

test("mutate: Envoy's --log-level is the mesh's spec.sidecar.logLevel at admission (default warn)", () => {
  const argsOf = (sidecar?: MutateOptions['sidecar']): Json => {
    const raw = podJson();
    const m = mutate(readPod(raw), { ...options, ...(sidecar ? { sidecar } : {}) });
    const containers = get(applyPatch(raw, m.patch), 'spec', 'containers');
    assert.ok(Array.isArray(containers));
    return get(named(containers, 'envoy'), 'args');
  };
  assert.deepEqual(argsOf(), ['--config-path', '/etc/skein/bootstrap.json', '--log-level', 'warn']);
  for (const logLevel of ['debug', 'critical', 'off'] as const)
    assert.deepEqual(argsOf({ ...DEFAULT_SIDECAR_SETTINGS, logLevel }), [
      '--config-path',
      '/etc/skein/bootstrap.json',
      '--log-level',
      logLevel,
    ]);
});

test('mutate: a malformed transport or connection-limit annotation refuses the pod, saying what to write', () => {
  /** The InjectionError message for these annotations, the same from checkPod and mutate. */
  const refusal = (annotations: Record<string, string>): string => {
    const pod = readPod(podJson({ annotations }));
    const messages: string[] = [];
    // checkPod is what the webhook calls before issuing a certificate.
    for (const run of [() => checkPod(pod), () => mutate(pod, options)]) {
      try {
        run();
        assert.fail(`accepted ${JSON.stringify(annotations)}`);
      } catch (err) {
        assert.ok(err instanceof InjectionError, String(err));
        messages.push(err.message);
      }
    }
    assert.equal(messages[0], messages[1]);
    return messages[0] ?? '';
  };
  assert.equal(
    refusal({ 'skein.dev/xds-transport': 'DELTA' }),
    'annotation skein.dev/xds-transport on pod bookstore-<generated> is "DELTA"; use "sotw" or "delta"',
  );
  for (const bad of ['0', '-5', '1e3', '0x10', ' 5', '12.5', '', '2147483648', '99999999999'])
    assert.equal(
      refusal({ 'skein.dev/max-downstream-connections': bad }),
      `annotation skein.dev/max-downstream-connections on pod bookstore-<generated> is ${JSON.stringify(bad)}; use a whole number from 1 to 2147483647`,
    );
});

test('readPod rejects what is not a pod, clearly', () => {
  assert.throws(() => readPod('nope'), /not a Pod object/);
  assert.throws(() => readPod({ kind: 'Service', metadata: {}, spec: {} }), /is a Service, not a Pod/);
  assert.throws(
    () => readPod({ kind: 'Pod', metadata: { namespace: 'a' }, spec: { containers: [] } }),
    /no containers/,
  );
  assert.throws(
    () => readPod({ kind: 'Pod', metadata: {}, spec: { containers: [{ name: 'a' }] } }),
    /no namespace/,
  );
  assert.throws(
    () =>
      readPod({ kind: 'Pod', metadata: { labels: { a: 1 } }, spec: { containers: [{ name: 'a' }] } }, 'ns'),
    /metadata.labels\["a"\] is not a string/,
  );
});

test('JSON Pointer tokens escape ~ before /', () => {
  assert.equal(escapePointerToken('skein.dev/proxy-uuid'), 'skein.dev~1proxy-uuid');
  assert.equal(escapePointerToken('a~/b'), 'a~0~1b');
  assert.equal(pointer('metadata', 'annotations', 'x/~y'), '/metadata/annotations/x~1~0y');
  // Round trip through the applier's unescaping.
  const doc = applyPatch({ m: {} }, [{ op: 'add', path: pointer('m', 'a~1/b'), value: 1 }]);
  assert.deepEqual(doc, { m: { 'a~1/b': 1 } });
});
