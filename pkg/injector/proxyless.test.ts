import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyPatch } from '../../test/support/injector/apply-patch.js';
import { get, named } from '../../test/support/injector/json-path.js';
import { InjectionError } from './errors.js';
import { decide, type MutateOptions } from './mutate.js';
import type { Json, JsonObject } from './pod.js';
import { readPod } from './pod.js';
import { GRPC_BOOTSTRAP_PATH, isProxyless, mutateProxyless } from './proxyless.js';

const UUID = '6c1e2b8a-4f0d-4d9e-8a51-0f3b2c7d9e11';
const CN = `${UUID}.grpc.buyer.shop.cluster.local`;
const OPTIONS: MutateOptions = {
  meshName: 'skein',
  trustDomain: 'cluster.local',
  controlPlaneNamespace: 'skein-system',
  images: { envoy: 'envoyproxy/envoy:v1.40.0', init: 'skein/init:v0.1.0', agent: 'skein/controller:v0.1.0' },
  proxyUuid: UUID,
  certificate: { certPem: 'CERT', keyPem: 'KEY', caPem: 'CA' },
};

function podJson(annotations: Record<string, string> = { 'skein.dev/proxyless': 'true' }): JsonObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'buyer-1', namespace: 'shop', annotations },
    spec: {
      serviceAccountName: 'buyer',
      containers: [
        // One with env and mounts of its own, one with neither: both get the mounts and the env var.
        {
          name: 'app',
          image: 'buyer:v1',
          env: [{ name: 'GRPC_XDS_BOOTSTRAP', value: '/mine.json' }],
          volumeMounts: [{ name: 'data', mountPath: '/data' }],
        },
        { name: 'helper', image: 'helper:v1' },
      ],
      volumes: [{ name: 'data', emptyDir: {} }],
    },
  };
}

const SECRET_MOUNT = { name: 'skein-bootstrap', mountPath: '/etc/skein', readOnly: true };
const RUN_MOUNT = { name: 'skein-agent', mountPath: '/var/run/skein' };
const ENV = { name: 'GRPC_XDS_BOOTSTRAP', value: GRPC_BOOTSTRAP_PATH };

test('a proxyless pod gets the agent, the two volumes, and GRPC_XDS_BOOTSTRAP in every app container', () => {
  const pod = podJson();
  const m = mutateProxyless(readPod(pod), OPTIONS);
  assert.equal(m.layout, 'classic');
  assert.equal(m.commonName, CN);
  const patched = applyPatch(pod, m.patch);
  assert.equal(get(patched, 'metadata', 'labels', 'skein.dev/proxy-uuid'), UUID);
  assert.deepEqual(get(patched, 'spec', 'volumes'), [
    { name: 'data', emptyDir: {} },
    { name: 'skein-bootstrap', secret: { secretName: `skein-bootstrap-${UUID}` } },
    { name: 'skein-agent', emptyDir: { medium: 'Memory' } },
  ]);
  const containers = get(patched, 'spec', 'containers');
  assert.deepEqual(get(containers, 0, 'volumeMounts'), [
    { name: 'data', mountPath: '/data' },
    SECRET_MOUNT,
    RUN_MOUNT,
  ]);
  assert.deepEqual(get(containers, 1, 'volumeMounts'), [SECRET_MOUNT, RUN_MOUNT]);
  // The injected value comes last, so it wins over the pod's own (Kubernetes keeps the last of a name).
  assert.deepEqual(get(containers, 0, 'env'), [{ name: 'GRPC_XDS_BOOTSTRAP', value: '/mine.json' }, ENV]);
  assert.deepEqual(get(containers, 1, 'env'), [ENV]);
  const agent = named(containers, 'skein-agent');
  assert.equal(agent['image'], 'skein/controller:v0.1.0');
  assert.deepEqual(agent['args'], [
    '--controller',
    'skein-controller.skein-system.svc.cluster.local:15128',
    '--listen',
    'unix:/var/run/skein/ads.sock',
  ]);
  assert.equal(get(agent, 'securityContext', 'runAsNonRoot'), true);
  assert.equal(agent['restartPolicy'], undefined);
  // No Envoy, no iptables: nothing intercepts a proxyless pod's traffic.
  assert.ok(!('initContainers' in (get(patched, 'spec') as JsonObject)));

  const bootstrap: Json = JSON.parse(m.secret.stringData['grpc-bootstrap.json'] ?? '');
  assert.equal(get(bootstrap, 'node', 'id'), CN);
  assert.deepEqual(get(bootstrap, 'xds_servers', 0, 'server_uri'), 'unix:/var/run/skein/ads.sock');
  assert.deepEqual(
    get(bootstrap, 'certificate_providers', 'default', 'config', 'certificate_file'),
    '/etc/skein/tls.crt',
  );
  assert.deepEqual(Object.keys(m.secret.stringData).sort(), [
    'ca.crt',
    'grpc-bootstrap.json',
    'tls.crt',
    'tls.key',
  ]);
});

test('native layout: the agent is a sidecar init container (KEP-753) started before the app', () => {
  const pod = podJson();
  const m = mutateProxyless(readPod(pod), { ...OPTIONS, nativeSidecars: true });
  const patched = applyPatch(pod, m.patch);
  const init = get(patched, 'spec', 'initContainers');
  assert.equal(get(init, 0, 'name'), 'skein-agent');
  assert.equal(get(init, 0, 'restartPolicy'), 'Always');
  assert.equal(named(get(patched, 'spec', 'containers'), 'app')['name'], 'app');
  assert.equal((get(patched, 'spec', 'containers') as Json[]).length, 2);
});

test('the annotation takes "true" or "false" only; no agent image is an admission error', () => {
  assert.equal(isProxyless(readPod(podJson({}))), false);
  assert.equal(isProxyless(readPod(podJson({ 'skein.dev/proxyless': 'false' }))), false);
  assert.throws(
    () => isProxyless(readPod(podJson({ 'skein.dev/proxyless': 'yes' }))),
    (e: unknown) => e instanceof InjectionError && /skein\.dev\/proxyless/.test(e.message),
  );
  assert.throws(
    () => mutateProxyless(readPod(podJson()), { ...OPTIONS, images: { envoy: 'e', init: 'i' } }),
    /agent image/,
  );
});

test('a pod the webhook already gave an agent is not injected again', () => {
  const pod = podJson();
  const patched = applyPatch(pod, mutateProxyless(readPod(pod), OPTIONS).patch);
  const namespace = {
    metadata: {
      name: 'shop',
      labels: { 'skein.dev/monitored-by': 'skein' },
      annotations: { 'skein.dev/sidecar-injection': 'enabled' },
    },
  };
  const mesh = { meshName: 'skein', controlPlaneNamespace: 'skein-system' };
  assert.deepEqual(decide(readPod(pod), namespace, mesh), { inject: true });
  assert.deepEqual(decide(readPod(patched), namespace, mesh), {
    inject: false,
    reason: 'pod already has a sidecar',
  });
});
