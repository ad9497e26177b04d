import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type JsonObject, readPod } from './pod.js';
import { planProbes } from './probes.js';
import { PROXY_INIT_GRACE_S, planStartupGrace } from './startup-grace.js';

function plan(containers: JsonObject[]) {
  const pod = readPod(
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p', namespace: 'ns' },
      spec: { serviceAccountName: 'sa', containers },
    },
    'ns',
  );
  return planStartupGrace(pod, planProbes(pod));
}

test('a proxied liveness probe without a startupProbe gets one: the rewritten check, every second, for the grace plus its own budget', () => {
  const grace = plan([
    {
      name: 'app',
      ports: [{ name: 'http', containerPort: 8080 }],
      livenessProbe: {
        httpGet: { path: '/healthz', port: 'http', httpHeaders: [{ name: 'X', value: '1' }] },
        initialDelaySeconds: 4,
        timeoutSeconds: 2,
        periodSeconds: 2,
        failureThreshold: 3,
        successThreshold: 1,
      },
    },
  ]);
  assert.deepEqual(grace, [
    {
      container: 0,
      op: 'add',
      probe: {
        httpGet: {
          path: '/skein-probe/app/liveness',
          port: 15901,
          scheme: 'HTTP',
          httpHeaders: [{ name: 'X', value: '1' }],
        },
        initialDelaySeconds: 4,
        timeoutSeconds: 2,
        periodSeconds: 1,
        failureThreshold: PROXY_INIT_GRACE_S + 6,
      },
    },
  ]);
});

test('kubelet defaults count when the liveness probe leaves them out; gRPC and tcpSocket probes go through the proxy too', () => {
  const grace = plan([
    { name: 'grpc', livenessProbe: { grpc: { port: 9090 } } },
    { name: 'tcp', livenessProbe: { tcpSocket: { port: 7070 } } },
  ]);
  assert.deepEqual(
    grace.map((g) => [g.container, g.op, g.probe]),
    [
      [0, 'add', { grpc: { port: 15904 }, periodSeconds: 1, failureThreshold: PROXY_INIT_GRACE_S + 30 }],
      [1, 'add', { tcpSocket: { port: 7070 }, periodSeconds: 1, failureThreshold: PROXY_INIT_GRACE_S + 30 }],
    ],
  );
});

test('a proxied startupProbe keeps its check and period, with the grace added to its threshold', () => {
  const grace = plan([
    {
      name: 'app',
      livenessProbe: { httpGet: { path: '/live', port: 8080 } },
      startupProbe: { httpGet: { path: '/started', port: 8080 }, periodSeconds: 7, failureThreshold: 2 },
    },
  ]);
  assert.deepEqual(grace, [
    {
      container: 0,
      op: 'replace',
      probe: {
        httpGet: { path: '/skein-probe/app/startup', port: 15903, scheme: 'HTTP' },
        periodSeconds: 7,
        failureThreshold: 2 + Math.ceil(PROXY_INIT_GRACE_S / 7),
      },
    },
  ]);
});

test('probes that never reach the proxy get nothing: exec, another host, none at all; an exec startupProbe is the user’s own gate and stays', () => {
  assert.deepEqual(
    plan([
      { name: 'exec', livenessProbe: { exec: { command: ['true'] } } },
      { name: 'remote', livenessProbe: { httpGet: { host: '10.0.0.9', port: 80 } } },
      { name: 'none' },
      {
        name: 'gated',
        startupProbe: { exec: { command: ['true'] } },
        livenessProbe: { httpGet: { port: 8080 } },
      },
    ]),
    [],
  );
});
